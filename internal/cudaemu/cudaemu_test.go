package cudaemu_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// These tests check the emulator itself, through gpu/cuda, on every
// machine (TROUPE_CUDA_EMU=1 unless set otherwise): its primitives, its
// barriers and shuffles, that it fails launches that break the rules of
// warp-wide operations, graph capture, and the driver's argument checks.

var setupErr error

func TestMain(m *testing.M) {
	if os.Getenv(cudaemu.EnvEmu) == "" {
		os.Setenv(cudaemu.EnvEmu, "1")
	}
	var active bool
	active, setupErr = cudaemu.Setup()
	if setupErr == nil && !active {
		setupErr = errors.New(cudaemu.EnvEmu + "=0")
	}
	m.Run()
}

// src is CUDA C over gpu's kernels' primitives (f2h, shfl_bfly, ...), which
// emu.h provides.
const src = `
extern "C" __global__ void halves(const float* in, unsigned short* out, float* back, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] = f2h(in[i]);
	if (i < 65536) back[i] = h2f((unsigned short)i);
}
// block_sum: each block (a 2D shape) sums its values through shared memory,
// then warp 0 finishes with a butterfly.
extern "C" __global__ void block_sum(const float* in, float* out) {
	__shared__ float part[1024];
	int t = threadIdx.x + threadIdx.y * blockDim.x, n = blockDim.x * blockDim.y;
	part[t] = in[blockIdx.x * n + t];
	sync_threads();
	for (int s = n / 2; s >= 32; s >>= 1) {
		if (t < s) part[t] += part[t + s];
		sync_threads();
	}
	if (t < 32) {
		float v = part[t];
		for (int o = 16; o > 0; o >>= 1) v += shfl_bfly(v, o);
		if (t == 0) out[blockIdx.x] = v;
	}
}
extern "C" __global__ void rotate(const float* in, float* out, int* outi) {
	int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
	out[i] = shfl_idx(in[i], lane + 1);
	outi[i] = shfl_idx_i(i, 31 - lane);
}
extern "C" __global__ void axpb(float* y, float a, float b, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * y[i] + b;
}
// Broken kernels: each breaks a rule of warp-wide operations.
extern "C" __global__ void diverge(float* out) {
	float v = threadIdx.x;
	if (threadIdx.x < 16) v = shfl_bfly(v, 1); else sync_warp();
	out[threadIdx.x] = v;
}
extern "C" __global__ void early_exit(float* out) {
	if (threadIdx.x >= 16) return;
	out[threadIdx.x] = shfl_bfly((float)threadIdx.x, 1);
}
extern "C" __global__ void deadlock(float* out) {
	if (threadIdx.x == 0) sync_threads(); else sync_warp();
	out[threadIdx.x] = 1;
}
`

type env struct {
	t   *testing.T
	dev *cuda.Device
	mod *cuda.Module
}

func open(t *testing.T) *env {
	t.Helper()
	if setupErr != nil {
		cudaemu.Unavailable(t, setupErr)
	}
	dev, err := cuda.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	if !strings.Contains(dev.Name(), "emulator") {
		t.Fatalf("device %q is not the emulator", dev.Name())
	}
	image, err := dev.Compile(src, "emu_test.cu")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := dev.LoadModule(image)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Unload() })
	return &env{t, dev, mod}
}

