package actors

import (
	"fmt"
	"math"
	"slices"
	"sync"

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
// every loaded adapter at its current default scale (SetLoRAScales); zero
// scales are left out.
func (r *Runtime) loraSet(refs []messages.LoRARef) []messages.LoRARef {
	if refs == nil {
		refs = r.lora.defaults()
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

// LoRAAdapter is one of the runtime's loaded adapters, as llama-server's
// GET /lora-adapters lists it.
type LoRAAdapter struct {
	ID    int     // its index: a request's lora id
	Path  string  // the file it was read from
	Scale float32 // the scale of requests without a lora field
}

// LoRAAdapters lists the runtime's loaded adapters (Config.LoRA) with their
// current default scales.
func (r *Runtime) LoRAAdapters() []LoRAAdapter {
	out := make([]LoRAAdapter, len(r.cfg.LoRA))
	for i, ref := range r.lora.defaults() {
		out[i] = LoRAAdapter{ID: i, Path: r.cfg.LoRA[i].Adapter.Path, Scale: ref.Scale}
	}
	return out
}

// SetLoRAScales sets the default scales, those of later requests without a
// lora field, as llama-server's POST /lora-adapters: refs as a request's
// lora field (checked the same way: a *RequestError naming lora[i]), the
// adapters it leaves out at scale 0. Sequences already running keep theirs.
func (r *Runtime) SetLoRAScales(refs []messages.LoRARef) error {
	if err := r.checkLoRA(refs); err != nil {
		return err
	}
	scales := make([]float32, len(r.cfg.LoRA))
	for _, ref := range refs {
		scales[ref.ID] = ref.Scale
	}
	r.lora.mu.Lock()
	r.lora.scales = scales
	r.lora.mu.Unlock()
	return nil
}

// loraScales holds the default scale of each loaded adapter, which
// SetLoRAScales changes while requests read it.
type loraScales struct {
	mu     sync.Mutex
	scales []float32 // (n_adapters)
}

func (l *loraScales) init(adapters []lora.Scaled) {
	l.scales = make([]float32, len(adapters))
	for i, a := range adapters {
		l.scales[i] = a.Scale
	}
}

// defaults is every adapter at its default scale, as a lora field.
func (l *loraScales) defaults() []messages.LoRARef {
	l.mu.Lock()
	defer l.mu.Unlock()
	refs := make([]messages.LoRARef, len(l.scales))
	for i, s := range l.scales {
		refs[i] = messages.LoRARef{ID: i, Scale: s}
	}
	return refs
}
