package lora

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// ErrAdapter is wrapped by every error about an adapter file that cannot
// serve: not an adapter, another architecture, a tensor of the wrong shape.
var ErrAdapter = errors.New("lora: bad adapter")

// Pair is the low-rank update of one weight W (out, in): ΔW = B·A.
type Pair struct {
	A *compute.Tensor // (rank, in): GGUF ne = [in, rank]
	B *compute.Tensor // (out, rank): GGUF ne = [rank, out]

	once sync.Once
	low  *compute.LowRank // B transposed for the Applier; nil: B's type takes MatMul
}

// lowRank returns B as compute.LowRank holds it (made on first use), or
// nil where B is neither F32 nor F16.
func (p *Pair) lowRank() *compute.LowRank {
	p.once.Do(func() { p.low, _ = compute.NewLowRank(p.B) })
	return p.low
}

// Rank is the pair's rank r.
func (p *Pair) Rank() int { return p.B.Cols() }

// Scale is the factor of B·A·x for a requested scale, as llama.cpp's
// get_scale: scale·alpha/rank, or scale when the adapter has no alpha.
func (p *Pair) Scale(alpha, scale float32) float32 {
	if alpha == 0 {
		return scale
	}
	return scale * alpha / float32(p.Rank())
}

// Adapter is one LoRA adapter file.
type Adapter struct {
	Path  string
	Arch  string  // general.architecture: the base model's
	Alpha float32 // adapter.lora.alpha; 0: the scale is used as given
	// Weights maps a base tensor's GGUF name ("blk.0.attn_q.weight") to
	// its pair.
	Weights map[string]*Pair

	file *gguf.File
}

// Open reads the adapter at path. The tensors are views of the mapped
// file: Close releases them.
func Open(path string) (*Adapter, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	a, err := fromFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return a, nil
}

// fromFile reads the adapter's keys and pairs its tensors.
func fromFile(f *gguf.File) (*Adapter, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("lora: %s: %w: %s", f.Path, ErrAdapter, fmt.Sprintf(format, args...))
	}
	if t, _ := f.String("general.type"); t != "adapter" {
		return nil, bad("general.type is %q, want adapter", t)
	}
	if t, _ := f.String("adapter.type"); t != "lora" {
		return nil, bad("adapter.type is %q, want lora", t)
	}
	a := &Adapter{Path: f.Path, Weights: map[string]*Pair{}, file: f}
	a.Arch, _ = f.String("general.architecture")
	if v, ok := f.Value("adapter.lora.alpha"); ok {
		alpha, isNum := f.Float("adapter.lora.alpha")
		if !isNum || math.IsNaN(alpha) || math.IsInf(alpha, 0) {
			return nil, bad("adapter.lora.alpha is %v, want a number", v)
		}
		a.Alpha = float32(alpha)
	}
	if _, ok := f.Value("adapter.alora.invocation_tokens"); ok {
		return nil, bad("activated LoRA (adapter.alora.invocation_tokens) is not supported")
	}
	for _, ti := range f.Tensors() {
		base, half, ok := strings.Cut(ti.Name, ".lora_")
		if !ok || half != "a" && half != "b" {
			return nil, bad("tensor %q is neither NAME.lora_a nor NAME.lora_b", ti.Name)
		}
		t, err := f.Tensor(ti.Name)
		if err != nil {
			return nil, fmt.Errorf("lora: %w", err)
		}
		if len(t.Shape) != 2 {
			return nil, bad("tensor %q has %d dimensions, want 2", ti.Name, len(t.Shape))
		}
		p := a.Weights[base]
		if p == nil {
			p = &Pair{}
			a.Weights[base] = p
		}
		if half == "a" {
			p.A = t
		} else {
			p.B = t
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Weights)) {
		p := a.Weights[name]
		switch {
		case p.A == nil || p.B == nil:
			return nil, bad("%s has only one of lora_a and lora_b", name)
		case p.A.Rows() != p.B.Cols():
			return nil, bad("%s: lora_a has rank %d, lora_b %d (lora_a must be [in, rank], lora_b [rank, out])", name, p.A.Rows(), p.B.Cols())
		}
		for _, t := range []*compute.Tensor{p.A, p.B} {
			if _, err := t.Type.RowSize(t.Cols()); err != nil {
				return nil, bad("%s: %v", t.Name, err)
			}
		}
	}
	if len(a.Weights) == 0 {
		return nil, bad("no lora_a/lora_b tensors")
	}
	for _, p := range a.Weights {
		p.lowRank() // now, not at a request's first step
	}
	return a, nil
}

// Check reports whether the adapter fits a base model of architecture
// arch: each adapted weight must be one weight(name) returns (nil: the
// model has no such weight, or cannot apply an adapter to it), of shape
// (out, in) matching the pair's.
func (a *Adapter) Check(arch string, weight func(name string) *compute.Tensor) error {
	if a.Arch != arch {
		return fmt.Errorf("lora: %s: %w: an adapter for %q, the model is %q", a.Path, ErrAdapter, a.Arch, arch)
	}
	for _, name := range slices.Sorted(maps.Keys(a.Weights)) {
		p, w := a.Weights[name], weight(name)
		if w == nil {
			return fmt.Errorf("lora: %s: %w: the model has no weight %q an adapter can apply to", a.Path, ErrAdapter, name)
		}
		if p.A.Cols() != w.Cols() || p.B.Rows() != w.Rows() {
			return fmt.Errorf("lora: %s: %w: %s is (%d, %d), the adapter's update (%d, %d) (an adapter for another model?)",
				a.Path, ErrAdapter, name, w.Rows(), w.Cols(), p.B.Rows(), p.A.Cols())
		}
	}
	return nil
}

// Close unmaps the file; the adapter must not be used after.
func (a *Adapter) Close() error { return a.file.Close() }
