package model

import (
	"fmt"
	"math"
	"regexp"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/safetensors"
)

// hfArch maps config.json's model_type to the architecture that runs it.
var hfArch = map[string]string{"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}

// configFromHF converts a Hugging Face config. Hugging Face checkpoints keep
// q/k rows in the order of rotate-half rope, so llama runs with NeoX pairing
// instead of permuting the weights as GGUF conversion does.
func configFromHF(h *safetensors.Config, st *safetensors.Model) (*Config, error) {
	arch, ok := hfArch[h.ModelType]
	if !ok {
		return nil, fmt.Errorf("model: model_type %q: %w", h.ModelType, ErrUnsupportedArch)
	}
	c := &Config{
		Arch: arch, Dim: h.HiddenSize, Layers: h.NumHiddenLayers, Heads: h.NumAttentionHeads,
		KVHeads: h.NumKeyValueHeads, HeadDim: h.HeadDim, FFNDim: h.IntermediateSize, VocabSize: h.VocabSize,
		ContextLen: h.MaxPositionEmbeddings, NormEps: float32(h.RMSNormEps),
		RopeBase: float32(h.RopeTheta), RopeScale: 1, RopeNeox: true,
		QKVBias: arch == "qwen2" || h.AttentionBias, QKNorm: arch == "qwen3",
		TiedOutput: h.TieWordEmbeddings || !st.Has("lm_head.weight"),
	}
	c.RopeDim = c.HeadDim
	if rs := h.RopeScaling; rs != nil {
		switch rs.RopeType {
		case "linear":
			c.RopeScale = float32(1 / rs.Factor)
		case "llama3":
			c.RopeFactors = llama3RopeFactors(rs, float64(c.RopeBase), c.RopeDim)
		case "default", "":
		default:
			return nil, fmt.Errorf("model: rope scaling %q is not supported (troupe supports linear and llama3)", rs.RopeType)
		}
	}
	if emb, err := st.Tensor("model.embed_tokens.weight"); err == nil && c.VocabSize == 0 {
		c.VocabSize = emb.Rows()
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// llama3RopeFactors computes the per-frequency divisors of Llama 3.1's rope
// scaling, as llama.cpp's converter stores them in rope_freqs.weight.
func llama3RopeFactors(rs *safetensors.RopeScaling, base float64, dim int) []float32 {
	factor, low, high := rs.Factor, rs.LowFreqFactor, rs.HighFreqFactor
	if low == 0 {
		low = 1
	}
	if high == 0 {
		high = 4
	}
	old := float64(rs.OriginalMaxPositionEmbeddings)
	if old == 0 {
		old = 8192
	}
	lowWavelen, highWavelen := old/low, old/high
	out := make([]float32, dim/2)
	for i := range out {
		freq := 1 / math.Pow(base, float64(2*i)/float64(dim))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = float32(factor)
		default:
			smooth := (old/wavelen - low) / (high - low)
			out[i] = float32(1 / ((1-smooth)/factor + smooth))
		}
	}
	return out
}

// hfNames serves tensors under their GGUF names from a Hugging Face
// checkpoint.
type hfNames struct{ st *safetensors.Model }

var (
	hfLayer = regexp.MustCompile(`^blk\.(\d+)\.(\w+)\.(weight|bias)$`)
	hfTop   = map[string]string{
		"token_embd.weight":  "model.embed_tokens.weight",
		"output_norm.weight": "model.norm.weight",
		"output.weight":      "lm_head.weight",
	}
	hfBlock = map[string]string{
		"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
		"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
		"attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
		"ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
	}
)

func (h hfNames) Tensor(name string) (*compute.Tensor, error) {
	if n, ok := hfTop[name]; ok {
		return h.st.Tensor(n)
	}
	if m := hfLayer.FindStringSubmatch(name); m != nil {
		if n, ok := hfBlock[m[2]]; ok {
			return h.st.Tensor("model.layers." + m[1] + "." + n + "." + m[3])
		}
	}
	return nil, fmt.Errorf("model: no Hugging Face name for tensor %q", name)
}

// LoadSafetensors opens a Hugging Face model directory.
func LoadSafetensors(dir string) (*Model, *safetensors.Model, error) {
	return LoadSafetensorsWith(dir, LoadOptions{})
}

// LoadSafetensorsWith is LoadSafetensors with load options.
func LoadSafetensorsWith(dir string, o LoadOptions) (*Model, *safetensors.Model, error) {
	st, err := safetensors.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	h := st.Config()
	if h == nil {
		st.Close()
		return nil, nil, fmt.Errorf("model: %s: no config.json", dir)
	}
	c, err := configFromHF(h, st)
	if err == nil {
		var w *Weights
		if w, err = loadWeights(hfNames{st}, c, o); err == nil {
			m := &Model{Config: *c, Weights: w, Path: dir, closer: st}
			if err = m.deriveFeatures(); err == nil {
				return m, st, nil
			}
			st.Close()
			return nil, nil, err
		}
	}
	st.Close()
	return nil, nil, fmt.Errorf("model: %s: %w", dir, err)
}
