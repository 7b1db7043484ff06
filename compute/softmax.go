package compute

import "math"

// SoftMax is ggml_soft_max_ext without a mask over one row. Where the CPU
// has AVX2 and FMA it computes what ggml's CPU backend computes on such a
// machine (ggml_vec_soft_max_f32's AVX2 branch), in assembly
// (softmax_amd64.s, softMaxGo's arithmetic in its order): x·scale (a
// rounded product, no fused multiply-add), then for each whole eight
// e = ggml_v_expf(x·scale − max) (ggmlVExpf: ggml's float32 polynomial with
// its fused multiply-adds, not glibc's expf) summed in float32 in the order
// of its AVX2 horizontal sum and then in float64; the tail of fewer than
// eight through Expf (glibc's expf) and summed in float64; each value then
// scaled by float32(1/sum). Elsewhere (arm64, older x86) softMaxExp: e^x by
// Exp (glibc's expf, vector kernels on arm64), summed the same way: other
// last bits, within the vision encoders' parity bounds, at Exp's speed
// (ggmlVExpf in Go, one lane at a time, costs about 40 ns a value).
func SoftMax(x []float32, scale float32) {
	if len(x) == 0 || softMaxAsm(x, scale) {
		return
	}
	softMaxExp(x, scale)
}

// softMaxExp is SoftMax where the CPU lacks AVX2: e^(x·scale − max) by Exp
// over the whole row, the sums and the scale as softMaxGo's.
func softMaxExp(x []float32, scale float32) {
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

// softMaxGo is SoftMax's AVX2 arithmetic in Go, the reference the
// assembly is tested against.
func softMaxGo(x []float32, scale float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, float32(v*scale))
	}
	var sum float64
	i := 0
	for ; i+7 < len(x); i += 8 {
		e := x[i : i+8 : i+8]
		for l, v := range e {
			e[l] = ggmlVExpf(float32(v*scale) - mx) // explicit conversion: no fused multiply-add
		}
		l0, l1, l2, l3 := e[0]+e[4], e[1]+e[5], e[2]+e[6], e[3]+e[7]
		sum += float64((l0 + l2) + (l1 + l3))
	}
	for ; i < len(x); i++ {
		x[i] = Expf(float32(x[i]*scale) - mx)
		sum += float64(x[i])
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// ggmlVExpf is one lane of ggml_v_expf's AVX2+FMA form (ggml-cpu/vec.h,
// ARM's optimized-routines vector expf): e^x from a degree-5 polynomial on
// x − n·ln2 (n = round(x/ln2)), scaled by 2ⁿ through the exponent bits,
// with ggml's split scaling for 126 < |n| ≤ 192 and 0 or +Inf beyond. Each
// step is the float32 operation ggml's intrinsic does (fmaf for
// _mm256_fmadd_ps and, negated, _mm256_fnmadd_ps), so the result is its
// bit for bit (TestGgmlVExpfAsm; TestGgmlVExpfPeer against ggml's own).
// vExpf is the AVX512 form: its polynomial's last step adds the 1 that
// this form adds as k, and it scales by VSCALEFPS.
func ggmlVExpf(x float32) float32 {
	const r = 0x1.8p23
	z := fmaf(x, 0x1.715476p+0, r)
	n := z - r
	b := fmaf(-n, 0x1.7f7d1cp-20, fmaf(-n, 0x1.62e4p-1, x))
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + 0x3f800000) // 2ⁿ for |n| ≤ 126
	u := b * b
	j := fmaf(fmaf(fmaf(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fmaf(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
		float32(0x1.ffffecp-1*b))
	an := abs32(n)
	if !(an > 126) { // not >: a NaN n takes this branch, as ggml's ordered compare does
		return fmaf(j, k, k)
	}
	var g uint32
	if n <= 0 {
		g = 0x82000000
	}
	s1 := math.Float32frombits(g + 0x7f000000)
	if an > 192 {
		return s1 * s1 // 0 or +Inf
	}
	s2 := math.Float32frombits(e - g)
	return fmaf(s2, j, s2) * s1
}

// fmaf is the float32 fused multiply-add a·b + c with one rounding, as
// VFMADD…PS computes it (round to nearest even). The float64 product of two
// float32 is exact, so s = p + c is p + c rounded once, and rounding s to
// float32 rounds p + c correctly unless s lies exactly halfway between two
// float32 while p + c ≠ s (double rounding). There the error t = p + c − s,
// exact by Knuth's TwoSum, breaks the tie: s moves one float64 step toward
// p + c before the rounding. The product is rounded by an explicit
// conversion so that no compiler fuses it.
func fmaf(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b))
	s := p + float64(c)
	// Halfway at a normal float32's 24 bits leaves the float64's 29 low
	// bits 1000…0; below 2⁻¹²⁶ fmafTie decides.
	if math.Float64bits(s)&(1<<29-1) == 1<<28 || math.Abs(s) < 0x1p-126 {
		s = fmafTie(p, float64(c), s)
	}
	return float32(s)
}

// fmafTie returns s = p + c (rounded to float64) or, where s lies halfway
// between two float32 and p + c ≠ s, s moved one float64 step toward
// p + c: then it rounds to float32 as p + c does.
func fmafTie(p, c, s float64) float64 {
	if a := math.Abs(s); a < 0x1p-126 { // float32 steps of 2⁻¹⁴⁹: halfway is an odd multiple of 2⁻¹⁵⁰
		m := float64(a * 0x1p150)
		if i := int64(m); float64(i) != m || i&1 == 0 {
			return s
		}
	}
	bb := s - p
	t := (p - (s - bb)) + (c - bb)
	if t == 0 {
		return s
	}
	u := math.Float64bits(s)
	if (t > 0) == (s > 0) {
		u++ // away from zero
	} else {
		u--
	}
	return math.Float64frombits(u)
}
