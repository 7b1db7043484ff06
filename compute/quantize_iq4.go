package compute

import "encoding/binary"

// The IQ4 quantizers: ggml's quantize_row_iq4_nl_impl as quantize_iq4_nl
// and quantize_iq4_xs run it when llama-quantize has no importance matrix
// (weights x², seven scale trials either side), with float32 rounding after
// every product as in quantize_ggml.go.

// bestIndexIQ4 is ggml's best_index_int8 over kvaluesIQ4NL: the index of
// the table value nearest x (the lower one on a tie).
func bestIndexIQ4(x float32) uint8 {
	val := &kvaluesIQ4NL
	if x <= float32(val[0]) {
		return 0
	}
	if x >= float32(val[15]) {
		return 15
	}
	ml, mu := 0, 15
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(val[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(val[mu-1]) < float32(val[mu])-x {
		return uint8(mu - 1)
	}
	return uint8(mu)
}

// iq4Sums returns Σ w·q·x and Σ w·q² over a block for the table values
// nearest id·x.
func iq4Sums(xb, weight []float32, id float32, L []uint8) (sumqx, sumq2 float32) {
	for j, x := range xb {
		l := bestIndexIQ4(float32(id * x))
		if L != nil {
			L[j] = l
		}
		q := float32(kvaluesIQ4NL[l])
		w := weight[j]
		sumqx += float32(float32(w*q) * x)
		sumq2 += float32(float32(w*q) * q)
	}
	return sumqx, sumq2
}

// quantizeIQ4 is quantize_row_iq4_nl_impl for one super-block x of
// 32·len(scales) values with ntry trials: it writes d (f16) to dh, the
// packed quants to q4 (len(x)/2 bytes) and, for more than one block, the
// 6-bit block scales to scalesH and scalesL.
func quantizeIQ4(x []float32, dh, q4 []byte, scalesH []byte, scalesL []byte, scales []float32, ntry int) {
	const bs = 32
	var weight [bs]float32
	var L [QK_K]uint8
	clear(q4)
	storeF16(dh, 0)
	values0 := float32(kvaluesIQ4NL[0])
	var maxScale, amaxScale float32
	for ib := range scales {
		xb := x[ib*bs : (ib+1)*bs]
		Lb := L[ib*bs : (ib+1)*bs]
		for j, v := range xb {
			weight[j] = v * v
		}
		var amax, mx float32
		for _, v := range xb {
			if ax := abs32(v); ax > amax {
				amax, mx = ax, v
			}
		}
		if amax < 1e-15 { // GROUP_MAX_EPS
			scales[ib] = 0
			continue
		}
		d := mx / values0
		if ntry > 0 {
			d = -mx / values0
		}
		sumqx, sumq2 := iq4Sums(xb, weight[:], 1/d, Lb)
		d = 0
		if sumq2 > 0 {
			d = sumqx / sumq2
		}
		best := d * sumqx
		for itry := -ntry; itry <= ntry; itry++ {
			id := (float32(itry) + values0) / mx
			sumqx, sumq2 := iq4Sums(xb, weight[:], id, nil)
			if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
				d = sumqx / sumq2
				best = d * sumqx
			}
		}
		scales[ib] = d
		if ad := abs32(d); ad > amaxScale {
			amaxScale, maxScale = ad, d
		}
	}

	if len(scales) > 1 {
		clear(scalesH)
		d := -maxScale / 32
		storeF16(dh, d)
		id := inverse(d)
		for ib := range scales {
			l := max(-32, min(31, nearestInt(float32(id*scales[ib]))))
			dl := d * float32(l)
			idl := inverse(dl)
			for j, v := range x[ib*bs : (ib+1)*bs] {
				L[ib*bs+j] = bestIndexIQ4(idl * v)
			}
			l += 32
			lo, hi := byte(l&0x0f), uint16(l>>4)
			if ib%2 == 0 {
				scalesL[ib/2] = lo
			} else {
				scalesL[ib/2] |= lo << 4
			}
			h := binary.LittleEndian.Uint16(scalesH) | hi<<(2*(ib%8))
			binary.LittleEndian.PutUint16(scalesH, h)
		}
	} else {
		storeF16(dh, scales[0])
		if ntry > 0 {
			id := inverse(scales[0])
			for j, v := range x {
				L[j] = bestIndexIQ4(id * v)
			}
		}
	}
	for i := range len(x) / 32 {
		for j := range 16 {
			q4[16*i+j] = L[32*i+j] | L[32*i+16+j]<<4
		}
	}
}

// quantizeIQ4NL is quantize_iq4_nl without an importance matrix: IQ4_NL
// block (18 bytes): d f16, qs[16].
func quantizeIQ4NL(x *[32]float32, y *[18]byte) {
	var scale [1]float32
	quantizeIQ4(x[:], y[0:2], y[2:18], nil, nil, scale[:], 7)
}

// quantizeIQ4XS is quantize_iq4_xs without an importance matrix (and
// quantize_row_iq4_xs_ref): IQ4_XS block (136 bytes): d f16, scales_h u16,
// scales_l[4], qs[128].
func quantizeIQ4XS(x *[QK_K]float32, y *[136]byte) {
	var scales [QK_K / 32]float32
	quantizeIQ4(x[:], y[0:2], y[8:136], y[2:4], y[4:8], scales[:], 7)
}
