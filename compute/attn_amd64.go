package compute

//go:noescape
func dotRowsAVX2(q *float32, k *uint16, stride, n, hd int, out *float32)

func dotRowsAsm(q *float32, k *uint16, stride, n, hd int, out *float32) {
	dotRowsAVX2(q, k, stride, n, hd, out)
}

//go:noescape
func vkqRowsF16AVX2(out *float32, v *uint16, stride, n, hd int, ms, vs *float32)

func vkqRowsAsm(out *float32, v *uint16, stride, n, hd int, ms, vs *float32) {
	vkqRowsF16AVX2(out, v, stride, n, hd, ms, vs)
}

//go:noescape
func dotRows64AVX2(q *float32, k *uint16, stride, n, hd int, out *float32)

func dotRows64Asm(q *float32, k *uint16, stride, n, hd int, out *float32) {
	dotRows64AVX2(q, k, stride, n, hd, out)
}

//go:noescape
func roundF16sAVX2(dst, src *float32, n int)

// roundF16sAsm rounds the first multiple of 8 values where the CPU has
// F16C and returns how many it did.
func roundF16sAsm(dst, src []float32) int {
	return asmHead(AVX2, 8, len(src), func(n int) { roundF16sAVX2(&dst[0], &src[0], n) })
}

//go:noescape
func f16sAVX2(dst *uint16, src *float32, n int)

// f16sAsm converts the first multiple of 8 values where the CPU has F16C
// and returns how many it did.
func f16sAsm(dst []uint16, src []float32) int {
	return asmHead(AVX2, 8, len(src), func(n int) { f16sAVX2(&dst[0], &src[0], n) })
}

//go:noescape
func softmaxScanAVX2(vs, ms *float32, n int, scale float32)

//go:noescape
func softmaxSumAVX2(vs, ms *float32, n int) float32

func softmaxScan(vs, ms []float32, scale float32) {
	if hostISA < AVX2 {
		softmaxScanGeneric(vs, ms, scale)
		return
	}
	softmaxScanAVX2(&vs[0], &ms[0], len(vs), scale)
}

func softmaxSum(vs, ms []float32) float32 {
	if hostISA < AVX2 {
		return softmaxSumGeneric(vs, ms)
	}
	return softmaxSumAVX2(&vs[0], &ms[0], len(vs))
}

//go:noescape
func vkqRowsQ8_0AVX2(out *float32, v *byte, stride, n, nb int, ms, vs *float32)

func vkqRowsQ8_0Asm(out *float32, v *byte, stride, n, nb int, ms, vs *float32) {
	vkqRowsQ8_0AVX2(out, v, stride, n, nb, ms, vs)
}

// dotRowsQ8_0Asm runs DotRowsQ8_0 with kern_q_amd64.s's one-row Q8_0
// kernels (ggml's lane order), a call per row; false where the CPU has no
// AVX2.
func dotRowsQ8_0Asm(out []float32, q []blockQ8_0, rows []byte, stride, n int) bool {
	var k func(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)
	switch {
	case hostISA >= AVX512VNNI:
		k = q8_0LanesX1VNNI
	case hostISA >= AVX2:
		k = q8_0LanesX1AVX2
	default:
		return false
	}
	for j := range n {
		k(&rows[j*stride], &q[0], 0, &out[j], 0, 1, len(q))
	}
	return true
}
