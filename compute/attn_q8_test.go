package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// q8Rows returns n rows of hd random values quantized to Q8_0, stride bytes
// apart, and the values.
func q8Rows(rng *rand.Rand, n, hd, stride int) ([]byte, []float32) {
	rows, x := make([]byte, n*stride), randomActs(rng, n*hd)
	for j := range n {
		QuantizeQ8_0(rows[j*stride:], x[j*hd:(j+1)*hd])
	}
	return rows, x
}

// TestQuantizeQ8_0 checks the cache's Q8_0 rows against the activation
// quantizer's blocks (ggml's x86 quantize_row_q8_0) and their values
// against the input: |x − d·q| ≤ d/2 plus d's f16 rounding (127·|d − f16(d)|
// ≤ amax·2^-11), an all-zero block all zeros.
func TestQuantizeQ8_0(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, nb := range []int{1, 2, 7, 8, 9, 20} {
		x := randomActs(rng, nb*32)
		if nb == 7 {
			clear(x[32:64])
		}
		dst := make([]byte, nb*Q8_0BlockBytes)
		QuantizeQ8_0(dst, x)
		want := make([]blockQ8_0, nb)
		quantizeRowQ8_0Generic(x, want)
		back := make([]float32, nb*32)
		if err := Dequantize(Q8_0, dst, back); err != nil {
			t.Fatal(err)
		}
		for b := range want {
			if d := f16At(dst[b*34:]); d != want[b].d {
				t.Fatalf("nb %d block %d: d %g, want %g", nb, b, d, want[b].d)
			}
			amax := absMax32((*[32]float32)(x[b*32:]))
			for i, q := range want[b].qs {
				if int8(dst[b*34+2+i]) != q {
					t.Fatalf("nb %d block %d: q[%d] = %d, want %d", nb, b, i, int8(dst[b*34+2+i]), q)
				}
				v, got := x[b*32+i], back[b*32+i]
				if bound := want[b].d/2 + amax/2048; float32(math.Abs(float64(v-got))) > bound {
					t.Fatalf("nb %d: value %g back as %g (bound %g)", nb, v, got, bound)
				}
			}
		}
	}
}

// TestAttentionQ8_0Kernels checks DotRowsQ8_0 and VKQRowsQ8_0 against their
// Go versions bit for bit: head sizes of one to four blocks, strided rows,
// rescales that are and are not 1.
func TestAttentionQ8_0Kernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, hd := range []int{32, 64, 96, 128} {
		for _, n := range []int{1, 5, 16} {
			t.Run(fmt.Sprintf("hd%d/n%d", hd, n), func(t *testing.T) {
				stride := hd/32*Q8_0BlockBytes*3 + 7
				rows, _ := q8Rows(rng, n, hd, stride)
				var q Q8_0Query
				q.Set(randomActs(rng, hd))
				got, want := make([]float32, n), make([]float32, n)
				DotRowsQ8_0(got, &q, rows, stride, n)
				for j := range n {
					want[j] = vecDotQ8_0(rows[j*stride:j*stride+hd/32*34], q.b)
				}
				same(t, "DotRowsQ8_0", got, want)

				vs, ms := randomActs(rng, n), make([]float32, n)
				for j := range ms {
					ms[j] = 1
					if j%3 == 1 {
						ms[j] = float32(rng.Float64())
					}
				}
				init := randomActs(rng, hd)
				got, want = append([]float32(nil), init...), append([]float32(nil), init...)
				VKQRowsQ8_0(got, rows, stride, ms, vs)
				vkqRowsQ8_0Generic(want, rows, stride, ms, vs)
				same(t, "VKQRowsQ8_0", got, want)
			})
		}
	}
}
