package compute

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
)

// TestSoftMax checks SoftMax against softMaxGo (amd64 with AVX2; else
// softMaxExp) bit for bit, for lengths
// with and without a tail of fewer than eight, with masked scores (−Inf)
// and ones e^x underflows for, and without (the assembly's path for
// sixteen values that all stay off ggml_v_expf's branch for |n| > 126), and
// that it sums to 1.
func TestSoftMax(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 64, 100, 257, 1024, 2304, 4099, -16, -24, -100, -1600, -4096} {
		plain := n < 0 // no far or masked scores
		n = max(n, -n)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 20)
			switch {
			case plain:
			case i%11 == 5: // scores far below the maximum: e^x clamped to 0
				x[i] = -float32(r.Float64()) * 1e4
			case i%13 == 7: // masked
				x[i] = float32(math.Inf(-1))
			case i%7 == 3: // x − max about −87 to −140 (ggml_v_expf's |n| > 126 branch, subnormal e^x)
				x[i] = -float32(80+r.Float64()*60) * 8
			}
		}
		want := append([]float32(nil), x...)
		if runtime.GOARCH == "amd64" && hostISA >= AVX2 {
			softMaxGo(want, 0.125)
		} else {
			softMaxExp(want, 0.125)
		}
		SoftMax(x, 0.125)
		var sum float64
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n %d: [%d] = %g, want %g", n, i, x[i], want[i])
			}
			sum += float64(x[i])
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("n %d: sum %g", n, sum)
		}
	}
}

// normals returns n values r.NormFloat64()·scale of a PCG seeded s1, s2.
func normals(n int, s1, s2 uint64, scale float64) []float32 {
	r := rand.New(rand.NewPCG(s1, s2))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// benchInPlace times f on a fresh copy of x each iteration.
func benchInPlace(b *testing.B, x []float32, f func(y []float32)) {
	y := make([]float32, len(x))
	for b.Loop() {
		copy(y, x)
		f(y)
	}
}

func BenchmarkSoftMax(b *testing.B) {
	benchInPlace(b, normals(2304, 3, 4, 20), func(y []float32) { SoftMax(y, 0.125) })
}

func BenchmarkSoftMaxParts(b *testing.B) {
	x := normals(2304, 3, 4, 20)
	b.Run("go", func(b *testing.B) { benchInPlace(b, x, func(y []float32) { softMaxGo(y, 0.125) }) })
	b.Run("exp-path", func(b *testing.B) { benchInPlace(b, x, func(y []float32) { softMaxExp(y, 0.125) }) })
	b.Run("exp", func(b *testing.B) { benchInPlace(b, x, Exp) })
	b.Run("copy", func(b *testing.B) { benchInPlace(b, x, func([]float32) {}) })
}

// BenchmarkGgmlVExpf times the Go ggmlVExpf (what serves CPUs without
// softmax_amd64.s) over 2304 values of x ≤ 0.
func BenchmarkGgmlVExpf(b *testing.B) {
	x := normals(2304, 3, 4, 20)
	for i := range x {
		x[i] = -abs32(x[i])
	}
	for b.Loop() {
		for _, v := range x {
			ggmlVExpf(v)
		}
	}
}

// TestGgmlVExpfPeer checks ggmlVExpf against ggml_v_expf itself: a file
// named by $TROUPE_VEXPF_PEER with lines "input-bits output-bits" (hex),
// written by a C program built from llama.cpp's ggml-cpu/vec.h with -mavx2
// -mfma. It skips without one.
func TestGgmlVExpfPeer(t *testing.T) {
	path := os.Getenv("TROUPE_VEXPF_PEER")
	if path == "" {
		t.Skip("TROUPE_VEXPF_PEER not set")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		var in, out uint32
		if _, err := fmt.Sscanf(sc.Text(), "%x %x", &in, &out); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		lines++
		x := math.Float32frombits(in)
		if got := ggmlVExpf(x); math.Float32bits(got) != out && !(math.IsNaN(float64(got)) && out&0x7fffffff > 0x7f800000) {
			t.Fatalf("ggmlVExpf(%x) = %08x, ggml_v_expf %08x", x, math.Float32bits(got), out)
		}
	}
	if lines == 0 {
		t.Fatal("no lines")
	}
	t.Logf("%d values agree", lines)
}
