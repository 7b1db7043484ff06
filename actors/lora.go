package actors

import (
	"fmt"
	"math"
	"slices"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/lora"
)

// MaxLoRAScale bounds a request's adapter scales (either way): past it an
// adapter swamps the model.
const MaxLoRAScale = 10

// checkLoRA reports whether refs (GenerateRequest.LoRA) name loaded
// adapters with scales in range, as a *RequestError naming lora[i].
func (r *Runtime) checkLoRA(refs []messages.LoRARef) error {
	seen := make(map[int]bool, len(refs))
	for i, ref := range refs {
		switch {
		case ref.ID < 0 || ref.ID >= len(r.cfg.LoRA):
			return &RequestError{Param: fmt.Sprintf("lora[%d].id", i),
				Msg: fmt.Sprintf("lora[%d].id %d: no such adapter (%d loaded: ids 0..%d)", i, ref.ID, len(r.cfg.LoRA), len(r.cfg.LoRA)-1)}
		case seen[ref.ID]:
			return &RequestError{Param: fmt.Sprintf("lora[%d].id", i), Msg: fmt.Sprintf("lora[%d].id %d: adapter given twice", i, ref.ID)}
		case math.IsNaN(float64(ref.Scale)) || math.Abs(float64(ref.Scale)) > MaxLoRAScale:
			return &RequestError{Param: fmt.Sprintf("lora[%d].scale", i),
				Msg: fmt.Sprintf("lora[%d].scale %v is outside [-%d, %d]", i, ref.Scale, MaxLoRAScale, MaxLoRAScale)}
		}
		seen[ref.ID] = true
	}
	return nil
}

// loraSet resolves a request's adapters (checked by checkLoRA) into the
// set its sequences run with (messages.NewSequence.LoRA): nil refs take
// every loaded adapter at its default scale; zero scales are left out.
func (r *Runtime) loraSet(refs []messages.LoRARef) []messages.LoRARef {
	if refs == nil {
		refs = make([]messages.LoRARef, len(r.cfg.LoRA))
		for i, a := range r.cfg.LoRA {
			refs[i] = messages.LoRARef{ID: i, Scale: a.Scale}
		}
	}
	var set []messages.LoRARef
	for _, ref := range refs {
		if ref.Scale != 0 {
			set = append(set, ref)
		}
	}
	slices.SortFunc(set, func(a, b messages.LoRARef) int { return a.ID - b.ID })
	return set
}

// loraSalt is the prefix-cache salt of an adapter set (loraSet's): 0 for
// none, else a hash of its ids and scales, never 0.
func loraSalt(set []messages.LoRARef) uint64 {
	if len(set) == 0 {
		return 0
	}
	words := make([]int32, 0, 2*len(set))
	for _, ref := range set {
		words = append(words, int32(ref.ID), int32(math.Float32bits(ref.Scale)))
	}
	return max(kv.BlockHash(kv.RootHash, words), 1)
}

// checkAdapters reports whether the runtime's adapters (Config.LoRA) apply
// to m, and whether its devices apply adapters at all (the CPU does).
func (r *Runtime) checkAdapters(m *model.Model) error {
	for i, a := range r.cfg.LoRA {
		if a.Adapter == nil {
			return fmt.Errorf("actors: lora adapter %d is nil", i)
		}
		if err := m.CheckAdapter(a.Adapter); err != nil {
			return fmt.Errorf("actors: lora adapter %d: %w", i, err)
		}
	}
	if len(r.cfg.LoRA) > 0 && r.Device() != "" && r.Device() != "cpu" {
		return fmt.Errorf("actors: lora adapters run on the CPU device only, not %s", r.Device())
	}
	return nil
}

// loraBatch fills b.LoRA from a step's adapter sets (messages.Step.LoRA),
// ids into adapters; nil sets leave b.LoRA nil.
func loraBatch(b *model.Batch, sets [][]messages.LoRARef, adapters []lora.Scaled) error {
	b.LoRA = b.LoRA[:0]
	if sets == nil {
		b.LoRA = nil
		return nil
	}
	if len(sets) != len(b.BlockTables) {
		return fmt.Errorf("step has adapters for %d sequences of %d", len(sets), len(b.BlockTables))
	}
	for _, set := range sets {
		scaled := make([]lora.Scaled, 0, len(set))
		for _, ref := range set {
			if ref.ID < 0 || ref.ID >= len(adapters) {
				return fmt.Errorf("step names lora adapter %d of %d", ref.ID, len(adapters))
			}
			scaled = append(scaled, lora.Scaled{Adapter: adapters[ref.ID].Adapter, Scale: ref.Scale})
		}
		b.LoRA = append(b.LoRA, scaled)
	}
	return nil
}
