//go:build !amd64 && !arm64

package compute

type (
	dotGroupFunc func(q *float32, k *uint16, kstride, n int, out *float32, ostride int)
	vkqGroupFunc func(out *float32, v *uint16, vstride, n int, ms, vs *float32, sstride int)
)

func groupKernels(g, hd int) (dotGroupFunc, vkqGroupFunc) { return nil, nil }

type (
	dotGroupQ8Func func(q *blockQ8_0, k *byte, kstride, n int, out *float32, ostride int)
	vkqGroupQ8Func func(out *float32, v *byte, vstride, n int, ms, vs *float32, sstride int)
)

func groupKernelsQ8(g, hd int) (dotGroupQ8Func, vkqGroupQ8Func) { return nil, nil }

func maxGroup(hd int) int { return 1 }

func softmaxScan(vs, ms []float32, scale float32) { softmaxScanGeneric(vs, ms, scale) }

func softmaxSum(vs, ms []float32) float32 { return softmaxSumGeneric(vs, ms) }
