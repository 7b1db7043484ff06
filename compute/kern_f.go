package compute

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Float weights (F32, F16, BF16) are multiplied as stored, converted to
// float32 on the fly, against float32 activations (floatActs): F32 weights
// take the caller's values, F16 and BF16 weights values rounded to f16
// (bf16) first, as ggml converts them to the weight's vec_dot_type. The
// weights are never copied: a safetensors or GGUF mapping is used as is.
//
// Every output is one 16-lane sum, the same whatever the number of
// activation rows, the split over workers and the kernel shape:
//
//   - F32, F16: k is walked in steps of 16; lane l accumulates element
//     16c+l of step c by a fused multiply-add.
//   - BF16: steps of 32; lane l accumulates element 32c+2l+1, then 32c+2l
//     (VDPBF16PS's order), by fused multiply-adds. With AVX512_BF16 the
//     kernels run VDPBF16PS itself, which flushes denormal inputs and
//     results to zero (dotBF16DP); elsewhere they use FMAs (dotFloat). The
//     two agree unless a weight, an activation or a partial sum is below
//     2⁻¹²⁶ in magnitude.
//
// The lanes are then summed pairwise (sumLanes) and the k mod step last
// elements added one by one, by fused multiply-adds, in Go. dotFloat and
// dotBF16DP write that arithmetic out; they are the Generic kernels and the
// references the assembly is tested against bit for bit.

// floatRN is the most activation rows a float kernel takes at once.
const floatRN = 6

// floatPad is how many values longer than k a row of prepared activations
// is: rows a power of two bytes apart would all fall in the same L1 cache
// sets as the weight rows the kernel reads beside them.
const floatPad = 16

// floatChunkBytes bounds the weight rows a worker runs over all activation
// rows before moving on (at least 8, rounded down to whole groups of the
// main kernel's rows): small enough to stay near the L1 cache. 256 KB was a quarter slower for F32 at k = 2048 (BenchmarkMatMulFloat).
const floatChunkBytes = 64 << 10

// floatBlockBytes bounds the activation rows every chunk of weight rows
// runs over before the next block of rows (at least rnMax rows): under
// half of a Zen 3 core's 512 KB L2 (384 KB, half of a Zen 4 or 5 core's
// 1 MB, left little room there for the chunk and other work; 128 to 192 KB
// ran F16 at m = 1600 2-8% faster on a loaded Zen 3, within the noise for
// F32).
const floatBlockBytes = 192 << 10

// floatFunc is a float kernel (see kern_f_amd64.s): ng groups of RM weight
// rows, ws bytes apart, against RN activation rows, xs bytes apart, over nk
// steps; output (i, j) of group g at out + 4·(g·RM + i) + j·os bytes. Its
// first npf steps prefetch a cache line each, from pf on, into L2. (Two a
// step, to cover F32's whole next chunk at m = 16, was 15% slower.)
type floatFunc func(w *byte, ws int, x *byte, xs int, out *float32, os int, ng, nk int, pf *byte, npf int)

// floatKernel is the assembly for one float weight type on one ISA.
type floatKernel struct {
	step  int  // elements per step: 16, or 32 for BF16
	dp    bool // BF16 by VDPBF16PS: the activations stay bf16 (dotBF16DP's arithmetic)
	xh    bool // F16 against activations kept as f16 (dotFloat's arithmetic)
	rnMax int  // activation rows per call, at most floatRN
	// main[rn] runs rm[rn] weight rows per group, one[rn] one.
	rm        [floatRN + 1]int
	main, one [floatRN + 1]floatFunc
}

