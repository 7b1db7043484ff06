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
	setDefault(&f.Temperature, d.Temperature)
	setDefault(&f.TopK, d.TopK)
	setDefault(&f.TopP, d.TopP)
	setDefault(&f.MinP, d.MinP)
	setDefault(&f.RepetitionPenalty, d.RepetitionPenalty)
	setDefault(&f.Seed, d.Seed)
}

// setDefault sets *dst, when unset, to a copy of *v, when set.
func setDefault[T any](dst **T, v *T) {
	if *dst == nil && v != nil {
		x := *v
		*dst = &x
	}
}

// ollamaOptions are d under Ollama's option names (nil when d sets
// nothing), which Ollama's routes apply where a request's options leave
// them out, as Ollama applies a Modelfile's PARAMETERs.
func (d *SamplingDefaults) ollamaOptions() map[string]json.RawMessage {
	opts := map[string]json.RawMessage{}
	putOption(opts, "temperature", d.Temperature)
	putOption(opts, "top_k", d.TopK)
	putOption(opts, "top_p", d.TopP)
	putOption(opts, "min_p", d.MinP)
	putOption(opts, "repeat_penalty", d.RepetitionPenalty)
	putOption(opts, "seed", d.Seed)
	if len(opts) == 0 {
		return nil
	}
	return opts
}

// putOption sets opts[name] to *v's JSON, when v is set.
func putOption[T any](opts map[string]json.RawMessage, name string, v *T) {
	if v == nil {
		return
	}
	if b, err := json.Marshal(*v); err == nil {
		opts[name] = b
	}
}
