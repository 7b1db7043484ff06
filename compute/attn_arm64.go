package compute

// The f16 KV cache's key dot product and the f16 conversions of
// attn_arm64.s (the rest of the attention helpers run in Go on arm64:
// attn_other.go).

// dotRows64Asm is DotRows for hd a multiple of 64 (stride in bytes).
func dotRows64Asm(q *float32, k *uint16, stride, n, hd int, out *float32) {
	dotRows64NEON(q, k, stride, n, hd, out)
}

// roundF16sAsm rounds the first multiple of 8 values and returns how many
// it did.
func roundF16sAsm(dst, src []float32) int {
	return asmHead(NEON, 8, len(src), func(n int) { roundF16sNEON(&dst[0], &src[0], n) })
}

// f16sAsm converts the first multiple of 8 values and returns how many it
// did.
func f16sAsm(dst []uint16, src []float32) int {
	return asmHead(NEON, 8, len(src), func(n int) { f16sNEON(&dst[0], &src[0], n) })
}