// floatActs prepares the activations for float weights of type t, rows
// k+floatPad values apart: x as is for F32; rounded to f16 for F16; for
// BF16 rounded to bf16 and, per step of 32, split into the 16 odd elements
// then the 16 even ones (bf16Split), or kept as bf16 in mm.xh for VDPBF16PS
// (2·floatPad values apart; the result is then nil); F16's likewise kept as
// f16 in mm.xh for the f16h kernels.
func (mm *MatMuler) floatActs(x []float32, m, k int, t DType, fk *floatKernel) []float32 {
	ld := k + floatPad
	if fk != nil && (fk.dp || fk.xh) {
		ldh := k + 2*floatPad
		xh := grow(&mm.xh, m*ldh)
		for r := range m {
			if fk.dp {
				toBF16(x[r*k:(r+1)*k], xh[r*ldh:r*ldh+k])
			} else {
				toF16(x[r*k:(r+1)*k], xh[r*ldh:r*ldh+k])
			}
		}
		return nil
	}
	xr := grow(&mm.xr, m*ld)
	for r := range m {
		src, dst := x[r*k:(r+1)*k], xr[r*ld:r*ld+k]
		switch t {
		case F32:
			copy(dst, src)
		case F16:
			roundF16(src, dst)
		default:
			bf16Split(src, dst)
		}
	}
	return xr
}

// bf16SplitRef rounds x to bf16 values into dst, each whole step of 32 as its
// odd elements then its even ones; the tail stays in order.
func bf16SplitRef(x, dst []float32) {
	round := func(v float32) float32 { return BF16ToFP32(FP32ToBF16(v)) }
	c := 0
	for ; c+32 <= len(x); c += 32 {
		for l := range 16 {
			dst[c+l] = round(x[c+2*l+1])
			dst[c+16+l] = round(x[c+2*l])
		}
	}
	for i := c; i < len(x); i++ {
		dst[i] = round(x[i])
	}
}

// floatRows computes the job's output columns [lo, hi) for float weights.
func (mm *MatMuler) floatRows(fk *floatKernel, lo, hi int) {
	j := &mm.job
	w, m := j.w, j.m
	k, n, rb := w.Cols(), w.Rows(), w.RowBytes()
	ld := k + floatPad
	if mm.GGMLBatch && m == 1 && w.Type == F32 { // ggml's one-row path (kern_f_ggml.go)
		for r := lo; r < hi; r++ {
			j.out[r] = dotF32Vec(w.Row(r), j.x[:k])
		}
		return
	}
	if fk == nil {
		for t := range m {
			x := j.x[t*ld : t*ld+k]
			for r := lo; r < hi; r++ {
				j.out[t*n+r] = dotFloat(w.Type, w.Row(r), x, k)
			}
		}
		return
	}
	var xb []byte // the activations as the kernels read them
	xs := ld * 4
	if fk.dp || fk.xh {
		ld = k + 2*floatPad
		xs = ld * 2
		xb = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(mm.xh))), m*xs)
	} else {
		xb = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(j.x))), m*xs)
	}
	nk := k / fk.step
	g := 8 // chunks of whole groups of the main kernel's rows
	if rm := fk.rm[fk.rnMax]; g%rm != 0 {
		g = 4 * rm
	}
	chunk := max(g, floatChunkBytes/rb/g*g)
	// The activation rows go in blocks that stay in L2 while every chunk
	// of weight rows runs over them: all of a large m streamed from
	// memory once a chunk ran 1600 rows by 1280 a quarter slower than 96
	// (BenchmarkMatMulFloatTall).
	mb := max(fk.rnMax, floatBlockBytes/xs/fk.rnMax*fk.rnMax)
	for m0 := 0; m0 < m; m0 += mb {
		me := min(m, m0+mb)
		mm.floatBlock(fk, xb, xs, m0, me, lo, hi, chunk, nk)
	}
	if k0 := nk * fk.step; k0 < k { // the tail, element by element
		floatTail(j.out, w, m, n, k0, lo, hi, func(t, i int) float32 {
			if fk.dp {
				return BF16ToFP32(mm.xh[t*ld+i])
			} else if fk.xh {
				return FP16ToFP32(mm.xh[t*ld+i])
			}
			return j.x[t*ld+i]
		})
	}
}

