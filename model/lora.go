package model

import (
	"fmt"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/lora"
)

// matMul is the product of the batch's n rows of x by w, plus the LoRA
// updates of each row's adapters (Batch.LoRA, as Forward set them in
// s.loraSeq and s.loraSets): the one hook of the adapters in the forward
// pass, at each projection of a block.
func (s *State) matMul(out, x []float32, n int, w *compute.Tensor) error {
	if err := s.mm.MatMul(out, x, n, w); err != nil {
		return err
	}
	return s.lora.Add(s.mm, out, x, n, w, s.loraSeq, s.loraSets)
}

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
