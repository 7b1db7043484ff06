package backend

import (
	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/model"
)

var _ actors.HiddenBackend = (*CPU)(nil)

// ForwardHidden is Forward that also stores the final hidden states of the
// rows with batch.Hidden set (model.ForwardHidden), for embeddings.
func (b *CPU) ForwardHidden(batch *model.Batch, logits, hidden []float32) error {
	return b.m.ForwardHidden(b.state, batch, b.cache, logits, hidden)
}

// HiddenSize is the model's dim.
func (b *CPU) HiddenSize() int { return b.m.Config.Dim }
