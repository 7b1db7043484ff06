//go:build !amd64

package compute

func dotRowsAsm(q, k *float32, stride, n, hd int, out *float32)  { panic("no assembly") }
func axpyRowsAsm(out, v *float32, stride, n, hd int, p *float32) { panic("no assembly") }

func vkqRowsAsm(out, v *float32, stride, n, hd int, ms, vs *float32) { panic("no assembly") }

func dotRows64Asm(q, k *float32, stride, n, hd int, out *float32) { panic("no assembly") }
