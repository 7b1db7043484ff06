//go:build !amd64 && !arm64

package compute

func quantizeQ8_0Asm(x []float32, y []blockQ8_0, c int32) {
	quantizeRowQ8_0Generic(x, y)
	setCorr(y, c)
}

func quantizeQ8_1Asm(x []float32, y []blockQ8_1) { quantizeRowQ8_1Generic(x, y) }

func quantizeQ8_KAsm(x []float32, y []blockQ8_K) { quantizeRowQ8_KGeneric(x, y) }
