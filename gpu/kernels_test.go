package gpu

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// Checks of the kernels (kernelSource, joined from kernelFiles) that need no
// GPU: every kernel file is joined; every kernel the Go side launches is
// defined; the source compiles as CUDA (clang, when installed); and the
// dequantizers, built for the host, equal compute.Dequantize bit for bit.

// launched lists every kernel name forward.go and swap.go can launch.
func launched() []string {
	names := []string{"quantize_act", "rms_norm", "add_bias", "add", "silu_mul", "rope", "kv_store", "attention", "argmax"}
	for typ, suffix := range kernelTypes {
		names = append(names, matmulKernel(typ), "get_rows_"+suffix)
	}
	return names
}

// TestKernelFiles checks that kernelFiles names every kernels_*.cu here,
// each once, so no file is left out of kernelSource.
func TestKernelFiles(t *testing.T) {
	found, err := filepath.Glob("kernels_*.cu")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(found, slices.Sorted(slices.Values(kernelFiles))) {
		t.Errorf("kernelFiles %v, want each of %v once", kernelFiles, found)
	}
}

func TestKernelNames(t *testing.T) {
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`extern "C" __global__ void (\w+)\(`).FindAllStringSubmatch(kernelSource, -1) {
		defined[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^DEFINE_(MMV|MMVQ_LANES|MMVQ_SEQ|GET_ROWS)\((\w+)`).FindAllStringSubmatch(kernelSource, -1) {
		prefix := map[string]string{"MMV": "mmv_", "MMVQ_LANES": "mmvq_", "MMVQ_SEQ": "mmvq_", "GET_ROWS": "get_rows_"}[m[1]]
		defined[prefix+m[2]] = true
	}
	for _, name := range launched() {
		if !defined[name] {
			t.Errorf("kernel %s is launched but not defined in %v", name, kernelFiles)
		}
	}
}

// findTool returns the first of names on the PATH. Without one the test
// fails under CI (make testdata installs clang) and is skipped elsewhere.
func findTool(t *testing.T, why string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("none of %v installed (scripts/testdata-clang.sh installs clang): %s", names, why)
	}
	t.Skipf("none of %v installed: %s", names, why)
	return ""
}

// TestKernelsCompile compiles kernelSource for sm_80 with clang's CUDA front
// end (no CUDA toolkit: the source includes no CUDA header) and checks that
// every launched kernel is emitted. NVRTC compiles the same source at run
// time; this catches syntax and type errors on machines without a GPU.
func TestKernelsCompile(t *testing.T) {
	clang := findTool(t, "the CUDA source is then only compiled by NVRTC on a GPU machine", "clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14")
	dir := t.TempDir()
	src, out := filepath.Join(dir, "kernels.cu"), filepath.Join(dir, "kernels.ll")
	if err := os.WriteFile(src, []byte(kernelSource), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib",
		"-S", "-emit-llvm", "-O2", "-Wall", "-Werror", "-Wno-unknown-cuda-version", "-o", out, src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, msg)
	}
	ir, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range launched() {
		if !bytes.Contains(ir, []byte("@"+name+"(")) {
			t.Errorf("kernel %s not in clang's output", name)
		}
	}
}

// TestDequantHost builds kernels_dequant.cu's dequantizers for the host (the
// testdata harness) and checks every type against compute.Dequantize on
// random rows, bit for bit (no contraction to FMA on either side).
func TestDequantHost(t *testing.T) {
	cxx := findTool(t, "the device dequantizers are then checked only on a GPU", "c++", "g++", "clang++", "clang++-14")
	bin := filepath.Join(t.TempDir(), "dequant_host")
	cmd := exec.Command(cxx, "-O1", "-ffp-contract=off", "-o", bin, filepath.Join("testdata", "dequant_host.cc"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, msg)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	types := make([]compute.DType, 0, len(kernelTypes))
	for typ := range kernelTypes {
		types = append(types, typ)
	}
	slices.Sort(types)
	const k = 512
	for _, typ := range types {
		t.Run(typ.String(), func(t *testing.T) {
			for range 4 {
				row := randomRow(rng, typ, k)
				want := make([]float32, k)
				if err := compute.Dequantize(typ, row, want); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(bin, typ.String(), "512")
				cmd.Stdin = bytes.NewReader(row)
				raw, err := cmd.Output()
				if err != nil {
					t.Fatalf("harness: %v", err)
				}
				if len(raw) != 4*k {
					t.Fatalf("harness wrote %d bytes, want %d", len(raw), 4*k)
				}
				for i := range want {
					got := math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
					if math.Float32bits(got) != math.Float32bits(want[i]) {
						t.Fatalf("value %d (group %d): kernel %v, compute.Dequantize %v", i, i/32, got, want[i])
					}
				}
			}
		})
	}
}

// halfFields lists the byte offsets of float16 fields in a block of each
// type; randomRow keeps them finite so NaN payloads do not matter.
var halfFields = map[compute.DType][]int{
	compute.Q4_0: {0}, compute.Q4_1: {0, 2}, compute.Q5_0: {0}, compute.Q5_1: {0, 2}, compute.Q8_0: {0},
	compute.Q2_K: {80, 82}, compute.Q3_K: {108}, compute.Q4_K: {0, 2}, compute.Q5_K: {0, 2}, compute.Q6_K: {208},
}

// randomRow is k values of typ with random bytes and finite scales.
func randomRow(rng *rand.Rand, typ compute.DType, k int) []byte {
	n := k / typ.BlockSize() * typ.TypeSize()
	row := make([]byte, n)
	for i := range row {
		row[i] = byte(rng.Uint32())
	}
	put16 := func(off int, h uint16) { row[off], row[off+1] = byte(h), byte(h>>8) }
	switch typ {
	case compute.F32:
		for i := 0; i < n; i += 4 {
			b := math.Float32bits(float32(rng.NormFloat64()))
			row[i], row[i+1], row[i+2], row[i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
		}
	case compute.F16:
		for i := 0; i < n; i += 2 {
			put16(i, compute.FP32ToFP16(float32(rng.NormFloat64())))
		}
	case compute.BF16:
		for i := 0; i < n; i += 2 {
			put16(i, compute.FP32ToBF16(float32(rng.NormFloat64())))
		}
	default:
		for b := 0; b < n; b += typ.TypeSize() {
			for _, off := range halfFields[typ] {
				put16(b+off, compute.FP32ToFP16(float32(rng.NormFloat64()*0.01)))
			}
		}
	}
	return row
}
