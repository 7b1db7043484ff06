//go:build !amd64 && !arm64

package compute

func groupKernels(g, hd int) (dotGroupFunc, vkqGroupFunc) { return nil, nil }

func groupKernelsQ8(g, hd int) (dotGroupQ8Func, vkqGroupQ8Func) { return nil, nil }

func maxGroup(hd int) int { return 1 }

func softmaxScan(vs, ms []float32, scale float32) { softmaxScanGeneric(vs, ms, scale) }

func softmaxSum(vs, ms []float32) float32 { return softmaxSumGeneric(vs, ms) }
