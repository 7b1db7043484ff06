package compute

import "math"

// Attention helpers over rows of an f16 KV cache: n rows of at least hd
// f16 values (their bits, as uint16), stride values apart (one paged-cache
// block holds consecutive rows of a layer, so a block is one call). The
// kernels convert each value to float32 as they read it (exact), so the
// arithmetic is that of float32 rows holding the same values. The Q8_0
// cache's helpers are in attn_q8.go.

// DotRows sets out[j] = Σ_d q[d]·rows[j·stride + d] for j < n as
// ggml_vec_dot_f16 does on AVX512, the kernel of llama.cpp's CPU flash
// attention for f16 keys: for len(q) a multiple of 64, four 16-lane float32
// FMA accumulators reduced in a fixed tree; otherwise each product in
// float32 (exact for f16-valued inputs) and the sum in float64, as ggml does
// for the values past the last multiple of 64 (all of them for heads
// shorter than 64). The order is fixed: the same for a row wherever it sits
// and whatever n is.
func DotRows(out, q []float32, rows []uint16, stride, n int) {
	hd := len(q)
	if n == 0 {
		return
	}
	_ = rows[(n-1)*stride+hd-1]
	_ = out[n-1]
	switch {
	case hostISA > Generic && hd%64 == 0 && hd > 0: // amd64's and arm64's levels
		dotRows64Asm(&q[0], &rows[0], stride*2, n, hd, &out[0])
	case hostISA > Generic && hd%8 == 0 && hd > 0 && hd < 64: // amd64's and arm64's levels
		dotRowsAsm(&q[0], &rows[0], stride*2, n, hd, &out[0])
	default:
		dotRowsGeneric(out, q, rows, stride, n)
	}
}

// dotRowsGeneric is DotRows in Go, in the assembly's order: for hd a
// multiple of 64 ggml's FMA lanes and reduction tree; below 64 with hd a
// multiple of 8 float64 lanes 0..3 and 4..7 of each eight products, then a
// fixed reduction; otherwise a float64 sum in order (ggml: the values past
// the last multiple of 64 added to the float32 lanes' sum in float64).
func dotRowsGeneric(out, q []float32, rows []uint16, stride, n int) {
	hd := len(q)
	n64 := hd &^ 63
	for j := range n {
		r := rows[j*stride : j*stride+hd]
		var s float64
		if n64 > 0 {
			var sum [4][16]float32
			for i := 0; i < n64; i += 64 {
				for a := range sum {
					for l := range 16 {
						d := i + 16*a + l
						sum[a][l] = fma32(FP16ToFP32(r[d]), q[d], sum[a][l])
					}
				}
			}
			var acc [8]float32
			for l := range 16 {
				sum[0][l] += sum[2][l]
				sum[1][l] += sum[3][l]
				sum[0][l] += sum[1][l]
			}
			for l := range acc {
				acc[l] = sum[0][8+l] + sum[0][l]
			}
			s = float64(hsum8(&acc))
		}
		if rest := hd - n64; rest%8 == 0 && n64 == 0 {
			var acc [8]float64
			for d, v := range q {
				acc[d%8] += float64(FP16ToFP32(r[d]) * v)
			}
			t0, t1 := acc[0]+acc[4], acc[1]+acc[5]
			t2, t3 := acc[2]+acc[6], acc[3]+acc[7]
			s = (t0 + t2) + (t1 + t3)
		} else {
			for d := n64; d < hd; d++ {
				s += float64(FP16ToFP32(r[d]) * q[d])
			}
		}
		out[j] = float32(s)
	}
}

// VKQRowsF16 is the value accumulation of ggml's CPU flash attention with
// an f16 accumulator: for each row j in order, out = f16(out·ms[j]), then
// out = f16(fma(rows[j·stride + d], vs[j], out)) (d < len(out)). ms[j] is 1
// where the running maximum did not change.
func VKQRowsF16(out []float32, rows []uint16, stride int, ms, vs []float32) {
	hd, n := len(out), len(vs)
	if n == 0 || hd == 0 {
		return
	}
	_ = rows[(n-1)*stride+hd-1]
	_ = ms[n-1]
	if hostISA > Generic && hd%8 == 0 {
		vkqRowsAsm(&out[0], &rows[0], stride*2, n, hd, &ms[0], &vs[0])
		return
	}
	vkqRowsGeneric(out, rows, stride, ms, vs)
}

func vkqRowsGeneric(out []float32, rows []uint16, stride int, ms, vs []float32) {
	for j, s := range vs {
		v := rows[j*stride : j*stride+len(out)]
		for d := range out {
			o := RoundF16(out[d] * ms[j])
			out[d] = RoundF16(fma32(FP16ToFP32(v[d]), s, o))
		}
	}
}

// F16s sets dst[i] to the f16 nearest src[i] (ties to even), eight at a
// time in assembly where the CPU has F16C: FP32ToFP16 for every value.
func F16s(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i := f16sAsm(dst, src); i < len(src); i++ {
		dst[i] = FP32ToFP16(src[i])
	}
}

// Exp sets x[i] = Expf(x[i]), glibc's expf as ggml's flash attention
// calls it, four values at a time in assembly where the CPU has AVX2.
func Exp(x []float32) {
	for i := expInPlace(x); i < len(x); i++ {
		x[i] = Expf(x[i])
	}
}

