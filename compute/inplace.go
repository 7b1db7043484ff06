package compute

// Weights read in place. The assembly of some types reads the weights in a
// layout of its own (pack.go), a copy as large as the tensor: a model then
// takes about twice its file in memory, and every weight stays resident. A
// tensor marked InPlace binds instead a kernel that reads ggml's rows as
// the file stores them (kern_inplace_amd64.s), with the same arithmetic,
// so the outputs are the same bits; where a type has no such kernel, the
// Go block dot product (also the same bits). Its pages then come and go
// with the OS's page cache: a mixture of experts whose experts do not all
// fit in memory runs, reading each routed expert from the file as needed.

// inPlaceFor returns weight type t's in-place assembly against activation
// blocks B, or nil (there is none against Q8_1).
func inPlaceFor[B actBlock](t DType) *isaKernels[B] { return pick[B](t, inPlaceQ8_0, nil, inPlaceQ8_K) }

// Repacks reports whether binding a tensor of type t on this machine
// copies its weights into a layout of their own (unless it is InPlace).
func Repacks(t DType) bool { return repacks(t, hostISA) }

// InPlaceAsm reports whether an InPlace tensor of type t runs assembly on
// this machine (rather than the Go reference, which is several times
// slower).
func InPlaceAsm(t DType) bool { return inPlaceAsm(t, hostISA) }

func repacks(t DType, isa ISA) bool {
	if !t.Known() {
		return false
	}
	switch traits[t].mat.(type) {
	case *blockKernel[blockQ8_0]:
		return packs(asmFor[blockQ8_0](t).best(isa))
	case *blockKernel[blockQ8_1]:
		return packs(asmFor[blockQ8_1](t).best(isa))
	case *blockKernel[blockQ8_K]:
		return packs(asmFor[blockQ8_K](t).best(isa))
	}
	return false
}

func inPlaceAsm(t DType, isa ISA) bool {
	if !t.Known() {
		return false
	}
	switch traits[t].mat.(type) {
	case *blockKernel[blockQ8_0]:
		return inPlaceOK(asmFor[blockQ8_0](t).best(isa), inPlaceFor[blockQ8_0](t).best(isa))
	case *blockKernel[blockQ8_1]:
		return inPlaceOK(asmFor[blockQ8_1](t).best(isa), inPlaceFor[blockQ8_1](t).best(isa))
	case *blockKernel[blockQ8_K]:
		return inPlaceOK(asmFor[blockQ8_K](t).best(isa), inPlaceFor[blockQ8_K](t).best(isa))
	}
	return true // float and dequantized types read their rows as stored
}

func packs[B actBlock](k *panelKernel[B]) bool { return k != nil && k.pack != nil }

// inPlaceOK reports whether an InPlace tensor whose kernel is k runs
// assembly: k reads the rows as stored, or ip does.
func inPlaceOK[B actBlock](k, ip *panelKernel[B]) bool {
	return k != nil && (k.pack == nil || ip != nil)
}
