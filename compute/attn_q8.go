package compute

import (
	"encoding/binary"
	"math"
)

// The Q8_0 KV cache (llama.cpp's -ctk q8_0 -ctv q8_0). Rows are ggml
// Q8_0 blocks of 32 values, 34 bytes each (d as f16, then 32 int8 quants),
// written as llama.cpp's CPU backend writes them (set_rows calls the
// type's from_float, x86 quantize_row_q8_0). Attention reads them as its
// CPU flash attention does for a quantized K and V: the query is converted
// to K's vec_dot_type (Q8_0) and each score is ggml_vec_dot_q8_0_q8_0; each
// V row is dequantized to float32 (d·q, exact) and accumulated in float32
// (ggml_vec_scale_f32, ggml_vec_mad_f32), not in f16 as for an f16 V.

// Q8_0BlockBytes is the size of one Q8_0 block of 32 values.
const Q8_0BlockBytes = 34

// QuantizeQ8_0 writes x (a multiple of 32 values) into dst as Q8_0 blocks
// (len(x)/32·34 bytes) with ggml's x86 quantize_row_q8_0: d = f16(amax/127),
// q = round-half-even(x·127/amax), as quantizeRowQ8_0 does for activations.
func QuantizeQ8_0(dst []byte, x []float32) {
	var tmp [8]blockQ8_0
	nb := len(x) / 32
	_ = dst[nb*Q8_0BlockBytes-1]
	for b0 := 0; b0 < nb; b0 += len(tmp) {
		blocks := tmp[:min(len(tmp), nb-b0)]
		quantizeRowQ8_0(x[b0*32:(b0+len(blocks))*32], blocks)
		for i := range blocks {
			o := dst[(b0+i)*Q8_0BlockBytes : (b0+i+1)*Q8_0BlockBytes]
			binary.LittleEndian.PutUint16(o, FP32ToFP16(blocks[i].d))
			for j, q := range blocks[i].qs {
				o[2+j] = byte(q)
			}
		}
	}
}

// Q8_0Query is one query head converted to Q8_0 for DotRowsQ8_0. Its
// storage is reused from one Set to the next.
type Q8_0Query struct{ b []blockQ8_0 }

// Set quantizes x (a multiple of 32 values) as QuantizeQ8_0 does.
func (q *Q8_0Query) Set(x []float32) {
	nb := len(x) / 32
	if cap(q.b) < nb {
		q.b = make([]blockQ8_0, nb)
	}
	q.b = q.b[:nb]
	quantizeRowQ8_0(x, q.b)
}

// DotRowsQ8_0 sets out[j] to ggml_vec_dot_q8_0_q8_0 of q with the row at
// rows[j·stride:] (stride in bytes; the row's first len(q)/32 blocks) for
// j < n: per block the integer products summed in eight lanes of four
// positions, times d_row·d_q, by FMA into float32 lanes, added as
// hsum_float_8 (vecDotQ8_0; the assembly of kern_q_amd64.s where there is).
func DotRowsQ8_0(out []float32, q *Q8_0Query, rows []byte, stride, n int) {
	dotRowsQ8_0(out, q.b, rows, stride, n)
}

func dotRowsQ8_0(out []float32, q []blockQ8_0, rows []byte, stride, n int) {
	nb := len(q)
	if n == 0 || nb == 0 {
		return
	}
	_ = rows[(n-1)*stride+nb*Q8_0BlockBytes-1]
	_ = out[n-1]
	if dotRowsQ8_0Asm(out, q, rows, stride, n) {
		return
	}
	for j := range n {
		out[j] = vecDotQ8_0(rows[j*stride:j*stride+nb*Q8_0BlockBytes], q)
	}
}

