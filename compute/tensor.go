package compute

// Tensor is a view of a weight tensor's bytes, usually memory-mapped from a
// model file. Shape is in ggml order: Shape[0] (ne0) is the number of values
// in one row, the fastest-varying dimension; a matrix of n rows of k values
// has Shape = [k, n].
type Tensor struct {
	Name  string
	Type  DType
	Shape []int
	Data  []byte // len(Data) == Rows() * RowBytes()

	// InPlace keeps the kernels reading Data where it lies (the mapped
	// file, paged in by the OS as it is touched) instead of a packed copy;
	// set before the first MatMul or Prepare (inplace.go).
	InPlace bool

	bound bindSlot // the kernel MatMul uses for this tensor, bound on first use or by Prepare
}

// Cols is the number of values in one row (ne0).
func (t *Tensor) Cols() int { return t.Shape[0] }

// Rows is the number of rows: the product of every dimension after the first.
func (t *Tensor) Rows() int {
	n := 1
	for _, d := range t.Shape[1:] {
		n *= d
	}
	return n
}

// Elems is the number of values in the tensor.
func (t *Tensor) Elems() int { return t.Cols() * t.Rows() }

// RowBytes is the size in bytes of one row.
func (t *Tensor) RowBytes() int { return t.Shape[0] / t.Type.BlockSize() * t.Type.TypeSize() }

// Row returns the bytes of row i.
func (t *Tensor) Row(i int) []byte {
	rb := t.RowBytes()
	return t.Data[i*rb : (i+1)*rb]
}
