package compute

//go:noescape
func siluMulAVX512(dst, gate, up *float32, n int)

//go:noescape
func siluMulAVX2(dst, gate, up *float32, n int)

// siluMul16 computes SiLUMul's whole groups of 16 (n values) in assembly
// where the CPU has AVX-512 (for VSCALEFPS) or AVX2 (siluMulGeneric's
// bits, its float64 fused multiply-adds four lanes at a time) and reports
// whether it did.
func siluMul16(dst, gate, up []float32, n int) bool {
	if hostISA < AVX2 || n == 0 {
		return false
	}
	_, _, _ = dst[n-1], gate[n-1], up[n-1]
	if hostISA < AVX512VNNI {
		siluMulAVX2(&dst[0], &gate[0], &up[0], n)
		return true
	}
	siluMulAVX512(&dst[0], &gate[0], &up[0], n)
	return true
}
