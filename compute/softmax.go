package compute

import "math"

// SoftMax is ggml_soft_max_ext without a mask over one row, as ggml's CPU
// backend computes it on x86-64 with AVX2: x·scale (a rounded product, no
// fused multiply-add), e^(x−max) by Exp, summed as ggml_vec_soft_max_f32
// sums them (eight at a time in float32, in the order of its AVX2
// horizontal sum, the eights and the tail in float64), each value then
// scaled by float32(1/sum). Its bits do not depend on the CPU: the
// assembly (softmax_amd64.s) does softMaxGo's arithmetic in its order.
func SoftMax(x []float32, scale float32) {
	if len(x) == 0 || softMaxAsm(x, scale) {
		return
	}
	softMaxGo(x, scale)
}

// softMaxGo is SoftMax in Go, the reference the assembly is tested
// against.
func softMaxGo(x []float32, scale float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, float32(v*scale))
	}
	for i, v := range x {
		x[i] = float32(v*scale) - mx // explicit conversion: no fused multiply-add
	}
	Exp(x)
	var sum float64
	i := 0
	for ; i+7 < len(x); i += 8 {
		e := x[i : i+8 : i+8]
		l0, l1, l2, l3 := e[0]+e[4], e[1]+e[5], e[2]+e[6], e[3]+e[7]
		sum += float64((l0 + l2) + (l1 + l3))
	}
	for ; i < len(x); i++ {
		sum += float64(x[i])
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}
