package model

import (
	"fmt"
	"slices"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// configFromGGUF reads the hyperparameters of a GGUF file's architecture.
func configFromGGUF(f *gguf.File) (*Config, error) {
	arch, ok := f.String("general.architecture")
	if !ok {
		return nil, fmt.Errorf("model: %s: no general.architecture key", f.Path)
	}
	c := &Config{Arch: arch}
	if !slices.Contains(Architectures, arch) {
		return nil, fmt.Errorf("model: %s: architecture %q: %w", f.Path, arch, ErrUnsupportedArch)
	}
	r := &ggufKeys{f: f, arch: arch}
	c.Dim = r.int("embedding_length", -1)
	c.Layers = r.int("block_count", -1)
	c.Heads = r.int("attention.head_count", -1)
	c.KVHeads = r.int("attention.head_count_kv", c.Heads)
	c.FFNDim = r.int("feed_forward_length", -1)
	c.ContextLen = r.int("context_length", 2048)
	if c.Heads > 0 {
		c.HeadDim = r.int("attention.key_length", c.Dim/c.Heads)
	}
	c.RopeDim = r.int("rope.dimension_count", c.HeadDim)
	c.NormEps = float32(r.float("attention.layer_norm_rms_epsilon", 1e-5))
	c.RopeBase = float32(r.float("rope.freq_base", 10000))
	c.RopeScale = 1
	if typ, _ := f.String(arch + ".rope.scaling.type"); typ == "linear" {
		if factor := r.float("rope.scaling.factor", 1); factor > 0 {
			c.RopeScale = float32(1 / factor)
		}
	} else if typ != "" && typ != "none" && !(arch == "phi3" && typ == "longrope") && !(arch == "gpt-oss" && typ == "yarn") {
		return nil, fmt.Errorf("model: %s: rope scaling %q is not supported (troupe supports linear and llama3)", f.Path, typ)
	}
	c.RopeNeox = arch == "qwen2" || arch == "qwen2vl" || arch == "qwen3" || arch == "qwen3vl" || isMoE(arch) || isGemma(arch)
	c.QKVBias = arch == "qwen2" || arch == "qwen2vl" || arch == "qwen2moe"
	c.QKNorm = arch == "qwen3" || arch == "qwen3moe" || arch == "qwen3vl"
	c.Pooling = Pooling(r.int("pooling_type", 0))
	bertConfig(c, r)
	if isGemma(arch) {
		gemmaConfig(r, c)
	}
	if arch == "smollm3" {
		smollm3Config(c)
	}
	if arch == "qwen2vl" || arch == "qwen3vl" {
		qwen2vlConfig(f, r, c)
	}
	if arch == "qwen3vl" {
		c.RopeInterleaved = true
		c.Deepstack = r.int("n_deepstack_layers", 0)
	}
	if arch == "phi3" {
		phi3Config(f, r, c)
	}
	if isMoE(arch) {
		moeConfig(r, c)
	}
	if arch == "gpt-oss" {
		gptossConfig(r, c)
	}
	if r.err != nil {
		return nil, r.err
	}

	emb, err := f.Tensor("token_embd.weight")
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	c.VocabSize = emb.Rows()
	if _, err := f.Tensor("output.weight"); err != nil {
		c.TiedOutput = true
	}
	if t, err := f.Tensor("rope_freqs.weight"); err == nil {
		c.RopeFactors = make([]float32, t.Elems())
		if err := compute.Dequantize(t.Type, t.Data, c.RopeFactors); err != nil {
			return nil, fmt.Errorf("model: %s: rope_freqs.weight: %w", f.Path, err)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("model: %s: %w", f.Path, err)
	}
	return c, nil
}

// ggufKeys reads "<arch>.<key>" values, keeping the first error.
type ggufKeys struct {
	f    *gguf.File
	arch string
	err  error
}

// int returns the key's value, def when absent; def < 0 makes it required.
func (r *ggufKeys) int(key string, def int) int {
	full := r.arch + "." + key
	if v, ok := r.f.Uint(full); ok {
		return int(v)
	}
	if _, present := r.f.Value(full); present && r.err == nil {
		r.err = fmt.Errorf("model: %s: %s is not a non-negative integer", r.f.Path, full)
	}
	if def < 0 && r.err == nil {
		r.err = fmt.Errorf("model: %s: missing %s", r.f.Path, full)
	}
	return max(def, 0)
}

func (r *ggufKeys) float(key string, def float64) float64 {
	if v, ok := r.f.Float(r.arch + "." + key); ok {
		return v
	}
	return def
}
