package compute

//go:noescape
func quantizeQ8_0AVX2(x *float32, y *blockQ8_0, nb int, c int32)

// quantizeQ8_0Asm quantizes len(y) blocks of x with quantizeQ8_0AVX2,
// setting corr to c·Σqs.
func quantizeQ8_0Asm(x []float32, y []blockQ8_0, c int32) { quantizeQ8_0AVX2(&x[0], &y[0], len(y), c) }

//go:noescape
func quantizeQ8_1AVX2(x *float32, y *blockQ8_1, nb int)

// quantizeQ8_1Asm quantizes len(y) blocks of x with quantizeQ8_1AVX2.
func quantizeQ8_1Asm(x []float32, y []blockQ8_1) { quantizeQ8_1AVX2(&x[0], &y[0], len(y)) }

//go:noescape
func quantizeQ8_KAVX2(x *float32, y *blockQ8_K, nb int)

// quantizeQ8_KAsm quantizes len(y) super-blocks of x with quantizeQ8_KAVX2
// (all but bsums).
func quantizeQ8_KAsm(x []float32, y []blockQ8_K) { quantizeQ8_KAVX2(&x[0], &y[0], len(y)) }
