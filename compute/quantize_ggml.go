package compute

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Weight quantizers: ggml's reference quantizers (ggml-quants.c,
// quantize_row_*_ref, which llama-quantize runs when there is no importance
// matrix), ported so that their output is bit-identical. ggml compiles them
// without FMA, so every product here is rounded to float32 before it is
// added (an explicit float32 conversion stops Go from fusing).

// QuantizeRow writes len(x) values of x into dst in type t: len(x) must be a
// whole number of t's blocks and dst exactly t.RowSize(len(x)) bytes.
// Supported: F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K,
// IQ4_NL, IQ4_XS, MXFP4.
func QuantizeRow(t DType, x []float32, dst []byte) error {
	size, err := t.RowSize(len(x))
	if err != nil {
		return err
	}
	if len(dst) != size {
		return fmt.Errorf("quantize %s: %d values need %d bytes, dst has %d", t, len(x), size, len(dst))
	}
	switch t {
	case F32:
		for i, v := range x {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], FP32ToFP16(v))
		}
	case BF16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], FP32ToBF16(v))
		}
	default:
		q := blockQuantizers[t]
		if q == nil {
			return fmt.Errorf("quantize: no quantizer for %s", t)
		}
		bs, ts := t.BlockSize(), t.TypeSize()
		for i := range len(x) / bs {
			q(x[bs*i:], dst[ts*i:])
		}
	}
	return nil
}

// blockQuantizers holds the quantizer of each block type: the first block
// (t.BlockSize() values) of x into the first t.TypeSize() bytes of y.
var blockQuantizers = map[DType]func(x []float32, y []byte){
	Q8_0:   func(x []float32, y []byte) { quantizeQ8_0Ref((*[32]float32)(x), (*[34]byte)(y)) },
	Q4_0:   func(x []float32, y []byte) { quantizeQ4_0Ref((*[32]float32)(x), (*[18]byte)(y)) },
	Q5_0:   func(x []float32, y []byte) { quantizeQ5_0Ref((*[32]float32)(x), (*[22]byte)(y)) },
	Q5_1:   func(x []float32, y []byte) { quantizeQ5_1Ref((*[32]float32)(x), (*[24]byte)(y)) },
	Q4_K:   func(x []float32, y []byte) { quantizeQ4_KRef((*[QK_K]float32)(x), (*[144]byte)(y)) },
	Q5_K:   func(x []float32, y []byte) { quantizeQ5_KRef((*[QK_K]float32)(x), (*[176]byte)(y)) },
	Q6_K:   func(x []float32, y []byte) { quantizeQ6_KRef((*[QK_K]float32)(x), (*[210]byte)(y)) },
	IQ4_NL: func(x []float32, y []byte) { quantizeIQ4NL((*[32]float32)(x), (*[18]byte)(y)) },
	IQ4_XS: func(x []float32, y []byte) { quantizeIQ4XS((*[QK_K]float32)(x), (*[136]byte)(y)) },
	MXFP4:  func(x []float32, y []byte) { quantizeMXFP4((*[32]float32)(x), (*[17]byte)(y)) },
}

// CanQuantize reports whether QuantizeRow supports t.
func CanQuantize(t DType) bool {
	return t == F32 || t == F16 || t == BF16 || blockQuantizers[t] != nil
}

// inverse is 1/d, or 0 where d is 0 (ggml's `d ? 1.0f/d : 0.0f`).
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

func storeF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, FP32ToFP16(f)) }

// quantizeQ8_0Ref is quantize_row_q8_0_ref: d = amax/127, q = roundf(x/d)
// (halves away from zero).
func quantizeQ8_0Ref(x *[32]float32, y *[34]byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	id := inverse(d)
	storeF16(y[0:], d)
	for j, v := range x {
		y[2+j] = byte(int8(math.Round(float64(v * id))))
	}
}

// signedMax returns the first value of largest magnitude in x (0 for an
// all-zero x), as the legacy quantizers pick it.
func signedMax(x []float32) float32 {
	var amax, vmax float32
	for _, v := range x {
		if amax < abs32(v) {
			amax, vmax = abs32(v), v
		}
	}
	return vmax
}

// quantizeQ4_0Ref is quantize_row_q4_0_ref: the value of largest magnitude
// maps to −8, d = max/−8, q = min(15, trunc(x/d + 8.5)).
func quantizeQ4_0Ref(x *[32]float32, y *[18]byte) {
	d := signedMax(x[:]) / -8
	id := inverse(d)
	storeF16(y[0:], d)
	for j := range 16 {
		// Explicit conversions: no fused multiply-add, as amd64 computes it.
		x0 := float32(x[j] * id)
		x1 := float32(x[16+j] * id)
		q0 := min(15, uint8(int8(x0+8.5)))
		q1 := min(15, uint8(int8(x1+8.5)))
		y[2+j] = q0 | q1<<4
	}
}

