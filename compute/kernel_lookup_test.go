package compute

// The kernel lookups only tests use: a weight type's Go dot products and
// its assembly on an ISA level, found in the tables MatMul binds from.

// blockDot returns the Go dot product of weight type t with activation
// blocks B, or nil if t's vec_dot_type is not B.
func blockDot[B actBlock](t DType) func([]byte, []B) float32 {
	if !t.Known() {
		return nil
	}
	if k, ok := traits[t].mat.(*blockKernel[B]); ok {
		return k.dot
	}
	return nil
}

// vecDotQ8_0Kernel returns the dot product of weight type t with Q8_0
// activations, or nil if t's vec_dot_type is not Q8_0.
func vecDotQ8_0Kernel(t DType) func([]byte, []blockQ8_0) float32 { return blockDot[blockQ8_0](t) }

// vecDotQ8_1Kernel returns the dot product of weight type t with Q8_1
// activations, or nil if t's vec_dot_type is not Q8_1.
func vecDotQ8_1Kernel(t DType) func([]byte, []blockQ8_1) float32 { return blockDot[blockQ8_1](t) }

// vecDotQ8_KKernel returns the dot product of weight type t with Q8_K
// activations, or nil if t's vec_dot_type is not Q8_K.
func vecDotQ8_KKernel(t DType) func([]byte, []blockQ8_K) float32 { return blockDot[blockQ8_K](t) }

// vecDotQ8_KBatchKernel returns the dot product used instead of
// vecDotQ8_KKernel(t) for activation rows that ggml hands to a repacked gemm
// (groups of four rows), or nil if t has no such kernel.
func vecDotQ8_KBatchKernel(t DType) func([]byte, []blockQ8_K) float32 {
	if !t.Known() {
		return nil
	}
	if k, ok := traits[t].mat.(*blockKernel[blockQ8_K]); ok {
		return k.batch
	}
	return nil
}

// panelKernelFor returns the assembly for weight type t (vec_dot_type Q8_0)
// on isa, or nil.
func panelKernelFor(t DType, isa ISA) *panelKernel[blockQ8_0] { return asmFor[blockQ8_0](t).best(isa) }

// kKernelFor returns the assembly for K-quant weight type t on isa, or nil.
func kKernelFor(t DType, isa ISA) *panelKernel[blockQ8_K] { return asmFor[blockQ8_K](t).best(isa) }
