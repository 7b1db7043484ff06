//go:build !amd64 && !arm64

package compute

func expInPlace(x []float32) int { return 0 }
