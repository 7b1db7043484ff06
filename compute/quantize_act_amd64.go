package compute

//go:noescape
func quantizeQ8_0AVX2(x *float32, y *blockQ8_0, nb int)

// quantizeQ8_0Asm quantizes len(y) blocks of x with quantizeQ8_0AVX2.
func quantizeQ8_0Asm(x []float32, y []blockQ8_0) { quantizeQ8_0AVX2(&x[0], &y[0], len(y)) }
