package compute

// The arm64 assembly for each weight type, per ISA level (NEON, DotProd,
// I8MM): the kernel of the highest level the CPU runs is bound to a tensor
// (kernel.go); a level without an entry takes the one below. A type
// without an entry runs its Go block dot product.

var asmQ8_0 = map[DType]*isaKernels[blockQ8_0]{
	Q4_0: {NEON: q4_0NEON, DotProd: q4_0DotProd},
	Q5_0: {NEON: q5_0NEON, DotProd: q5_0DotProd},
	Q8_0: {NEON: q8_0NEON, DotProd: q8_0DotProd},

	IQ4_NL: {NEON: iq4_nlNEON, DotProd: iq4_nlDotProd},

	MXFP4: {NEON: mxfp4NEON, DotProd: mxfp4DotProd},
}

var asmQ8_1 = map[DType]*isaKernels[blockQ8_1]{
	Q4_1: {NEON: q4_1NEON, DotProd: q4_1DotProd},
	Q5_1: {NEON: q5_1NEON, DotProd: q5_1DotProd},
}

var asmQ8_K = map[DType]*isaKernels[blockQ8_K]{
	Q2_K: {NEON: q2_KNEONK, DotProd: q2_KDotProdK, I8MM: q2_KI8MMK},
	Q3_K: {NEON: q3_KNEONK, DotProd: q3_KDotProdK},
	Q4_K: {NEON: q4_KNEONK, DotProd: q4_KDotProdK, I8MM: q4_KI8MMK},
	Q5_K: {NEON: q5_KNEONK, DotProd: q5_KDotProdK},
	Q6_K: {NEON: q6_KNEONK, DotProd: q6_KDotProdK},

	IQ4_XS: {NEON: iq4_xsNEON, DotProd: iq4_xsDotProd},
}

// q4_KRowsVNNI is amd64's; nil here.
var q4_KRowsVNNI *panelKernel[blockQ8_K]
