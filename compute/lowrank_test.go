package compute

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestLowRankAddCols: AddCols (in two calls, split inside a panel) equals MatMul by B followed by the scaling, bit
// for bit, for F32 and F16 B (F16 B's f16 panels also equal, bit for bit,
// float32 panels of the same values, f16's edge values included), every kernel this machine runs (Generic, the
// Go arithmetic, included), ranks below, at and past whole steps of 16 and
// widths with and without a partial panel; t spans many magnitudes so that
// another order of the sum would show.
func TestLowRankAddCols(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, typ := range []DType{F32, F16} {
		for _, rank := range []int{1, 4, 8, 15, 16, 17, 24, 32, 40, 64} {
			for _, out := range []int{16, 40, 96, 7} {
				b := &Tensor{Name: "b", Type: typ, Shape: []int{rank, out}, Data: randomWeights(rng, typ, out, rank)}
				if typ == F16 { // f16's edges too: subnormals, ±0, the largest finite
					for i, h := range []uint16{0x0001, 0x83ff, 0x8000, 0x0000, 0x7bff, 0xfbff, 0x0400} {
						binary.LittleEndian.PutUint16(b.Data[2*((i*37)%(rank*out)):], h)
					}
				}
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
				// wide: for F16 B, the same values as F32 B, whose
				// float32 panels the f16 ones must match bit for bit.
				var wide *LowRank
				if typ == F16 {
					if l.half == nil || l.panel != nil {
						t.Fatalf("F16 B: panels not kept as f16")
					}
					wb := &Tensor{Name: "b32", Type: F32, Shape: []int{rank, out}, Data: make([]byte, 4*rank*out)}
					for i := range rank * out {
						binary.LittleEndian.PutUint32(wb.Data[4*i:], math.Float32bits(FP16ToFP32(binary.LittleEndian.Uint16(b.Data[2*i:]))))
					}
					if wide, err = NewLowRank(wb); err != nil {
						t.Fatal(err)
					}
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
						if wide == nil {
							return
						}
						got32 := append([]float32(nil), base...)
						wide.AddCols(got32, xt, scale, 0, out)
						for c := range got {
							if math.Float32bits(got[c]) != math.Float32bits(got32[c]) {
								t.Fatalf("out[%d] = %g from f16 panels, %g from float32 panels of the same values", c, got[c], got32[c])
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