// AttnGroup is how many query heads that share a KV head DotRowsGroup and
// VKQRowsF16Group take at once with one pass over the rows for head_dim hd
// on this CPU (1: they run the heads one by one).
func AttnGroup(hd int) int { return maxGroup(hd) }

// MaxAttnGroup bounds AttnGroup for every head size.
const MaxAttnGroup = 4

// The grouped kernels' signatures (G query heads of one KV head a pass over
// the cache rows: attn512_amd64.s, attn_group_arm64.s).
type (
	dotGroupFunc func(q *float32, k *uint16, kstride, n int, out *float32, ostride int)
	vkqGroupFunc func(out *float32, v *uint16, vstride, n int, ms, vs *float32, sstride int)

	dotGroupQ8Func func(q *blockQ8_0, k *byte, kstride, n int, out *float32, ostride int)
	vkqGroupQ8Func func(out *float32, v *byte, vstride, n int, ms, vs *float32, sstride int)
)

// groupKernel is an architecture's pair of grouped kernels for g heads of
// head_dim hd.
type groupKernel[D, V any] struct {
	g, hd int
	dot   D
	vkq   V
}

// findGroup returns table's kernels for g heads of head_dim hd, or zero
// values.
func findGroup[D, V any](table []groupKernel[D, V], g, hd int) (D, V) {
	for _, k := range table {
		if k.g == g && k.hd == hd {
			return k.dot, k.vkq
		}
	}
	var dot D
	var vkq V
	return dot, vkq
}

// largestGroup is the most heads one of table's kernels takes for head_dim
// hd, 1 where none takes it.
func largestGroup[D, V any](table []groupKernel[D, V], hd int) int {
	most := 1
	for _, k := range table {
		if k.hd == hd {
			most = max(most, k.g)
		}
	}
	return most
}

// DotRowsGroup is DotRows for g query heads against the same rows: q holds
// the heads' queries one after the other (g·hd values) and head i's n
// results go to out[i·ostride:]. Each head's results equal DotRows's bit
// for bit, whatever g is.
func DotRowsGroup(out []float32, ostride int, q []float32, g int, rows []uint16, stride, n int) {
	hd := len(q) / g
	if n == 0 {
		return
	}
	_ = rows[(n-1)*stride+hd-1]
	_ = out[(g-1)*ostride+n-1]
	if dot, _ := groupKernels(g, hd); dot != nil {
		dot(&q[0], &rows[0], stride*2, n, &out[0], ostride*4)
		return
	}
	for i := range g {
		DotRows(out[i*ostride:i*ostride+n], q[i*hd:(i+1)*hd], rows, stride, n)
	}
}

// VKQRowsF16Group is VKQRowsF16 for g heads over the same rows: out holds
// the heads' accumulators one after the other (g·hd values), head i's
// rescales and weights are ms[i·sstride:] and vs[i·sstride:] (n each).
// Each head's result equals VKQRowsF16's bit for bit, whatever g is.
func VKQRowsF16Group(out []float32, g int, rows []uint16, stride int, ms, vs []float32, sstride, n int) {
	hd := len(out) / g
	if n == 0 {
		return
	}
	_ = rows[(n-1)*stride+hd-1]
	_ = ms[(g-1)*sstride+n-1]
	_ = vs[(g-1)*sstride+n-1]
	if _, vkq := groupKernels(g, hd); vkq != nil {
		vkq(&out[0], &rows[0], stride*2, n, &ms[0], &vs[0], sstride*4)
		return
	}
	for i := range g {
		o := i * sstride
		VKQRowsF16(out[i*hd:(i+1)*hd], rows, stride, ms[o:o+n], vs[o:o+n])
	}
}

// OnlineSoftmax turns the raw scores vs of one head over the cached
// positions into the weights and rescales of ggml's online softmax (its CPU
// flash attention) and returns the weights' sum S. With s = vs[j]·scale
// and M the running max before j: where s > M the max moves, ms[j] =
// e^(M−s) rescales the accumulator and vs[j] = 1; else ms[j] = 1 and vs[j]
// = e^(s−M). S = float32(fma(S, ms[j], vs[j])) in order. It runs in three
// passes: the running max and each position's exponent (ms marks where the
// max moved), the exponentials at once (Exp), then the rescales and the
// sum; the first and last in assembly where the CPU has AVX2.
func OnlineSoftmax(vs, ms []float32, scale float32) float32 {
	if len(vs) == 0 {
		return 0
	}
	ms = ms[:len(vs)]
	softmaxScan(vs, ms, scale)
	Exp(vs)
	return softmaxSum(vs, ms)
}

func softmaxScanGeneric(vs, ms []float32, scale float32) {
	M := float32(math.Inf(-1))
	for j, sc := range vs {
		sc = float32(sc * scale) // explicit conversion: no fused multiply-add, as amd64 computes it
		if sc > M {
			vs[j], ms[j] = M-sc, 0
			M = sc
		} else {
			vs[j], ms[j] = sc-M, 1
		}
	}
}

func softmaxSumGeneric(vs, ms []float32) float32 {
	var S float32
	for j := range vs {
		if ms[j] == 0 {
			ms[j], vs[j] = vs[j], 1
		}
		S = float32(math.FMA(float64(S), float64(ms[j]), float64(vs[j])))
	}
	return S
}