// floatBlock is floatRows' output columns [lo, hi) of activation rows
// [m0, me), the weight rows in chunks of chunk rows.
func (mm *MatMuler) floatBlock(fk *floatKernel, xb []byte, xs, m0, me, lo, hi, chunk, nk int) {
	j := &mm.job
	w := j.w
	n, rb := w.Rows(), w.RowBytes()
	for r0 := lo; r0 < hi; r0 += chunk {
		nr := min(chunk, hi-r0)
		// As few calls as rnMax allows, their rows balanced (16 rows are
		// three calls of 6, 5 and 5, not two of 6 and one of 4): every
		// output's arithmetic is the same whatever its call.
		calls := (me - m0 + fk.rnMax - 1) / fk.rnMax
		// The first call reads the chunk from memory; the others, which
		// find it in L2, prefetch the next chunk, a share each, so that
		// memory and arithmetic overlap (batched decode).
		pf, lines, share := 0, 0, 0 // pf: a byte offset in w.Data
		if next := r0 + nr; calls > 1 && next < hi {
			pf, lines = next*rb, min(chunk, hi-next)*rb/64
			share = (lines + calls - 2) / (calls - 1)
		}
		for t, c := m0, 0; t < me; c++ {
			rn := (me - t + calls - c - 1) / (calls - c)
			rm := fk.rm[rn]
			ng := nr / rm
			wr := &w.Data[r0*rb]
			pfp, npf := wr, 0
			if c > 0 && lines > 0 {
				pfp, npf = &w.Data[pf], min(share, lines)
				pf, lines = pf+64*npf, lines-npf
			}
			if ng > 0 {
				fk.main[rn](wr, rb, &xb[t*xs], xs, &j.out[t*n+r0], n*4, ng, nk, pfp, npf)
			}
			if r := r0 + ng*rm; r < r0+nr {
				fk.one[rn](&w.Data[r*rb], rb, &xb[t*xs], xs, &j.out[t*n+r], n*4, r0+nr-r, nk, wr, 0)
			}
			t += rn
		}
	}
}

// floatTail adds weight elements [k0, k) of rows [lo, hi) of w times the
// activations' (act(t, i): row t, element i), one by one by fused
// multiply-adds, to the m rows of n outputs in out. Each row's tail (fewer
// than a step's 32 values) is read once, not once per activation row (it
// cost a few percent of a product of k = 3420 read element by element), the
// arithmetic that of dotFloat's tail. It allocates nothing (a decode step
// must not: TestForwardAllocs).
func floatTail(out []float32, w *Tensor, m, n, k0, lo, hi int, act func(t, i int) float32) {
	var wb [32]float32
	wt := wb[:w.Cols()-k0]
	for r := lo; r < hi; r++ {
		row := w.Row(r)
		for i := range wt {
			wt[i] = weightAt(w.Type, row, k0+i)
		}
		for t := range m {
			s := out[t*n+r]
			for i, wv := range wt {
				s = fmaExact32(wv, act(t, k0+i), s)
			}
			out[t*n+r] = s
		}
	}
}

// dotFloat is the float kernels' arithmetic for one output: weight row w
// (k values of type t) against x, prepared by floatActs.
func dotFloat(t DType, w []byte, x []float32, k int) float32 {
	var acc [16]float32
	step := 16
	if t == BF16 {
		step = 32
	}
	k0 := k / step * step
	var wc [32]float32 // the step's weights, in the order x holds them
	for c := 0; c < k0; c += step {
		switch t {
		case F32:
			copy(wc[:16], f32View(w[4*c:4*c+64]))
		case F16:
			for l := range 16 {
				wc[l] = FP16ToFP32(binary.LittleEndian.Uint16(w[2*(c+l):]))
			}
		default:
			for l := range 16 {
				u := binary.LittleEndian.Uint32(w[2*(c+2*l):])
				wc[l], wc[16+l] = math.Float32frombits(u&0xffff0000), math.Float32frombits(u<<16)
			}
		}
		lanesFMA(&acc, wc[:16], x[c:c+16], t != F32)
		if step == 32 {
			lanesFMA(&acc, wc[16:], x[c+16:c+32], true)
		}
	}
	s := sumLanes(&acc)
	for i := k0; i < k; i++ {
		s = fmaExact32(weightAt(t, w, i), x[i], s)
	}
	return s
}

