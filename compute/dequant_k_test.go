package compute

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// kBlock is the logical content of one K-quant super-block: the f16 scales
// d and dmin (Q8_K: d as float32 bits), per-sub-block scales sc and mins m,
// and the 256 unsigned quants L. The packers below follow ggml's
// quantize_row_*_K_ref, and want() is ggml's formula per value, so these
// tests pin the bit layout from the encoder's side.
type kBlock struct {
	d, dmin uint16
	d32     float32
	sc, m   []int
	L       [QK_K]int
}

// kLayout describes a K type for the tests: sub-block size, quant range,
// scale and min ranges.
type kLayout struct {
	sub              int
	qMax             int
	scLo, scHi, mMax int
}

var kLayouts = map[DType]kLayout{
	Q2_K: {sub: 16, qMax: 3, scHi: 15, mMax: 15},
	Q3_K: {sub: 16, qMax: 7, scHi: 63},
	Q4_K: {sub: 32, qMax: 15, scHi: 63, mMax: 63},
	Q5_K: {sub: 32, qMax: 31, scHi: 63, mMax: 63},
	Q6_K: {sub: 16, qMax: 63, scLo: -128, scHi: 127},
	Q8_K: {sub: QK_K, qMax: 255},
}

// packQs2 stores four 2-bit planes per 128 values, as Q2_K and Q3_K do.
func packQs2(qs []byte, L []int) {
	for j := 0; j < QK_K; j += 128 {
		for l := range 32 {
			qs[j/4+l] = byte(L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6)
		}
	}
}

// packScaleMinK4 stores eight 6-bit scales and mins in 12 bytes (Q4_K, Q5_K).
func packScaleMinK4(s []byte, sc, m []int) {
	for j := range 8 {
		putScaleMinK4(j, s, byte(sc[j]), byte(m[j]))
	}
}

func (b *kBlock) pack(typ DType) []byte {
	out := make([]byte, typ.TypeSize())
	L := b.L // copy: some packers consume high bits
	switch typ {
	case Q2_K:
		for j := range 16 {
			out[j] = byte(b.sc[j] | b.m[j]<<4)
		}
		packQs2(out[16:80], L[:])
		putF16(out[80:], b.d)
		putF16(out[82:], b.dmin)
	case Q3_K:
		scales := out[96:108]
		for j := range 16 {
			l := b.sc[j]
			if j < 8 {
				scales[j] = byte(l & 0xf)
			} else {
				scales[j-8] |= byte(l&0xf) << 4
			}
			scales[j%4+8] |= byte(l>>4) << (2 * (j / 4))
		}
		m, hm := 0, byte(1)
		for j := range QK_K {
			if L[j] > 3 {
				out[m] |= hm
				L[j] -= 4
			}
			if m++; m == QK_K/8 {
				m, hm = 0, hm<<1
			}
		}
		packQs2(out[32:96], L[:])
		putF16(out[108:], b.d)
	case Q4_K:
		putF16(out, b.d)
		putF16(out[2:], b.dmin)
		packScaleMinK4(out[4:16], b.sc, b.m)
		q := out[16:]
		for j := 0; j < QK_K; j += 64 {
			for l := range 32 {
				q[l] = byte(L[j+l] | L[j+l+32]<<4)
			}
			q = q[32:]
		}
	case Q5_K:
		putF16(out, b.d)
		putF16(out[2:], b.dmin)
		packScaleMinK4(out[4:16], b.sc, b.m)
		qh, ql := out[16:48], out[48:]
		packQ5K(qh, ql, L[:])
	case Q6_K:
		ql, qh := out[0:128], out[128:192]
		for j := 0; j < QK_K; j += 128 {
			for l := range 32 {
				ql[l] = byte(L[j+l]&0xf | (L[j+l+64]&0xf)<<4)
				ql[l+32] = byte(L[j+l+32]&0xf | (L[j+l+96]&0xf)<<4)
				qh[l] = byte(L[j+l]>>4 | (L[j+l+32]>>4)<<2 | (L[j+l+64]>>4)<<4 | (L[j+l+96]>>4)<<6)
			}
			ql, qh = ql[64:], qh[32:]
		}
		for j := range 16 {
			out[192+j] = byte(int8(b.sc[j]))
		}
		putF16(out[208:], b.d)
	case Q8_K:
		binary.LittleEndian.PutUint32(out, math.Float32bits(b.d32))
		for j := range QK_K {
			out[4+j] = byte(int8(b.L[j] - 128))
		}
	}
	return out
}

// want is ggml's value e of the block, with C's float32 operation order.
func (b *kBlock) want(typ DType, e int) float32 {
	s := e / kLayouts[typ].sub
	d, dmin, l := FP16ToFP32(b.d), FP16ToFP32(b.dmin), float32(b.L[e])
	switch typ {
	case Q2_K, Q4_K, Q5_K:
		return float32(d*float32(b.sc[s])*l) - float32(dmin*float32(b.m[s]))
	case Q3_K:
		return d * float32(b.sc[s]-32) * float32(b.L[e]-4)
	case Q6_K:
		return d * float32(b.sc[s]) * float32(b.L[e]-32)
	}
	return b.d32 * float32(b.L[e]-128) // Q8_K
}

// randomKBlock fills a block with values from rng; pick chooses each
// quant, scale and min from its range [lo, hi].
func randomKBlock(typ DType, d, dmin uint16, pick func(lo, hi int) int) *kBlock {
	lay := kLayouts[typ]
	n := QK_K / lay.sub
	b := &kBlock{d: d, dmin: dmin, d32: FP16ToFP32(d), sc: make([]int, n), m: make([]int, n)}
	for s := range n {
		b.sc[s] = pick(lay.scLo, lay.scHi)
		b.m[s] = pick(0, lay.mMax)
	}
	for e := range b.L {
		b.L[e] = pick(0, lay.qMax)
	}
	return b
}

func TestDequantizeK(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	random := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
	highest := func(_, hi int) int { return hi }
	lowest := func(lo, _ int) int { return lo }
	cases := []struct {
		name    string
		d, dmin uint16
		pick    func(lo, hi int) int
	}{
		{"random", 0x2e66, 0x2a00, random},
		{"random negative scales", 0xae66, 0xaa00, random},
		{"highest", hOne, hHalf, highest},
		{"lowest", hOne, hHalf, lowest},
		{"zero d", hZero, hOne, random},
		{"zero dmin", hQuarter, hZero, random},
		{"subnormal", hSubnormal, 0x03ff, random},
		{"infinite d", hInf, hZero, random},
		{"infinite dmin", hOne, hInf, random},
	}
	for _, typ := range []DType{Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K} {
		for _, tc := range cases {
			t.Run(typ.String()+"/"+tc.name, func(t *testing.T) {
				// Three super-blocks, the last two random, to check the stride.
				blocks := []*kBlock{
					randomKBlock(typ, tc.d, tc.dmin, tc.pick),
					randomKBlock(typ, 0x3266, 0x2c00, random),
					randomKBlock(typ, 0x1c00, 0x3000, random),
				}
				var src []byte
				var want []float32
				for _, b := range blocks {
					src = append(src, b.pack(typ)...)
					for e := range QK_K {
						want = append(want, b.want(typ, e))
					}
				}
				checkValues(t, dequantize(t, typ, src), want)
			})
		}
	}
}
