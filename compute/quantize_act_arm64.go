package compute

// The activation quantizers of quantize_act_arm64.s.

// quantizeQ8_0Asm quantizes len(y) blocks of x with quantizeQ8_0NEON,
// setting corr to c·Σqs.
func quantizeQ8_0Asm(x []float32, y []blockQ8_0, c int32) { quantizeQ8_0NEON(&x[0], &y[0], len(y), c) }

// quantizeQ8_1Asm quantizes len(y) blocks of x with quantizeQ8_1NEON.
func quantizeQ8_1Asm(x []float32, y []blockQ8_1) { quantizeQ8_1NEON(&x[0], &y[0], len(y)) }

// quantizeQ8_KAsm quantizes len(y) super-blocks of x with quantizeQ8_KNEON
// (all but bsums).
func quantizeQ8_KAsm(x []float32, y []blockQ8_K) { quantizeQ8_KNEON(&x[0], &y[0], len(y)) }
