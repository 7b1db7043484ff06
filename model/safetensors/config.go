package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Config is the part of a Hugging Face config.json a Llama-family loader
// needs. ReadConfig fills the defaults noted on each field.
type Config struct {
	Architectures         []string     `json:"architectures"` // e.g. ["LlamaForCausalLM"]
	ModelType             string       `json:"model_type"`    // "llama", "mistral", "qwen2", ...
	HiddenSize            int          `json:"hidden_size"`
	IntermediateSize      int          `json:"intermediate_size"`
	NumHiddenLayers       int          `json:"num_hidden_layers"`
	NumAttentionHeads     int          `json:"num_attention_heads"`
	NumKeyValueHeads      int          `json:"num_key_value_heads"` // default NumAttentionHeads
	HeadDim               int          `json:"head_dim"`            // default HiddenSize / NumAttentionHeads
	RMSNormEps            float64      `json:"rms_norm_eps"`        // default 1e-6 (LlamaConfig's)
	RopeTheta             float64      `json:"rope_theta"`          // default 10000
	RopeScaling           *RopeScaling `json:"rope_scaling"`        // nil: no scaling
	MaxPositionEmbeddings int          `json:"max_position_embeddings"`
	VocabSize             int          `json:"vocab_size"`
	TieWordEmbeddings     bool         `json:"tie_word_embeddings"` // absent: false, as in LlamaConfig
	AttentionBias         bool         `json:"attention_bias"`
	BOSTokenID            TokenIDs     `json:"bos_token_id"`
	EOSTokenID            TokenIDs     `json:"eos_token_id"`
	TorchDType            string       `json:"torch_dtype"`    // "float32", "bfloat16", ...; newer files call it "dtype"
	SlidingWindow         *int         `json:"sliding_window"` // nil: full attention
}

// RopeScaling is config.json's rope_scaling object.
type RopeScaling struct {
	RopeType                      string  // "linear", "dynamic", "llama3", "yarn", ...; read from rope_type or the older type
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`                  // llama3
	HighFreqFactor                float64 `json:"high_freq_factor"`                 // llama3
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"` // llama3, yarn
	BetaFast                      float64 `json:"beta_fast"`                        // yarn
	BetaSlow                      float64 `json:"beta_slow"`                        // yarn
	AttentionFactor               float64 `json:"attention_factor"`                 // yarn
}

// UnmarshalJSON reads rope_type, falling back to the older key "type".
func (r *RopeScaling) UnmarshalJSON(b []byte) error {
	type plain RopeScaling
	var v struct {
		plain
		RopeType string `json:"rope_type"`
		Type     string `json:"type"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = RopeScaling(v.plain)
	r.RopeType = v.RopeType
	if r.RopeType == "" {
		r.RopeType = v.Type
	}
	return nil
}

// TokenIDs is a token id field written as a number, a list of numbers or null.
type TokenIDs []int

// UnmarshalJSON accepts 2, [2, 32000] and null.
func (t *TokenIDs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*t = nil
		return nil
	case len(b) > 0 && b[0] == '[':
		var ids []int
		if err := json.Unmarshal(b, &ids); err != nil {
			return err
		}
		*t = ids
		return nil
	}
	var id int
	if err := json.Unmarshal(b, &id); err != nil {
		return err
	}
	*t = TokenIDs{id}
	return nil
}

// ReadConfig parses dir/config.json, fills defaults and validates the result.
// A missing file is an error wrapping fs.ErrNotExist.
func ReadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	c, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return c, nil
}

func parseConfig(b []byte) (*Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	// transformers 5 writes "dtype" and folds rope_theta and rope_scaling
	// into rope_parameters.
	var newer struct {
		DType          string       `json:"dtype"`
		RopeParameters *RopeScaling `json:"rope_parameters"`
	}
	var theta struct {
		RopeParameters struct {
			RopeTheta float64 `json:"rope_theta"`
		} `json:"rope_parameters"`
	}
	if err := json.Unmarshal(b, &newer); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &theta); err != nil {
		return nil, err
	}
	if c.TorchDType == "" {
		c.TorchDType = newer.DType
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = theta.RopeParameters.RopeTheta
	}
	if p := newer.RopeParameters; p != nil && c.RopeScaling == nil && p.RopeType != "" && p.RopeType != "default" {
		c.RopeScaling = p
	}
	c.setDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) setDefaults() {
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if c.RMSNormEps == 0 {
		c.RMSNormEps = 1e-6
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
}

// Validate reports the first field a Llama-family forward pass cannot use.
func (c *Config) Validate() error {
	switch {
	case c.HiddenSize <= 0:
		return fmt.Errorf("hidden_size %d must be positive", c.HiddenSize)
	case c.IntermediateSize <= 0:
		return fmt.Errorf("intermediate_size %d must be positive", c.IntermediateSize)
	case c.NumHiddenLayers <= 0:
		return fmt.Errorf("num_hidden_layers %d must be positive", c.NumHiddenLayers)
	case c.NumAttentionHeads <= 0:
		return fmt.Errorf("num_attention_heads %d must be positive", c.NumAttentionHeads)
	case c.NumKeyValueHeads <= 0 || c.NumAttentionHeads%c.NumKeyValueHeads != 0:
		return fmt.Errorf("num_key_value_heads %d must be positive and divide num_attention_heads %d", c.NumKeyValueHeads, c.NumAttentionHeads)
	case c.HeadDim <= 0:
		return fmt.Errorf("head_dim %d must be positive", c.HeadDim)
	case c.VocabSize <= 0:
		return fmt.Errorf("vocab_size %d must be positive", c.VocabSize)
	case c.RMSNormEps < 0:
		return fmt.Errorf("rms_norm_eps %g must not be negative", c.RMSNormEps)
	case c.RopeTheta <= 0:
		return fmt.Errorf("rope_theta %g must be positive", c.RopeTheta)
	case c.SlidingWindow != nil && *c.SlidingWindow < 0:
		return fmt.Errorf("sliding_window %d must not be negative", *c.SlidingWindow)
	}
	if r := c.RopeScaling; r != nil {
		return r.validate()
	}
	return nil
}

func (r *RopeScaling) validate() error {
	if r.RopeType == "" || r.RopeType == "default" {
		return nil
	}
	if r.Factor <= 0 {
		return fmt.Errorf("rope_scaling %s: factor %g must be positive", r.RopeType, r.Factor)
	}
	if r.RopeType == "llama3" {
		if r.OriginalMaxPositionEmbeddings <= 0 {
			return errors.New("rope_scaling llama3: original_max_position_embeddings must be positive")
		}
		if r.LowFreqFactor <= 0 || r.HighFreqFactor <= r.LowFreqFactor {
			return fmt.Errorf("rope_scaling llama3: need 0 < low_freq_factor (%g) < high_freq_factor (%g)", r.LowFreqFactor, r.HighFreqFactor)
		}
	}
	return nil
}
