package compute

// The assembly for each weight type, per ISA level: the kernel of the
// highest level the CPU runs is bound to a tensor (kernel.go). A type
// without an entry runs its Go block dot product.

var asmQ8_0 = map[DType]*isaKernels[blockQ8_0]{
	Q4_0: {AVX2: q4_0AVX2, AVX512VNNI: q4_0VNNI},
	Q5_0: {AVX2: q5_0AVX2, AVX512VNNI: q5_0VNNI},
	Q8_0: {AVX2: q8_0AVX2, AVX512VNNI: q8_0VNNI},

	IQ4_NL: {AVX2: iq4_nlAVX2, AVX512VNNI: iq4_nlVNNI},

	MXFP4: {AVX2: mxfp4AVX2, AVX512VNNI: mxfp4VNNI},
}

var asmQ8_1 = map[DType]*isaKernels[blockQ8_1]{
	Q4_1: {AVX2: q4_1AVX2, AVX512VNNI: q4_1VNNI},
	Q5_1: {AVX2: q5_1AVX2, AVX512VNNI: q5_1VNNI},
}

var asmQ8_K = map[DType]*isaKernels[blockQ8_K]{
	Q2_K: {AVX2: q2_KAVX2, AVX512VNNI: q2_KVNNI},
	Q3_K: {AVX2: q3_KAVX2, AVX512VNNI: q3_KVNNI},
	Q4_K: {AVX2: q4_KAVX2, AVX512VNNI: q4_KVNNI},
	Q5_K: {AVX2: q5_KAVX2, AVX512VNNI: q5_KVNNI},
	Q6_K: {AVX2: q6_KAVX2, AVX512VNNI: q6_KVNNI},

	IQ4_XS: {AVX2: iq4_xsAVX2, AVX512VNNI: iq4_xsVNNI},
}
