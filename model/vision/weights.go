package vision

import (
	"fmt"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// weights are the projector file's tensors, under llama.cpp's names
// (clip-impl.h's TN_*). Matrices stay in the file's type (views of the
// mapping); vectors are read into float32.
type weights struct {
	patch     *compute.Tensor // v.patch_embd.weight viewed as (dim, 3·patch·patch): one row per output channel, (c, ky, kx) order
	patchBias []float32       // v.patch_embd.bias (dim), optional
	pos       []float32       // v.position_embd.weight (patches, dim)
	preW      []float32       // v.pre_ln (dim), optional
	preB      []float32
	postW     []float32 // v.post_ln (dim), optional
	postB     []float32
	layers    []layerWeights

	// Gemma 3
	softNorm  []float32       // mm.soft_emb_norm.weight (dim)
	inputProj *compute.Tensor // mm.input_projection.weight transposed: (projDim, dim)

	// Idefics3
	fc *compute.Tensor // mm.model.fc.weight: (projDim, dim·merge²)

	// Qwen2.5-VL
	patch1     *compute.Tensor // v.patch_embd.weight.1: the Conv3D kernel's second temporal slice, as patch
	mm0, mm2   *compute.Tensor // mm.0.weight (4·dim, 4·dim), mm.2.weight (projDim, 4·dim): the merger
	mm0b, mm2b []float32       // (4·dim), (projDim)
}

type layerWeights struct {
	q, k, v, o     *compute.Tensor // (dim, dim)
	qb, kb, vb, ob []float32       // (dim)
	ln1w, ln1b     []float32       // (dim)
	ln2w, ln2b     []float32       // (dim)
	up, down       *compute.Tensor // (ffn, dim), (dim, ffn)
	upb, downb     []float32       // (ffn), (dim)
	gate           *compute.Tensor // (ffn, dim): Qwen2.5-VL's gated feed-forward; nil: none
	gateb          []float32       // (ffn)

	// Qwen3-VL
	qkv          *compute.Tensor // attn_qkv.weight (3·dim, dim): q, k and v fused; q, k, v nil
	qkvb         []float32       // (3·dim)
	dsNormW      []float32       // v.deepstack.il.norm (4·dim): this layer's deepstack merger, nil: none
	dsNormB      []float32
	dsFC1, dsFC2 *compute.Tensor // (4·dim, 4·dim), (projDim, 4·dim)
	dsFC1b       []float32       // (4·dim)
	dsFC2b       []float32       // (projDim)
}

// loader reads tensors by name, checking shapes; the first error sticks.
type loader struct {
	f   *gguf.File
	err error
}

func (l *loader) tensor(name string, shape ...int) *compute.Tensor {
	if l.err != nil {
		return nil
	}
	t, err := l.f.Tensor(name)
	if err != nil {
		l.err = fmt.Errorf("tensor %q: %w", name, err)
		return nil
	}
	if !sameShape(t.Shape, shape) {
		l.err = fmt.Errorf("tensor %q: shape %v, want %v", name, t.Shape, shape)
		return nil
	}
	return t
}

func (l *loader) has(name string) bool {
	_, err := l.f.Tensor(name)
	return err == nil
}

func (l *loader) matrix(name string, cols, rows int) *compute.Tensor {
	return l.tensor(name, cols, rows)
}

func (l *loader) vector(name string, n int, optional bool) []float32 {
	if optional && !l.has(name) {
		return nil
	}
	t := l.tensor(name, n)
	if t == nil {
		return nil
	}
	v, err := vec(t)
	if err != nil && l.err == nil {
		l.err = err
	}
	return v
}

func sameShape(a, b []int) bool {
	// ggml drops trailing dimensions of 1.
	for len(a) > len(b) && a[len(a)-1] == 1 {
		a = a[:len(a)-1]
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func loadWeights(f *gguf.File, typ string, hp hparams) (*weights, error) {
	l := &loader{f: f}
	d, p := hp.dim, hp.patch
	side := hp.imageSize / p
	w := &weights{}
	if pt := l.tensor("v.patch_embd.weight", p, p, 3, d); pt != nil {
		w.patch, l.err = patchKernel(pt, p*p*3, d)
	}
	w.patchBias = l.vector("v.patch_embd.bias", d, true)
	qwen := isQwen(typ)
	if qwen {
		if pt := l.tensor("v.patch_embd.weight.1", p, p, 3, d); pt != nil {
			w.patch1, l.err = patchKernel(pt, p*p*3, d)
		}
	}
	if typ != typeQwen25VL && typ != typeQwen2VL {
		if pt := l.tensor("v.position_embd.weight", d, side*side); pt != nil {
			w.pos, l.err = vec(pt)
		}
	}
	w.preW, w.preB = l.vector("v.pre_ln.weight", d, true), l.vector("v.pre_ln.bias", d, true)
	w.postW, w.postB = l.vector("v.post_ln.weight", d, true), l.vector("v.post_ln.bias", d, true)
	w.layers = make([]layerWeights, hp.layers)
	for i := range w.layers {
		lw := &w.layers[i]
		b := fmt.Sprintf("v.blk.%d.", i)
		if typ == typeQwen3VL {
			lw.qkv, lw.qkvb = l.matrix(b+"attn_qkv.weight", d, 3*d), l.vector(b+"attn_qkv.bias", 3*d, false)
			k := 4 * d
			if ds := fmt.Sprintf("v.deepstack.%d.", i); l.has(ds + "fc1.weight") {
				lw.dsNormW, lw.dsNormB = l.vector(ds+"norm.weight", k, false), l.vector(ds+"norm.bias", k, true)
				lw.dsFC1, lw.dsFC1b = l.matrix(ds+"fc1.weight", k, k), l.vector(ds+"fc1.bias", k, true)
				lw.dsFC2, lw.dsFC2b = l.matrix(ds+"fc2.weight", k, hp.projDim), l.vector(ds+"fc2.bias", hp.projDim, true)
			}
		} else {
			lw.q, lw.qb = l.matrix(b+"attn_q.weight", d, d), l.vector(b+"attn_q.bias", d, true)
			lw.k, lw.kb = l.matrix(b+"attn_k.weight", d, d), l.vector(b+"attn_k.bias", d, true)
			lw.v, lw.vb = l.matrix(b+"attn_v.weight", d, d), l.vector(b+"attn_v.bias", d, true)
		}
		lw.o, lw.ob = l.matrix(b+"attn_out.weight", d, d), l.vector(b+"attn_out.bias", d, true)
		lw.ln1w, lw.ln1b = l.vector(b+"ln1.weight", d, false), l.vector(b+"ln1.bias", d, true)
		if typ == typeQwen25VL {
			lw.gate, lw.gateb = l.matrix(b+"ffn_gate.weight", d, hp.ffn), l.vector(b+"ffn_gate.bias", hp.ffn, true)
		}
		lw.ln2w, lw.ln2b = l.vector(b+"ln2.weight", d, false), l.vector(b+"ln2.bias", d, true)
		up, down, upb, downb := b+"ffn_up.", b+"ffn_down.", b+"ffn_up.bias", b+"ffn_down.bias"
		if t, err := f.Tensor(down + "weight"); err == nil && len(t.Shape) > 0 && t.Shape[0] == d && d != hp.ffn {
			// Older converters named fc1 ffn_down and fc2 ffn_up; clip.cpp
			// swaps them back when ffn_down's rows have the ViT's width.
			up, down, upb, downb = down, up, downb, upb
		}
		lw.up, lw.upb = l.matrix(up+"weight", d, hp.ffn), l.vector(upb, hp.ffn, true)
		lw.down, lw.downb = l.matrix(down+"weight", hp.ffn, d), l.vector(downb, d, true)
	}
	switch typ {
	case "gemma3":
		w.softNorm = l.vector("mm.soft_emb_norm.weight", d, false)
		if t := l.tensor("mm.input_projection.weight", hp.projDim, d); t != nil {
			w.inputProj, l.err = transpose(t)
		}
	case "idefics3":
		w.fc = l.matrix("mm.model.fc.weight", d*hp.merge*hp.merge, hp.projDim)
	case typeQwen2VL, typeQwen25VL, typeQwen3VL:
		k := 4 * d
		w.mm0, w.mm0b = l.matrix("mm.0.weight", k, k), l.vector("mm.0.bias", k, false)
		w.mm2, w.mm2b = l.matrix("mm.2.weight", k, hp.projDim), l.vector("mm.2.bias", hp.projDim, false)
	}
	if l.err != nil {
		return nil, l.err
	}
	mats := []*compute.Tensor{w.patch}
	for _, lw := range w.layers {
		for _, t := range []*compute.Tensor{lw.q, lw.k, lw.v, lw.qkv, lw.o, lw.up, lw.down, lw.gate, lw.dsFC1, lw.dsFC2} {
			if t != nil {
				mats = append(mats, t)
			}
		}
	}
	for _, t := range []*compute.Tensor{w.inputProj, w.fc, w.patch1, w.mm0, w.mm2} {
		if t != nil {
			mats = append(mats, t)
		}
	}
	compute.Prepare(mats, 2, nil)
	return w, nil
}

// transpose copies a (rows, cols) matrix of 2- or 4-byte floats into a
// (cols, rows) one of the same type, as clip.cpp's ggml_cont(ggml_transpose(w)).
func transpose(t *compute.Tensor) (*compute.Tensor, error) {
	var size int
	switch t.Type {
	case compute.F32:
		size = 4
	case compute.F16, compute.BF16:
		size = 2
	default:
		return nil, fmt.Errorf("tensor %q: type %s: want F32, F16 or BF16", t.Name, t.Type)
	}
	cols, rows := t.Shape[0], t.Shape[1]
	out := make([]byte, len(t.Data))
	for r := range rows {
		for c := range cols {
			copy(out[(c*rows+r)*size:(c*rows+r+1)*size], t.Data[(r*cols+c)*size:])
		}
	}
	return &compute.Tensor{Name: t.Name, Type: t.Type, Shape: []int{rows, cols}, Data: out}, nil
}

// patchKernel is the patch convolution's kernel as the matrix ggml_conv_2d
// multiplies: its im2col is F16 (F32 for a BF16 kernel) and ggml_mul_mat
// converts the kernel to the im2col's type, so an F32 or F16 kernel
// becomes F16 (and MatMul rounds the pixels to f16, as im2col does), a
// BF16 one F32.
func patchKernel(t *compute.Tensor, k, n int) (*compute.Tensor, error) {
	v, err := vec(t)
	if err != nil {
		return nil, err
	}
	if t.Type == compute.BF16 {
		return f32Matrix(v, k, n), nil
	}
	h := make([]uint16, len(v))
	compute.F16s(h, v)
	b := make([]byte, 2*len(h))
	for i, x := range h {
		b[2*i], b[2*i+1] = byte(x), byte(x>>8)
	}
	return &compute.Tensor{Name: t.Name, Type: compute.F16, Shape: []int{k, n}, Data: b}, nil
}
