package compute

//go:noescape
func dotRowsAVX2(q *float32, k *float32, stride, n, hd int, out *float32)

func dotRowsAsm(q, k *float32, stride, n, hd int, out *float32) {
	dotRowsAVX2(q, k, stride, n, hd, out)
}

//go:noescape
func vkqRowsF16AVX2(out *float32, v *float32, stride, n, hd int, ms, vs *float32)

func vkqRowsAsm(out, v *float32, stride, n, hd int, ms, vs *float32) {
	vkqRowsF16AVX2(out, v, stride, n, hd, ms, vs)
}

//go:noescape
func dotRows64AVX2(q *float32, k *float32, stride, n, hd int, out *float32)

func dotRows64Asm(q, k *float32, stride, n, hd int, out *float32) {
	dotRows64AVX2(q, k, stride, n, hd, out)
}

//go:noescape
func roundF16sAVX2(dst, src *float32, n int)

// roundF16sAsm rounds the first multiple of 8 values where the CPU has
// F16C and returns how many it did.
func roundF16sAsm(dst, src []float32) int {
	n := len(src) &^ 7
	if hostISA < AVX2 || n == 0 {
		return 0
	}
	roundF16sAVX2(&dst[0], &src[0], n)
	return n
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