// DotRowsQ8_0Group is DotRowsQ8_0 for g heads against the same rows: q
// holds the g heads' queries one after the other (Set with g·hd values)
// and head i's n scores go to out[i·ostride:]. Each head's scores equal
// DotRowsQ8_0's bit for bit, whatever g is.
func DotRowsQ8_0Group(out []float32, ostride int, q *Q8_0Query, g int, rows []byte, stride, n int) {
	nb := len(q.b) / g
	if n == 0 || nb == 0 {
		return
	}
	_ = rows[(n-1)*stride+nb*Q8_0BlockBytes-1]
	_ = out[(g-1)*ostride+n-1]
	if dot, _ := groupKernelsQ8(g, nb*32); dot != nil {
		dot(&q.b[0], &rows[0], stride, n, &out[0], ostride*4)
		return
	}
	for i := range g {
		dotRowsQ8_0(out[i*ostride:i*ostride+n], q.b[i*nb:(i+1)*nb], rows, stride, n)
	}
}

// VKQRowsQ8_0Group is VKQRowsQ8_0 for g heads over the same rows: out holds
// the heads' accumulators one after the other (g·hd values), head i's
// rescales and weights are ms[i·sstride:] and vs[i·sstride:] (n each).
// Each head's result equals VKQRowsQ8_0's bit for bit, whatever g is.
func VKQRowsQ8_0Group(out []float32, g int, rows []byte, stride int, ms, vs []float32, sstride, n int) {
	hd := len(out) / g
	if n == 0 || hd < 32 {
		return
	}
	_ = rows[(n-1)*stride+hd/32*Q8_0BlockBytes-1]
	_ = ms[(g-1)*sstride+n-1]
	_ = vs[(g-1)*sstride+n-1]
	if _, vkq := groupKernelsQ8(g, hd); vkq != nil {
		vkq(&out[0], &rows[0], stride, n, &ms[0], &vs[0], sstride*4)
		return
	}
	for i := range g {
		o := i * sstride
		VKQRowsQ8_0(out[i*hd:(i+1)*hd], rows, stride, ms[o:o+n], vs[o:o+n])
	}
}

// VKQRowsQ8_0 is the value accumulation of ggml's CPU flash attention for a
// quantized V (float32 accumulator): for each row j in order, where ms[j]
// is not 1, out = out·ms[j]; then out = fma(v_j, vs[j], out) with v_j the
// row at rows[j·stride:] dequantized (d·q, exact in float32). len(out) is a
// multiple of 32.
func VKQRowsQ8_0(out []float32, rows []byte, stride int, ms, vs []float32) {
	n, nb := len(vs), len(out)/32
	if n == 0 || nb == 0 {
		return
	}
	_ = rows[(n-1)*stride+nb*Q8_0BlockBytes-1]
	_ = ms[n-1]
	if hostISA > Generic {
		vkqRowsQ8_0Asm(&out[0], &rows[0], stride, n, nb, &ms[0], &vs[0])
		return
	}
	vkqRowsQ8_0Generic(out, rows, stride, ms, vs)
}

func vkqRowsQ8_0Generic(out []float32, rows []byte, stride int, ms, vs []float32) {
	for j, s := range vs {
		if m := ms[j]; m != 1 {
			for d := range out {
				out[d] *= m
			}
		}
		r := rows[j*stride:]
		for b := range len(out) / 32 {
			blk := r[b*Q8_0BlockBytes : (b+1)*Q8_0BlockBytes]
			d := f16At(blk)
			for i, q := range blk[2:] {
				o := &out[b*32+i]
				*o = fma32(float32(int8(q))*d, s, *o)
			}
		}
	}
}

// FWHT rotates x in place by the orthonormal Walsh-Hadamard matrix of
// order len(x) (a power of two), as ggml's CPU backend does for a mul_mat
// with the Hadamard hint (ggml_compute_forward_fwht): every value times
// 1/sqrt(n) in float32, then the butterflies u+v, u−v with strides 1, 2,
// 4, … n/2. Each step is exact per element, so the order of the values
// within a stride does not matter. llama.cpp rotates q, k and v this way
// before a quantized KV cache stores them, and the attention output back
// (H·H = I).
func FWHT(x []float32) {
	n := len(x)
	scale := 1 / float32(math.Sqrt(float64(n)))
	for i := range x {
		x[i] *= scale
	}
	for l := 1; l < n; l <<= 1 {
		for i := 0; i < n; i += 2 * l {
			a, b := x[i:i+l], x[i+l:i+2*l]
			for j := range a {
				u, v := a[j], b[j]
				a[j], b[j] = u+v, u-v
			}
		}
	}
}