func (e *env) fn(name string) *cuda.Function {
	f, err := e.mod.Function(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// buf allocates n values of T on the device, copied from init if given.
func buf[T any](e *env, n int, init []T) cuda.DevicePtr {
	e.t.Helper()
	var z T
	p, err := e.dev.Alloc(n * int(unsafe.Sizeof(z)))
	e.must(err)
	e.t.Cleanup(func() { e.dev.Free(p) })
	if init != nil {
		e.must(e.dev.CopyHtoD(p, unsafe.Pointer(&init[0]), n*int(unsafe.Sizeof(z)), nil))
	}
	return p
}

func get[T any](e *env, p cuda.DevicePtr, n int) []T {
	e.t.Helper()
	out := make([]T, n)
	e.must(e.dev.CopyDtoH(unsafe.Pointer(&out[0]), p, n*int(unsafe.Sizeof(out[0])), nil))
	return out
}

func grid(x uint32) [3]uint32 { return [3]uint32{x, 1, 1} }

// TestHalves: emu.h's f2h rounds as compute.FP32ToFP16 (ties to even, half
// subnormals, overflow to infinity) and h2f is exact, for every half, every
// midpoint between neighbouring halves and the floats beside it, and random
// floats.
func TestHalves(t *testing.T) {
	e := open(t)
	var in []float32
	for h := range 0x7c00 { // the finite positive halves
		v := compute.FP16ToFP32(uint16(h))
		mid := float32((float64(v) + float64(compute.FP16ToFP32(uint16(h+1)))) / 2)
		for _, f := range []float32{v, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			in = append(in, f, -f)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1 << 18 {
		in = append(in, math.Float32frombits(rng.Uint32()&^0x7f800000|uint32(rng.IntN(0x8f))<<23))
	}
	in = append(in, 65504, 65519.99, 65520, 1e10, float32(math.Inf(1)), 1e-10)
	n := len(in)
	dIn, dOut, dBack := buf(e, n, in), buf[uint16](e, n, nil), buf[float32](e, 65536, nil)
	e.must(e.dev.Launch(e.fn("halves"), grid(uint32((max(n, 65536)+255)/256)), [3]uint32{256, 1, 1}, 0, nil, dIn, dOut, dBack, int32(n)))
	for i, h := range get[uint16](e, dOut, n) {
		if want := compute.FP32ToFP16(in[i]); h != want {
			t.Fatalf("f2h(%g) = %#04x, want %#04x", in[i], h, want)
		}
	}
	for h, f := range get[float32](e, dBack, 65536) {
		want := compute.FP16ToFP32(uint16(h))
		if math.Float32bits(f) != math.Float32bits(want) {
			t.Fatalf("h2f(%#04x) = %#08x, want %#08x", h, math.Float32bits(f), math.Float32bits(want))
		}
	}
}

// TestBarriersAndShuffles: shared memory, block barriers and a butterfly in
// 2D blocks of 256 over 3 blocks, and shfl_idx / shfl_idx_i.
func TestBarriersAndShuffles(t *testing.T) {
	e := open(t)
	const blocks, n = 3, 256
	in := make([]float32, blocks*n)
	want := make([]float32, blocks)
	for i := range in {
		in[i] = float32(i % 7)
		want[i/n] += in[i]
	}
	dIn, dOut := buf(e, len(in), in), buf[float32](e, blocks, nil)
	e.must(e.dev.Launch(e.fn("block_sum"), grid(blocks), [3]uint32{32, 8, 1}, 0, nil, dIn, dOut))
	if got := get[float32](e, dOut, blocks); !equal(got, want) {
		t.Errorf("block sums %v, want %v", got, want)
	}

	dRot, dRotI := buf[float32](e, 64, nil), buf[int32](e, 64, nil)
	e.must(e.dev.Launch(e.fn("rotate"), grid(2), [3]uint32{32, 1, 1}, 0, nil, dIn, dRot, dRotI))
	rot, roti := get[float32](e, dRot, 64), get[int32](e, dRotI, 64)
	for i := range 64 {
		w, lane := i&^31, i&31
		if rot[i] != in[w+(lane+1)%32] || roti[i] != int32(w+31-lane) {
			t.Fatalf("thread %d: shfl_idx %v, shfl_idx_i %d; want %v, %d", i, rot[i], roti[i], in[w+(lane+1)%32], w+31-lane)
		}
	}
}

func equal(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// TestBrokenKernels: launches that break warp-wide operations' rules fail
// (CUDA_ERROR_LAUNCH_FAILED; the emulator prints why), and the device works
// afterwards.
func TestBrokenKernels(t *testing.T) {
	e := open(t)
	out := buf(e, 64, make([]float32, 64))
	for _, tc := range []struct {
		kernel  string
		threads uint32
	}{
		{"diverge", 32},    // lanes at a shuffle and at sync_warp
		{"early_exit", 32}, // a shuffle after half the warp returned
		{"deadlock", 32},   // lane 0 at sync_threads, the others at sync_warp
		{"rotate", 16},     // a full-mask shuffle in a warp of 16 threads
	} {
		var ce *cuda.Error
		err := e.dev.Launch(e.fn(tc.kernel), grid(1), [3]uint32{tc.threads, 1, 1}, 0, nil, out, out, out)
		if !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_LAUNCH_FAILED" {
			t.Errorf("%s: %v, want CUDA_ERROR_LAUNCH_FAILED", tc.kernel, err)
		}
	}
	e.must(e.dev.Launch(e.fn("axpb"), grid(1), [3]uint32{64, 1, 1}, 0, nil, out, float32(0), float32(2), int32(64)))
	if got := get[float32](e, out, 64); got[63] != 2 {
		t.Errorf("after the failures: %v, want 2", got[63])
	}
}

// TestGraph: a capture records launches with their argument values and
// memsets, runs nothing, and replays in order; an unsafe call on the
// capturing thread invalidates the capture.
func TestGraph(t *testing.T) {
	e := open(t)
	s, err := e.dev.NewStream()
	e.must(err)
	defer s.Destroy()
	y := buf(e, 4, []float32{1, 2, 3, 4})
	z := buf[byte](e, 8, nil)
	axpb := e.fn("axpb")
	e.must(s.BeginCapture())
	e.must(e.dev.Launch(axpb, grid(1), [3]uint32{32, 1, 1}, 0, s, y, float32(2), float32(1), int32(4)))
	e.must(e.dev.Memset(z, 7, 8, s))
	e.must(e.dev.Launch(axpb, grid(1), [3]uint32{32, 1, 1}, 0, s, y, float32(3), float32(0), int32(4)))
	g, err := s.EndCapture()
	e.must(err)
	defer g.Destroy()
	ge, err := g.Instantiate()
	e.must(err)
	defer ge.Destroy()
	if got := get[float32](e, y, 4); got[0] != 1 {
		t.Fatalf("the capture ran: y = %v", got)
	}
	e.must(ge.Launch(s))
	e.must(ge.Launch(s))
	e.must(s.Sync())
	if got, want := get[float32](e, y, 4), []float32{((1*2+1)*3*2 + 1) * 3, ((2*2+1)*3*2 + 1) * 3, ((3*2+1)*3*2 + 1) * 3, ((4*2+1)*3*2 + 1) * 3}; !equal(got, want) {
		t.Errorf("after two replays y = %v, want %v", got, want)
	}
	if got := get[byte](e, z, 8); got[7] != 7 {
		t.Errorf("memset node: %v", got)
	}

	e.must(s.BeginCapture())
	if _, err := e.dev.Alloc(16); err == nil || !strings.Contains(err.Error(), "CAPTURE_UNSUPPORTED") {
		t.Errorf("Alloc while capturing: %v, want CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", err)
	}
	if _, err := s.EndCapture(); err == nil || !strings.Contains(err.Error(), "CAPTURE_INVALIDATED") {
		t.Errorf("EndCapture after an unsafe call: %v, want CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", err)
	}
}

// TestDriverChecks: the fake driver's argument checks, its NaN-filled fresh
// allocations, and NVRTC's log for a compile error.
func TestDriverChecks(t *testing.T) {
	e := open(t)
	p := buf[float32](e, 4, nil)
	if got := get[uint32](e, p, 4); got[0] != 0xffffffff {
		t.Errorf("fresh device memory reads %#x, want the NaN fill 0xffffffff", got[0])
	}
	var x [8]float32
	for _, tc := range []struct {
		what, code string
		err        error
	}{
		{"a copy past the end of an allocation", "CUDA_ERROR_INVALID_VALUE", e.dev.CopyHtoD(p, unsafe.Pointer(&x[0]), 32, nil)},
		{"freeing inside an allocation", "CUDA_ERROR_INVALID_VALUE", e.dev.Free(p + 4)},
		{"a block of 2048 threads", "CUDA_ERROR_INVALID_VALUE",
			e.dev.Launch(e.fn("axpb"), grid(1), [3]uint32{2048, 1, 1}, 0, nil, p, float32(1), float32(1), int32(4))},
	} {
		var ce *cuda.Error
		if !errors.As(tc.err, &ce) || ce.Name != tc.code {
			t.Errorf("%s: %v, want %s", tc.what, tc.err, tc.code)
		}
	}
	_, err := e.dev.Compile("extern \"C\" __global__ void f() { int x = ; }", "bad.cu")
	if err == nil || !strings.Contains(err.Error(), "bad.cu(1)") || !strings.Contains(err.Error(), "NVRTC_ERROR_COMPILATION") {
		t.Errorf("Compile of a syntax error: %v, want NVRTC_ERROR_COMPILATION with bad.cu(1) in the log", err)
	}
}
