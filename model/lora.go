package model

import (
	"fmt"
	"slices"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/lora"
)

// matMul is the product of the batch's n rows of x by w, plus the LoRA
// updates of each row's adapters (Batch.LoRA, as Forward set them in
// s.loraSeq and s.loraSets): the one hook of the adapters in the forward
// pass, at each projection of a block. The A products run first; the B
// updates then run on the product's workers as they finish their columns
// (Applier.Prepare), or, for pairs only MatMul multiplies, after it
// (Applier.Add).
func (s *State) matMul(out, x []float32, n int, w *compute.Tensor) error {
	after, err := s.lora.Prepare(s.mm, out, x, n, w, s.loraSeq, s.loraSets)
	if err != nil {
		return err
	}
	if err := s.mm.MatMulThen(out, x, n, w, after); err != nil || after != nil {
		return err // the updates made by the product's workers, or an error
	}
	return s.lora.Add(s.mm, out, x, n, w, s.loraSeq, s.loraSets)
}

// setLoRA points the State's matMul at b's adapters: b.LoRA, or the
// model's own (SetAdapters) for every sequence when b names none.
func (s *State) setLoRA(m *Model, b *Batch) {
	s.loraSeq, s.loraSets = b.Seq, b.LoRA
	if b.LoRA == nil && len(m.adapters) > 0 {
		s.loraAll = s.loraAll[:0]
		for range b.BlockTables {
			s.loraAll = append(s.loraAll, m.adapters)
		}
		s.loraSets = s.loraAll
	}
}

// SetAdapters makes adapters apply to every sequence of the batches that
// name none of their own (Batch.LoRA nil), as llama-server's --lora does;
// each must pass CheckAdapter. Call it before the model is shared: it is
// not safe while Forward runs. Only the CPU forward pass applies adapters
// (a GPU backend must not be given a model that has them).
func (m *Model) SetAdapters(adapters []lora.Scaled) error {
	for _, a := range adapters {
		if err := m.CheckAdapter(a.Adapter); err != nil {
			return err
		}
	}
	m.adapters = slices.Clone(adapters)
	return nil
}

// Adapters are the adapters SetAdapters gave the model.
func (m *Model) Adapters() []lora.Scaled { return m.adapters }

// CheckAdapter reports whether adapter a can apply to m: the same
// architecture, and only weights the forward pass applies adapters to (a
// dense block's q, k, v, output, gate, up and down projections) in their
// shapes.
func (m *Model) CheckAdapter(a *lora.Adapter) error {
	if m.bert != nil {
		return fmt.Errorf("lora: %s: %w: adapters apply to decoder models only", a.Path, lora.ErrAdapter)
	}
	byName := map[string]*compute.Tensor{}
	for _, lw := range m.Weights.Layers {
		ws := []*compute.Tensor{lw.Q, lw.K, lw.V, lw.O}
		if lw.MoE == nil {
			ws = append(ws, lw.Gate, lw.Up, lw.Down)
		}
		for _, w := range ws {
			if w != nil {
				byName[w.Name] = w
			}
		}
	}
	return a.Check(m.Config.Arch, func(name string) *compute.Tensor { return byName[name] })
}
