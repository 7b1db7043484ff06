//go:build !amd64 && !arm64

package compute

func dotRows64Asm(q *float32, k *uint16, stride, n, hd int, out *float32) { panic("no assembly") }

func roundF16sAsm(dst, src []float32) int { return 0 }

func f16sAsm(dst []uint16, src []float32) int { return 0 }

func dotRowsAsm(q *float32, k *uint16, stride, n, hd int, out *float32) { panic("no assembly") }

func vkqRowsAsm(out *float32, v *uint16, stride, n, hd int, ms, vs *float32) { panic("no assembly") }

func vkqRowsQ8_0Asm(out *float32, v *byte, stride, n, nb int, ms, vs *float32) { panic("no assembly") }

func dotRowsQ8_0Asm(out []float32, q []blockQ8_0, rows []byte, stride, n int) bool { return false }