// quantizeQ5_0Ref is quantize_row_q5_0_ref: as Q4_0 with 5 bits, the value
// of largest magnitude mapping to −16. Block: d f16, qh u32 (fifth bits),
// qs[16].
func quantizeQ5_0Ref(x *[32]float32, y *[22]byte) {
	d := signedMax(x[:]) / -16
	id := inverse(d)
	storeF16(y[0:], d)
	var qh uint32
	for j := range 16 {
		q0 := min(31, uint8(int8(float32(x[j]*id)+16.5)))
		q1 := min(31, uint8(int8(float32(x[16+j]*id)+16.5)))
		y[6+j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0&0x10) >> 4 << j
		qh |= uint32(q1&0x10) >> 4 << (j + 16)
	}
	binary.LittleEndian.PutUint32(y[2:], qh)
}

// quantizeQ5_1Ref is quantize_row_q5_1_ref: d = (max−min)/31 and the min
// (both f16), q = trunc((x−min)/d + 0.5). Block: d, m, qh u32, qs[16].
func quantizeQ5_1Ref(x *[32]float32, y *[24]byte) {
	mn, mx := float32(math.MaxFloat32), float32(-math.MaxFloat32)
	for _, v := range x {
		mn, mx = min(mn, v), max(mx, v)
	}
	d := (mx - mn) / 31
	id := inverse(d)
	storeF16(y[0:], d)
	storeF16(y[2:], mn)
	var qh uint32
	for j := range 16 {
		q0 := uint8(float32((x[j]-mn)*id) + 0.5)
		q1 := uint8(float32((x[16+j]-mn)*id) + 0.5)
		y[8+j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0&0x10) >> 4 << j
		qh |= uint32(q1&0x10) >> 4 << (j + 16)
	}
	binary.LittleEndian.PutUint32(y[4:], qh)
}

// makeQKX2Quants is ggml's make_qkx2_quants: a scale and a min for n
// values quantized to [0, nmax], searched over nstep+1 candidate scales to
// minimise the weighted squared error. It returns the scale and sets
// *theMin to minus the min.
func makeQKX2Quants(x, weights []float32, L, Laux []uint8, nmax int, theMin *float32, rmin, rdelta float32, nstep int) float32 {
	n := len(x)
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		clear(L[:n])
		*theMin = -mn
		return 0
	}
	iscale := float32(nmax) / (mx - mn)
	scale := 1 / iscale
	var bestError float32
	for i := range n {
		l := nearestInt(float32(iscale * (x[i] - mn)))
		L[i] = uint8(max(0, min(int32(nmax), l)))
		diff := float32(float32(scale*float32(L[i]))+mn) - x[i]
		bestError += float32(weights[i] * float32(diff*diff))
	}
	if nstep < 1 {
		*theMin = -mn
		return scale
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + float32(nmax)) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := nearestInt(float32(iscale * (x[i] - mn)))
			l = max(0, min(int32(nmax), l))
			Laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i := range n {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - x[i]
				curError += float32(weights[i] * float32(diff*diff))
			}
			if curError < bestError {
				copy(L[:n], Laux[:n])
				bestError = curError
				scale = thisScale
				mn = thisMin
			}
		}
	}
	*theMin = -mn
	return scale
}

