package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestLowRankAddCols: AddCols (in two calls, split inside a panel) equals MatMul by B followed by the scaling, bit
// for bit, for F32 and F16 B, every kernel this machine runs (Generic, the
// Go arithmetic, included), ranks below, at and past whole steps of 16 and
// widths with and without a partial panel; t spans many magnitudes so that
// another order of the sum would show.
func TestLowRankAddCols(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, typ := range []DType{F32, F16} {
		for _, rank := range []int{1, 4, 8, 15, 16, 17, 24, 32, 40, 64} {
			for _, out := range []int{16, 40, 96, 7} {
				b := &Tensor{Name: "b", Type: typ, Shape: []int{rank, out}, Data: randomWeights(rng, typ, out, rank)}
				x := randomActs(rng, rank)
				for i := range x {
					x[i] *= float32(math.Exp2(float64(rng.IntN(30) - 15)))
				}
				base := randomActs(rng, out)
				const scale = 0.37
				y := make([]float32, out)
				if err := NewMatMuler(1).MatMul(y, x, 1, b); err != nil {
					t.Fatal(err)
				}
				want := make([]float32, out)
				for c := range want {
					want[c] = base[c] + float32(y[c]*scale)
				}
				l, err := NewLowRank(b)
				if err != nil {
					t.Fatal(err)
				}
				for _, isa := range append(hostISAs(), Generic) {
					t.Run(fmt.Sprintf("%v/r%d_n%d/%v", typ, rank, out, isa), func(t *testing.T) {
						defer floatCase{isa: isa}.use()()
						got := append([]float32(nil), base...)
						xt := append([]float32(nil), x...)
						l.RoundT(xt)
						split := out / 3 // two calls, the second from inside a panel
						l.AddCols(got, xt, scale, 0, split)
						l.AddCols(got, xt, scale, split, out)
						for c := range got {
							if math.Float32bits(got[c]) != math.Float32bits(want[c]) {
								t.Fatalf("out[%d] = %g, MatMul and scale %g", c, got[c], want[c])
							}
						}
					})
				}
			}
		}
	}
	if _, err := NewLowRank(&Tensor{Name: "q", Type: Q8_0, Shape: []int{32, 4}, Data: make([]byte, 4*34)}); err == nil {
		t.Error("NewLowRank of a Q8_0 tensor: no error")
	}
}
