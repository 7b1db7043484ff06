package server

import "encoding/json"

// SamplingDefaults are the server's sampling parameters for requests that
// leave them out (as vLLM's --generation-config): each field, when set,
// stands in for the request field of the same meaning; a request's own
// value always wins. Unset fields keep OpenAI's defaults.
type SamplingDefaults struct {
	Temperature       *float64 // temperature
	TopK              *int     // top_k
	TopP              *float64 // top_p
	MinP              *float64 // min_p
	RepetitionPenalty *float64 // repetition_penalty
	Seed              *int64   // seed
}

// sampled is a request body with the shared sampling fields.
type sampled interface{ sampling() *samplingFields }

func (f *samplingFields) sampling() *samplingFields { return f }

// fill sets f's absent fields from d. The request's values are checked
// afterwards as the client's would be, so a default outside a field's
// range is refused there too (serve checks them at startup).
func (d *SamplingDefaults) fill(f *samplingFields) {
	set := func(dst **float64, v *float64) {
		if *dst == nil && v != nil {
			x := *v
			*dst = &x
		}
	}
	set(&f.Temperature, d.Temperature)
	set(&f.TopP, d.TopP)
	set(&f.MinP, d.MinP)
	set(&f.RepetitionPenalty, d.RepetitionPenalty)
	if f.TopK == nil && d.TopK != nil {
		k := *d.TopK
		f.TopK = &k
	}
	if f.Seed == nil && d.Seed != nil {
		v := *d.Seed
		f.Seed = &v
	}
}

// ollamaOptions are d under Ollama's option names (nil when d sets
// nothing), which Ollama's routes apply where a request's options leave
// them out, as Ollama applies a Modelfile's PARAMETERs.
func (d *SamplingDefaults) ollamaOptions() map[string]json.RawMessage {
	opts := map[string]json.RawMessage{}
	put := func(name string, v any) {
		if b, err := json.Marshal(v); err == nil {
			opts[name] = b
		}
	}
	if d.Temperature != nil {
		put("temperature", *d.Temperature)
	}
	if d.TopK != nil {
		put("top_k", *d.TopK)
	}
	if d.TopP != nil {
		put("top_p", *d.TopP)
	}
	if d.MinP != nil {
		put("min_p", *d.MinP)
	}
	if d.RepetitionPenalty != nil {
		put("repeat_penalty", *d.RepetitionPenalty)
	}
	if d.Seed != nil {
		put("seed", *d.Seed)
	}
	if len(opts) == 0 {
		return nil
	}
	return opts
}