// dotBF16DP is the arithmetic of the VDPBF16PS kernels for one output: BF16
// weight row w against the bf16 activations x. VDPBF16PS treats denormal
// inputs as zero, adds each exact product to the lane with one rounding (to
// nearest even), and flushes a denormal result to zero. (Measured on an AMD
// EPYC with AVX512_BF16 by TestBF16DPDenormals: a product below 2⁻¹²⁶ is
// kept when added to a normal sum, and the odd element goes first.)
func dotBF16DP(w []byte, x []uint16, k int) float32 {
	var acc [16]float32
	k0 := k / 32 * 32
	for c := 0; c < k0; c += 32 {
		for l := range 16 {
			i := c + 2*l
			acc[l] = dpAdd(acc[l], binary.LittleEndian.Uint16(w[2*i+2:]), x[i+1])
			acc[l] = dpAdd(acc[l], binary.LittleEndian.Uint16(w[2*i:]), x[i])
		}
	}
	s := sumLanes(&acc)
	for i := k0; i < k; i++ {
		s = fmaExact32(weightAt(BF16, w, i), BF16ToFP32(x[i]), s)
	}
	return s
}

// dpAdd is one of VDPBF16PS's two steps: acc + a·b with denormal inputs
// and results flushed.
func dpAdd(acc float32, a, b uint16) float32 {
	return ftz(fmaExact32(ftz(BF16ToFP32(a)), ftz(BF16ToFP32(b)), ftz(acc)))
}

// ftz returns ±0 for a denormal f, else f.
func ftz(f float32) float32 {
	if u := math.Float32bits(f); u&0x7f800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return f
}

// sumLanes adds the 16 lanes of a float kernel pairwise: halves, then
// quarters, then pairs.
func sumLanes(a *[16]float32) float32 {
	var s8 [8]float32
	for i := range s8 {
		s8[i] = a[i] + a[i+8]
	}
	s4 := [4]float32{s8[0] + s8[4], s8[1] + s8[5], s8[2] + s8[6], s8[3] + s8[7]}
	return (s4[0] + s4[2]) + (s4[1] + s4[3])
}

// weightAt returns value i of the float weight row w of type t.
func weightAt(t DType, w []byte, i int) float32 {
	switch t {
	case F16:
		return FP16ToFP32(binary.LittleEndian.Uint16(w[2*i:]))
	case BF16:
		return BF16ToFP32(binary.LittleEndian.Uint16(w[2*i:]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:]))
}

// lanesFMA sets acc[l] = fmaExact32(w[l], x[l], acc[l]). With narrow set
// (f16 or bf16 operands, at most 11 significant bits each) a float32 product
// in the normal range is exact, and one float32 addition is the FMA.
func lanesFMA(acc *[16]float32, w, x []float32, narrow bool) {
	w, x = w[:16], x[:16]
	for l := range acc {
		if narrow {
			p := float32(w[l] * x[l])
			if a := abs32(p); a > 0x1p-126 && a <= math.MaxFloat32 || w[l] == 0 || x[l] == 0 {
				acc[l] += p
				continue
			}
		}
		acc[l] = fmaExact32(w[l], x[l], acc[l])
	}
}

// fmaExact32 returns a·b + c rounded once to float32, as VFMADD231PS does
// (fma32 rounds twice, and differs about once in 2²⁹). The product is exact
// in float64; when it is exact in float32 too (always for f16 and most bf16
// products), one float32 addition rounds the sum.
func fmaExact32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	if p32 := float32(p); float64(p32) == p {
		return p32 + c
	}
	return roundOddSum(p, float64(c))
}

// roundOddSum returns p + c rounded to float32: rounded to 53 bits by
// rounding to odd, from which rounding to float32 is correct (53 ≥ 24 + 2).
func roundOddSum(p, c float64) float32 {
	s := float64(p + c)
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bb := float64(s - p) // TwoSum: e = p + c − s exactly
	e := (p - float64(s-bb)) + (c - bb)
	if e != 0 {
		u := math.Float64bits(s)
		if (e > 0) != (s > 0) { // |p + c| < |s|: truncate toward zero
			u--
		}
		s = math.Float64frombits(u | 1)
	}
	return float32(s)
}