// quantizeKScaleMin is the part quantize_row_q4_K_ref and _q5_K_ref share:
// a scale and min per 32 values by makeQKX2Quants, packed as 6-bit values
// into sc (12 bytes) with d and dmin (f16) at y[0:4], then the quants
// recomputed from the rounded scales into L (values 0..nmax).
func quantizeKScaleMin(x *[QK_K]float32, y []byte, L *[QK_K]uint8, nmax int, rmin, rdelta float32, nstep int) {
	var scales, mins [QK_K / 32]float32
	var w [32]float32
	var Laux [32]uint8
	var maxScale, maxMin float32
	for j := range QK_K / 32 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xs {
			w[l] = avX + abs32(v)
		}
		scales[j] = makeQKX2Quants(xs, w[:], L[32*j:32*j+32], Laux[:], nmax, &mins[j], rmin, rdelta, nstep)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := y[4:16]
	clear(sc)
	for j := range QK_K / 32 {
		ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
		putScaleMinK4(j, sc, ls, lm)
	}
	storeF16(y[0:], maxScale/63)
	storeF16(y[2:], maxMin/63)
	for j := range QK_K / 32 {
		s, m := scaleMinK4(j, (*[12]byte)(sc))
		d := float32(f16At(y[0:]) * float32(s))
		if d == 0 {
			continue
		}
		dm := float32(f16At(y[2:]) * float32(m))
		for ii := range 32 {
			l := nearestInt((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(max(0, min(int32(nmax), l)))
		}
	}
}

// quantizeQ4_KRef is quantize_row_q4_K_ref. Block: d, dmin (f16),
// scales[12], qs[128] (each 64 values share 32 bytes, low nibbles first).
func quantizeQ4_KRef(x *[QK_K]float32, y *[144]byte) {
	var L [QK_K]uint8
	quantizeKScaleMin(x, y[:], &L, 15, -1, 0.1, 20)
	q := y[16:]
	for j := 0; j < QK_K; j += 64 {
		for l := range 32 {
			q[l] = L[j+l] | L[j+l+32]<<4
		}
		q = q[32:]
	}
}

// quantizeQ5_KRef is quantize_row_q5_K_ref. Block: d, dmin (f16),
// scales[12], qh[32] (fifth bits), qs[128].
func quantizeQ5_KRef(x *[QK_K]float32, y *[176]byte) {
	var L [QK_K]uint8
	quantizeKScaleMin(x, y[:], &L, 31, -0.5, 0.1, 15)
	qh, ql := y[16:48], y[48:]
	clear(qh)
	packQ5K(qh, ql, L[:])
}

// packQ5K writes the 5-bit quants L (QK_K of them) as Q5_K's qh[32], whose
// fifth bits it sets (not clears), and ql[128].
func packQ5K[E int | uint8](qh, ql []byte, L []E) {
	m1, m2 := byte(1), byte(2)
	for n := 0; n < QK_K; n += 64 {
		for j := range 32 {
			l1, l2 := L[n+j], L[n+j+32]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[j] = byte(l1 | l2<<4)
		}
		m1, m2 = m1<<2, m2<<2
		ql = ql[32:]
	}
}

// makeQXQuants is make_qx_quants with rmse_type 1 and no importance
// weights (w = x²), as quantize_row_q6_K_ref calls it: n values to
// [−nmax, nmax−1] (stored +nmax in L), the scale searched over 19 steps.
func makeQXQuants(x []float32, L []int8, nmax int) float32 {
	var mx, amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, mx = a, v
		}
	}
	if amax < 1e-15 {
		clear(L[:len(x)])
		return 0
	}
	fn := float32(nmax)
	iscale := -fn / mx
	var sumLX, sumL2 float32
	for i, v := range x {
		l := max(-int32(nmax), min(int32(nmax)-1, nearestInt(float32(iscale*v))))
		L[i] = int8(l + int32(nmax))
		w := float32(v * v)
		fl := float32(l)
		sumLX += float32(float32(w*v) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fn + float32(0.1*float32(is))) / mx
		sumLX, sumL2 = 0, 0
		for _, v := range x {
			l := max(-int32(nmax), min(int32(nmax)-1, nearestInt(float32(iscale*v))))
			w := float32(v * v)
			fl := float32(l)
			sumLX += float32(float32(w*v) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i, v := range x {
				l := nearestInt(float32(iscale * v))
				L[i] = int8(int32(nmax) + max(-int32(nmax), min(int32(nmax)-1, l)))
			}
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}

// quantizeQ6_KRef is quantize_row_q6_K_ref. Block: ql[128] (low four bits),
// qh[64] (high two bits), scales int8[16], d f16.
func quantizeQ6_KRef(x *[QK_K]float32, y *[210]byte) {
	var L [QK_K]int8
	var scales [QK_K / 16]float32
	var maxScale, maxAbsScale float32
	for ib := range QK_K / 16 {
		s := makeQXQuants(x[16*ib:16*ib+16], L[16*ib:16*ib+16], 32)
		scales[ib] = s
		if a := abs32(s); a > maxAbsScale {
			maxAbsScale, maxScale = a, s
		}
	}
	if maxAbsScale < 1e-15 {
		clear(y[:])
		return
	}
	iscale := -128 / maxScale
	storeF16(y[208:], 1/iscale)
	sc := y[192:208]
	for ib := range QK_K / 16 {
		sc[ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
	}
	for j := range QK_K / 16 {
		d := float32(f16At(y[208:]) * float32(int8(sc[j])))
		if d == 0 {
			continue
		}
		for ii := range 16 {
			l := max(-32, min(31, nearestInt(x[16*j+ii]/d)))
			L[16*j+ii] = int8(l + 32)
		}
	}
	ql, qh := y[0:128], y[128:192]
	for j := 0; j < QK_K; j += 128 {
		for l := range 32 {
			q1, q2 := uint8(L[j+l])&0xf, uint8(L[j+l+32])&0xf
			q3, q4 := uint8(L[j+l+64])&0xf, uint8(L[j+l+96])&0xf
			ql[l] = q1 | q3<<4
			ql[l+32] = q2 | q4<<4
			qh[l] = uint8(L[j+l])>>4 | (uint8(L[j+l+32])>>4)<<2 | (uint8(L[j+l+64])>>4)<<4 | (uint8(L[j+l+96])>>4)<<6
		}
		ql = ql[64:]
		qh = qh[32:]
	}
}
