package compute

import (
	"sync"
	"sync/atomic"
)

// How MatMul multiplies by each weight type. Every type has one entry in
// traits (dtype.go) whose mat field says how its rows are multiplied:
//
//   - floatMat: F32, and F16/BF16 with the activations rounded to the
//     weight's type first, as ggml converts them to its vec_dot_type
//     (kern_f.go);
//   - blockKernel: quantized types, whose activation rows are quantized
//     once per call to the type's vec_dot_type (Q8_0, Q8_1 or Q8_K) and
//     multiplied block by block in integers (the Go dot product is the
//     reference; the assembly bound in kernels_amd64.go or kernels_arm64.go
//     runs where the CPU has it);
//   - none (nil): dequantize tiles of rows to float32 and multiply those.
//
// A tensor binds its kernel once, on first use or at load (Prepare), for
// the ISA the process runs: the assembly is chosen and the weights packed
// in the layout it reads. MatMul then only reads the binding.

// matKernel is how MatMul multiplies by one weight type. The traits entry
// is unbound; bind returns a tensor's own, which MatMul calls.
type matKernel interface {
	// bind returns t's kernel on isa: its assembly chosen and t's weights
	// packed for it where it reads a layout of its own.
	bind(t *Tensor, isa ISA) matKernel
	// prepare converts the m activation rows of x (the job's) into mm's
	// scratch for rows, and returns the float rows rows reads.
	prepare(mm *MatMuler, x []float32, m int) []float32
	// rows computes output columns [lo, hi) of mm's job on worker wi.
	rows(mm *MatMuler, wi, lo, hi int) error
	// rowStep is what a worker's share of weight rows is a multiple of.
	rowStep() int
	// packed reports whether bind copied the weights into a layout of the
	// kernel's own, so that the tensor's Data is read only by the
	// reference paths.
	packed() bool
}

// binding is a tensor's bound kernel and the ISA it was bound for.
type binding struct {
	isa ISA
	k   matKernel
}

// bindSlot holds a tensor's binding. Reads are one atomic load; binding
// takes the mutex, once per tensor (again only when tests change hostISA).
type bindSlot struct {
	mu sync.Mutex
	b  atomic.Pointer[binding]
}

// kernel returns t's kernel for the host ISA, binding it on first use.
func (t *Tensor) kernel() matKernel {
	if b := t.bound.b.Load(); b != nil && b.isa == hostISA {
		return b.k
	}
	return t.bind(hostISA)
}

// bind binds t's kernel for isa, or returns the binding made already.
func (t *Tensor) bind(isa ISA) matKernel {
	t.bound.mu.Lock()
	defer t.bound.mu.Unlock()
	if b := t.bound.b.Load(); b != nil && b.isa == isa {
		return b.k
	}
	k := traits[t.Type].mat
	if k == nil {
		k = dequantKernel{}
	}
	k = k.bind(t, isa)
	t.bound.b.Store(&binding{isa: isa, k: k})
	return k
}

// actBlock is a quantized activation block: a weight type's vec_dot_type.
type actBlock interface {
	blockQ8_0 | blockQ8_1 | blockQ8_K
}

// actFormat is how activation rows are quantized to blocks B.
type actFormat[B actBlock] struct {
	values int // activations per block
	// quantize quantizes x (len(y)·values activations, whole rows) into y;
	// corr is the panel kernels' c (Q8_0 only, see panelKernel.corr).
	quantize func(x []float32, y []B, corr int32)
	scratch  func(mm *MatMuler) *[]B      // the MatMuler's buffer for B
	scratch4 func(mm *MatMuler) *[]B      // its buffer for panelKernel.inter's layout (Q8_K only)
	asm      func(t DType) *isaKernels[B] // weight type t's assembly, or nil
}

var (
	q8_0Acts = &actFormat[blockQ8_0]{values: 32, quantize: quantizeRowQ8_0Corr,
		scratch: func(mm *MatMuler) *[]blockQ8_0 { return &mm.q8_0 }}
	q8_1Acts = &actFormat[blockQ8_1]{values: 32, quantize: func(x []float32, y []blockQ8_1, _ int32) { quantizeRowQ8_1(x, y) },
		scratch: func(mm *MatMuler) *[]blockQ8_1 { return &mm.q8_1 }}
	q8_KActs = &actFormat[blockQ8_K]{values: QK_K, quantize: func(x []float32, y []blockQ8_K, _ int32) { quantizeRowQ8_K(x, y) },
		scratch: func(mm *MatMuler) *[]blockQ8_K { return &mm.q8K }, scratch4: func(mm *MatMuler) *[]blockQ8_K { return &mm.q8K4 }}
)

// isaKernels holds a weight type's assembly per ISA level (nil where there
// is none).
type isaKernels[B actBlock] [numISA]*panelKernel[B]

// asmFor returns weight type t's assembly against activation blocks B, or
// nil (the tables of kernels_amd64.go and kernels_arm64.go).
func asmFor[B actBlock](t DType) *isaKernels[B] { return pick[B](t, asmQ8_0, asmQ8_1, asmQ8_K) }

// pick returns weight type t's kernels against activation blocks B from
// the table of kernels against B's type (nil: none), or nil.
func pick[B actBlock](t DType, q8_0 map[DType]*isaKernels[blockQ8_0], q8_1 map[DType]*isaKernels[blockQ8_1],
	q8_K map[DType]*isaKernels[blockQ8_K]) *isaKernels[B] {
	var ks any
	switch any((*B)(nil)).(type) {
	case *blockQ8_0:
		ks = q8_0[t]
	case *blockQ8_1:
		ks = q8_1[t]
	case *blockQ8_K:
		ks = q8_K[t]
	}
	k, _ := ks.(*isaKernels[B])
	return k
}

