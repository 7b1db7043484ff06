//go:build !amd64

package compute

func dotRowsAsm(q, k *float32, stride, n, hd int, out *float32) { panic("no assembly") }

func vkqRowsAsm(out, v *float32, stride, n, hd int, ms, vs *float32) { panic("no assembly") }

func dotRows64Asm(q, k *float32, stride, n, hd int, out *float32) { panic("no assembly") }

type (
	dotGroupFunc func(q, k *float32, kstride, n int, out *float32, ostride int)
	vkqGroupFunc func(out, v *float32, vstride, n int, ms, vs *float32, sstride int)
)

func groupKernels(g, hd int) (dotGroupFunc, vkqGroupFunc) { return nil, nil }

func maxGroup(hd int) int { return 1 }

func roundF16sAsm(dst, src []float32) int { return 0 }

func softmaxScan(vs, ms []float32, scale float32) { softmaxScanGeneric(vs, ms, scale) }

func softmaxSum(vs, ms []float32) float32 { return softmaxSumGeneric(vs, ms) }
