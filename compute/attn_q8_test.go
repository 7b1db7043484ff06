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

				checkVKQ(t, rng, "VKQRowsQ8_0", n, hd, randomActs,
					func(out, ms, vs []float32) { VKQRowsQ8_0(out, rows, stride, ms, vs) },
					func(out, ms, vs []float32) { vkqRowsQ8_0Generic(out, rows, stride, ms, vs) })
			})
		}
	}
}

// TestFWHT compares the fast rotation with the product by ggml's
// Walsh-Hadamard matrix (ggml_gen_hadamard, in float64) and checks that
// rotating twice gives the input back (H·H = I), within float32 rounding.
func TestFWHT(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, n := range []int{2, 64, 128, 256} {
		h := make([]float64, n*n)
		h[0] = 1 / math.Sqrt(float64(n))
		for s := 1; s < n; s *= 2 {
			for i := range s {
				for j := range s {
					v := h[i*n+j]
					h[(i+s)*n+j], h[i*n+j+s], h[(i+s)*n+j+s] = v, v, -v
				}
			}
		}
		x := randomActs(rng, n)
		got := append([]float32(nil), x...)
		FWHT(got)
		var worst, norm float64
		for i := range n {
			var want float64
			for j := range n {
				want += h[i*n+j] * float64(x[j])
			}
			worst = max(worst, math.Abs(float64(got[i])-want))
			norm = max(norm, math.Abs(want))
		}
		if worst > norm*1e-5 {
			t.Errorf("n %d: max |FWHT − H·x| %g (max |H·x| %g)", n, worst, norm)
		}
		FWHT(got)
		for i := range n {
			if d := math.Abs(float64(got[i] - x[i])); d > 1e-5*norm {
				t.Errorf("n %d: H·H·x[%d] = %g, x %g", n, i, got[i], x[i])
				break
			}
		}
	}
}

// TestAttnGroupQ8_0Kernels checks DotRowsQ8_0Group and VKQRowsQ8_0Group
// against DotRowsQ8_0 and VKQRowsQ8_0 head by head, bit for bit, for every
// group size up to 4 on head sizes with and without group kernels, strided
// rows, and rescales that are and are not 1.
func TestAttnGroupQ8_0Kernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, hd := range []int{64, 128, 32} {
		for g := 1; g <= 4; g++ {
			for _, n := range []int{1, 7, 16} {
				t.Run(fmt.Sprintf("hd%d/g%d/n%d", hd, g, n), func(t *testing.T) {
					stride := hd/32*Q8_0BlockBytes*2 + 5
					rows, _ := q8Rows(rng, n, hd, stride)
					x := randomActs(rng, g*hd)
					clear(x[:16]) // an all-zero half block
					var q Q8_0Query
					q.Set(x)
					const ostride = 19
					got, want := make([]float32, g*ostride), make([]float32, g*ostride)
					DotRowsQ8_0Group(got, ostride, &q, g, rows, stride, n)
					for i := range g {
						var qi Q8_0Query
						qi.Set(x[i*hd : (i+1)*hd])
						DotRowsQ8_0(want[i*ostride:i*ostride+n], &qi, rows, stride, n)
					}
					same(t, "DotRowsQ8_0Group", got, want)

					checkGroupVKQ(t, rng, "VKQRowsQ8_0Group", g, hd, n, ostride, randomActs,
						func(out, ms, vs []float32) { VKQRowsQ8_0Group(out, g, rows, stride, ms, vs, ostride, n) },
						func(out, ms, vs []float32) { VKQRowsQ8_0(out, rows, stride, ms, vs) })
				})
			}
		}
	}
}
