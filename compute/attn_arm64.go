package compute

// The f16 KV cache's key dot product of attn_arm64.s (the rest of the
// attention helpers run in Go on arm64: attn_other.go).

//go:generate sh -c "cd .. && python3 scripts/gen-attn-arm64.py > compute/attn_arm64.s"

//go:noescape
func dotRows64NEON(q *float32, k *uint16, stride, n, hd int, out *float32)

// dotRows64Asm is DotRows for hd a multiple of 64 (stride in bytes).
func dotRows64Asm(q *float32, k *uint16, stride, n, hd int, out *float32) {
	dotRows64NEON(q, k, stride, n, hd, out)
}
