package compute

import (
	"encoding/binary"
	"fmt"
)

// LowRank is the B matrix (out, rank) of a low-rank update B·(A·x) (a LoRA
// adapter's lora_b), held for AddCols: in panels of 16 output columns, each
// the panel's 16 columns of B's rank rows (Bᵀ), so that AddCols walks the
// long output dimension with the whole update of a column in one lane of a
// vector register, rather than a short dot product of rank values per
// output, which a horizontal sum dominates.
//
// AddCols's arithmetic is that of MatMul by B (kern_f.go) followed by the
// scale, output for output: the same bits as
//
//	MatMul(y, t, 1, b); out[c] += float32(y[c]·scale)
//
// A LowRank is immutable and safe for concurrent use.
//
// F16 B stays f16 in its panels (half the bytes to read), widened as
// AddCols reads it: f16 to float32 is exact, so the bits are those of
// float32 panels of the same values.
type LowRank struct {
	rank, out int
	f16       bool      // B is F16: t is rounded to f16 first, as floatActs does; the panels are half
	panel     []float32 // (⌈out/16⌉, rank, 16): Bᵀ by panels of 16 columns, zero past out (F32 B)
	half      []uint16  // the same as f16 values (F16 B)
}

// NewLowRank rearranges b, an F32 or F16 tensor of shape (out, rank), for
// AddCols. Other types are an error: their products keep to MatMul.
func NewLowRank(b *Tensor) (*LowRank, error) {
	if b.Type != F32 && b.Type != F16 {
		return nil, fmt.Errorf("compute: low-rank %s: type %s, want F32 or F16", b.Name, b.Type)
	}
	rank, out := b.Cols(), b.Rows()
	if rb := b.RowBytes(); len(b.Data) < out*rb {
		return nil, fmt.Errorf("compute: low-rank %s: %d bytes of data, want %d", b.Name, len(b.Data), out*rb)
	}
	n := (out + 15) / 16 * rank * 16
	l := &LowRank{rank: rank, out: out, f16: b.Type == F16}
	if l.f16 {
		l.half = make([]uint16, n)
	} else {
		l.panel = make([]float32, n)
	}
	for c := range out {
		row := b.Row(c)
		base := c/16*rank*16 + c%16
		for r := range rank {
			if l.f16 {
				l.half[base+16*r] = binary.LittleEndian.Uint16(row[2*r:])
			} else {
				l.panel[base+16*r] = weightAt(b.Type, row, r)
			}
		}
	}
	return l, nil
}

// Rank is B's rank (its columns).
func (l *LowRank) Rank() int { return l.rank }

// Out is B's output width (its rows).
func (l *LowRank) Out() int { return l.out }

// RoundT rounds t, rows of Rank() values, as MatMul by B rounds its
// activations (to f16 for F16 B; F32 B takes them as they are): AddCols
// takes t so rounded.
func (l *LowRank) RoundT(t []float32) {
	if l.f16 {
		roundF16(t, t)
	}
}

// AddCols adds to output columns [c0, c1) of out (a row of Out() values)
// the update of t (Rank() values, rounded by RoundT):
// out[c] += float32((B·t)[c]·scale), each (B·t)[c] computed as MatMul
// computes it (kern_f.go: 16 lanes by fused multiply-adds over whole steps
// of 16, summed pairwise, then the rank mod 16 last products), so the
// result is the same bits as MatMul by B and the scaling apart, whatever
// the columns of the call.
func (l *LowRank) AddCols(out, t []float32, scale float32, c0, c1 int) {
	if c0 < 0 || c1 > l.out || c0 > c1 || len(out) < l.out || len(t) < l.rank {
		panic(fmt.Sprintf("compute: LowRank.AddCols [%d, %d) of %d columns, rank %d: out %d values, t %d", c0, c1, l.out, l.rank, len(out), len(t)))
	}
	t = t[:l.rank]
	first := min(c1, (c0+15)/16*16) // the first whole panel's column
	l.ref(t, out, c0, first, scale)
	if full := (c1 - first) / 16; full > 0 {
		var n int
		if l.f16 {
			n = lowRankAsm(l.half[first*l.rank:], t, out[first:], full, scale)
		} else {
			n = lowRankAsm(l.panel[first*l.rank:], t, out[first:], full, scale)
		}
		l.ref(t, out, first+n*16, first+full*16, scale)
		first += full * 16
	}
	l.ref(t, out, first, c1, scale)
}

// ref is AddCols's Go arithmetic for output columns [c0, c1).
func (l *LowRank) ref(t, out []float32, c0, c1 int, scale float32) {
	if l.f16 {
		lowRankRef(l.half, t, out, c0, c1, scale, FP16ToFP32)
	} else {
		lowRankRef(l.panel, t, out, c0, c1, scale, func(v float32) float32 { return v })
	}
}

// lowRankRef is AddCols's arithmetic for output columns [c0, c1): dotFloat's
// over the column's panel lane, each value widened (exactly) to float32 by
// widen as it is read.
func lowRankRef[E float32 | uint16](panel []E, t, out []float32, c0, c1 int, scale float32, widen func(E) float32) {
	rank := len(t)
	k0 := rank / 16 * 16
	for c := c0; c < c1; c++ {
		w := panel[c/16*rank*16+c%16:]
		var acc [16]float32
		for s := 0; s < k0; s += 16 {
			for l := range acc {
				acc[l] = fmaExact32(widen(w[16*(s+l)]), t[s+l], acc[l])
			}
		}
		y := sumLanes(&acc)
		for i := k0; i < rank; i++ {
			y = fmaExact32(widen(w[16*i]), t[i], y)
		}
		out[c] += float32(y * scale) // rounded, then added (never fused)
	}
}
