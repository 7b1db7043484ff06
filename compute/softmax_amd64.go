package compute

//go:noescape
func softMaxMaxAVX2(x *float32, n int, scale float32) float32

//go:noescape
func softMaxExpAVX2(x *float32, n int, scale, mx float32) float64

//go:noescape
func softMaxScaleAVX2(x *float32, n int, s float32)

// fmafFMA is the CPU's float32 fused multiply-add (VFMADD231SS), for
// testing fmaf; it needs FMA (hostISA ≥ AVX2).
//
//go:noescape
func fmafFMA(a, b, c float32) float32

// softMaxAsm is softMaxGo with its loops over the whole eights of x in
// AVX2 and FMA (softmax_amd64.s), the tail in Go; it reports false, doing
// nothing, without AVX2 or a whole eight.
func softMaxAsm(x []float32, scale float32) bool {
	n := len(x) &^ 7
	if hostISA < AVX2 || n == 0 {
		return false
	}
	mx := softMaxMaxAVX2(&x[0], n, scale)
	for _, v := range x[n:] {
		mx = max(mx, float32(v*scale))
	}
	sum := softMaxExpAVX2(&x[0], n, scale, mx)
	for i := n; i < len(x); i++ {
		x[i] = Expf(float32(x[i]*scale) - mx) // explicit conversion: no fused multiply-add
		sum += float64(x[i])
	}
	inv := float32(1 / sum)
	softMaxScaleAVX2(&x[0], n, inv)
	for i := n; i < len(x); i++ {
		x[i] *= inv
	}
	return true
}