// best returns the kernel of the highest level up to isa, or nil.
func (ks *isaKernels[B]) best(isa ISA) *panelKernel[B] {
	if ks == nil {
		return nil
	}
	for l := isa; l > Generic && l >= baseISA; l-- {
		if ks[l] != nil {
			return ks[l]
		}
	}
	return nil
}

// blockKernel multiplies by a quantized weight type with the integer block
// dot products of its vec_dot_type B.
type blockKernel[B actBlock] struct {
	acts  *actFormat[B]
	dot   func(w []byte, x []B) float32 // ggml's vec_dot for one row: the reference
	batch func(w []byte, x []B) float32 // rows that ggml's repacked gemm takes in fours (GGMLBatch), or nil

	asm *panelKernel[B] // bound: the ISA's assembly, or nil
	p   *packed         // bound: the weights in asm's layout, or nil
}

func (k *blockKernel[B]) bind(t *Tensor, isa ISA) matKernel {
	b := *k
	b.asm = asmFor[B](t.Type).best(isa)
	if t.InPlace && b.asm != nil && b.asm.pack != nil {
		b.asm = inPlaceFor[B](t.Type).best(isa) // nil: the Go reference
	}
	if b.asm != nil && b.asm.pack != nil {
		b.p = b.asm.pack(t)
	}
	return &b
}

func (k *blockKernel[B]) prepare(mm *MatMuler, x []float32, m int) []float32 {
	var corr int32
	if k.asm != nil {
		corr = k.asm.corr
	}
	xq := grow(k.acts.scratch(mm), len(x)/k.acts.values)
	k.acts.quantize(x, xq, corr) // the rows are contiguous blocks
	if k.asm != nil && k.asm.inter != nil && m >= 4 {
		k.asm.inter(grow(k.acts.scratch4(mm), len(xq)), xq, m, len(xq)/m)
	}
	return x
}

func (k *blockKernel[B]) rows(mm *MatMuler, _, lo, hi int) error {
	j := &mm.job
	w := j.w
	xq := (*k.acts.scratch(mm))[:j.m*w.Cols()/k.acts.values]
	var batch func([]byte, []B) float32
	if mm.GGMLBatch {
		batch = k.batch
	}
	if k.asm != nil && batch == nil {
		var xq4 []B
		if k.asm.inter != nil && j.m >= 4 {
			xq4 = (*k.acts.scratch4(mm))[:len(xq)]
		}
		lo = k.asm.rows4(k.p, w, j.out, xq, xq4, j.m, lo, hi)
	}
	dotRows(j.out, xq, j.m, w.Rows(), w.Data, w.RowBytes(), lo, hi, k.dot, batch)
	return nil
}

func (k *blockKernel[B]) rowStep() int {
	if k.asm != nil && k.asm.panel {
		return panelRows
	}
	return 1
}

func (k *blockKernel[B]) packed() bool { return k.p != nil }

// floatMat multiplies by F32, F16 or BF16 weights with the kernels of
// kern_f.go.
type floatMat struct {
	t  DType
	fk *floatKernel // bound: the ISA's assembly, or nil (the Go reference)
}

func (floatMat) bind(t *Tensor, isa ISA) matKernel {
	return floatMat{t: t.Type, fk: floatKernelFor(t.Type, isa)}
}

func (k floatMat) prepare(mm *MatMuler, x []float32, m int) []float32 {
	return mm.floatActs(x, m, len(x)/m, k.t, k.fk)
}

func (k floatMat) rows(mm *MatMuler, _, lo, hi int) error {
	mm.floatRows(k.fk, lo, hi)
	return nil
}

func (floatMat) rowStep() int { return 1 }
func (floatMat) packed() bool { return false }

// dequantKernel multiplies by a type without a dot product of its own (Q8_K
// weights, say): tiles of rows dequantized to float32.
type dequantKernel struct{}

func (dequantKernel) bind(*Tensor, ISA) matKernel                       { return dequantKernel{} }
func (dequantKernel) prepare(_ *MatMuler, x []float32, _ int) []float32 { return x }
func (dequantKernel) rows(mm *MatMuler, wi, lo, hi int) error           { return mm.dequantRows(wi, lo, hi) }
func (dequantKernel) rowStep() int                                      { return 1 }
func (dequantKernel) packed() bool                                      { return false }

// q8_0Kernel returns the kernel of a weight type whose vec_dot_type is Q8_0.
func q8_0Kernel(dot func([]byte, []blockQ8_0) float32) matKernel {
	return &blockKernel[blockQ8_0]{acts: q8_0Acts, dot: dot}
}

// q8_1Kernel returns the kernel of a weight type whose vec_dot_type is Q8_1.
func q8_1Kernel(dot func([]byte, []blockQ8_1) float32) matKernel {
	return &blockKernel[blockQ8_1]{acts: q8_1Acts, dot: dot}
}

// q8_KKernel returns the kernel of a weight type whose vec_dot_type is
// Q8_K; batch (or nil) is its repacked-gemm arithmetic for GGMLBatch.
func q8_KKernel(dot, batch func([]byte, []blockQ8_K) float32) matKernel {
	return &blockKernel[blockQ8_K]{acts: q8_KActs, dot: dot, batch: batch}
}
