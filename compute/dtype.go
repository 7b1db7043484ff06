package compute

import "fmt"

// DType is a tensor element type. The values are ggml's type ids, so a GGUF
// tensor-info type field converts directly.
type DType uint32

const (
	F32  DType = 0
	F16  DType = 1
	Q4_0 DType = 2
	Q4_1 DType = 3
	Q5_0 DType = 6
	Q5_1 DType = 7
	Q8_0 DType = 8
	Q8_1 DType = 9
	Q2_K DType = 10
	Q3_K DType = 11
	Q4_K DType = 12
	Q5_K DType = 13
	Q6_K DType = 14
	Q8_K DType = 15
	BF16 DType = 30

	IQ4_NL DType = 20 // 4-bit indices into a non-linear table (see iq4.go)
	IQ4_XS DType = 23

	MXFP4 DType = 39 // 4-bit E2M1 codes with a power-of-two block scale (see mxfp4.go)
)

// QK_K is the number of values in a K-quant super-block.
const QK_K = 256

type typeTraits struct {
	name      string
	blockSize int                             // values per block
	typeSize  int                             // bytes per block
	dequant   func(src []byte, dst []float32) // decodes whole blocks; nil: not decodable
	mat       matKernel                       // how MatMul multiplies by the type; nil: dequantized tiles
}

// traits is the one table of weight types, indexed by DType: a new type is
// one entry here (and its assembly, if any, from a generator under
// scripts/, bound in the generated kernels_amd64.go and kernels_arm64.go).
var traits = [...]typeTraits{
	F32:  {"F32", 1, 4, dequantF32, floatMat{}},
	F16:  {"F16", 1, 2, dequantF16, floatMat{}},
	BF16: {"BF16", 1, 2, dequantBF16, floatMat{}},
	Q4_0: {"Q4_0", 32, 2 + 16, dequantQ4_0, q8_0Kernel(vecDotQ4_0)},
	Q4_1: {"Q4_1", 32, 2 + 2 + 16, dequantQ4_1, q8_1Kernel(vecDotQ4_1)},
	Q5_0: {"Q5_0", 32, 2 + 4 + 16, dequantQ5_0, q8_0Kernel(vecDotQ5_0)},
	Q5_1: {"Q5_1", 32, 2 + 2 + 4 + 16, dequantQ5_1, q8_1Kernel(vecDotQ5_1)},
	Q8_0: {"Q8_0", 32, 2 + 32, dequantQ8_0, q8_0Kernel(vecDotQ8_0)},
	Q8_1: {"Q8_1", 32, 2 + 2 + 32, nil, nil},
	Q2_K: {"Q2_K", QK_K, QK_K/16 + QK_K/4 + 2 + 2, dequantQ2K, q8_KKernel(vecDotQ2_K, vecDotQ2_KBatch)},
	Q3_K: {"Q3_K", QK_K, QK_K/8 + QK_K/4 + 12 + 2, dequantQ3K, q8_KKernel(vecDotQ3_K, nil)},
	Q4_K: {"Q4_K", QK_K, 2 + 2 + 12 + QK_K/2, dequantQ4K, q8_KKernel(vecDotQ4_K, vecDotQ4_KBatch)},
	Q5_K: {"Q5_K", QK_K, 2 + 2 + 12 + QK_K/8 + QK_K/2, dequantQ5K, q8_KKernel(vecDotQ5_K, nil)},
	Q6_K: {"Q6_K", QK_K, QK_K/2 + QK_K/4 + QK_K/16 + 2, dequantQ6K, q8_KKernel(vecDotQ6_K, nil)},
	Q8_K: {"Q8_K", QK_K, 4 + QK_K + QK_K/16*2, dequantQ8K, nil},

	IQ4_NL: {"IQ4_NL", 32, 2 + 16, dequantIQ4NL, q8_0Kernel(vecDotIQ4NL)},
	IQ4_XS: {"IQ4_XS", QK_K, 2 + 2 + QK_K/64 + QK_K/2, dequantIQ4XS, q8_KKernel(vecDotIQ4XS, nil)},

	MXFP4: {"MXFP4", 32, 1 + 16, dequantMXFP4, q8_0Kernel(vecDotMXFP4)},
}

// Known reports whether t is a type troupe knows the layout of.
func (t DType) Known() bool { return uint64(t) < uint64(len(traits)) && traits[t].name != "" }

func (t DType) String() string {
	if t.Known() {
		return traits[t].name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of values in one block of t (1 for float types;
// 0 for an unknown type).
func (t DType) BlockSize() int {
	if !t.Known() {
		return 0
	}
	return traits[t].blockSize
}

// TypeSize is the number of bytes in one block of t (0 for an unknown type).
func (t DType) TypeSize() int {
	if !t.Known() {
		return 0
	}
	return traits[t].typeSize
}

// RowSize returns the bytes used by n values of type t, or an error when n is
// not a whole number of blocks or t is unknown.
func (t DType) RowSize(n int) (int, error) {
	if !t.Known() {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	tr := &traits[t]
	if n%tr.blockSize != 0 {
		return 0, fmt.Errorf("%s: row of %d values is not a multiple of the block size %d", tr.name, n, tr.blockSize)
	}
	return n / tr.blockSize * tr.typeSize, nil
}

// ParseDType returns the type named s (as ggml names it, e.g. "Q4_K").
func ParseDType(s string) (DType, bool) {
	for t, tr := range traits {
		if tr.name != "" && tr.name == s {
			return DType(t), true
		}
	}
	return 0, false
}
