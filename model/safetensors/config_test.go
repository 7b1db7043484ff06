package safetensors

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestParseConfig(t *testing.T) {
	const llama = `"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 128256`
	tests := []struct {
		name string
		json string
		want *Config // nil: only check that err contains wantErr
		err  string
	}{
		{"defaults", `{` + llama + `}`, &Config{
			HiddenSize: 4096, IntermediateSize: 14336, NumHiddenLayers: 32, NumAttentionHeads: 32, VocabSize: 128256,
			NumKeyValueHeads: 32, HeadDim: 128, RMSNormEps: 1e-6, RopeTheta: 10000,
		}, ""},
		{"llama 3.1", `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", ` + llama + `,
			"num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 131072,
			"rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
			"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "tie_word_embeddings": false, "torch_dtype": "bfloat16",
			"attention_bias": false, "head_dim": 128}`, &Config{
			Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama",
			HiddenSize: 4096, IntermediateSize: 14336, NumHiddenLayers: 32, NumAttentionHeads: 32, VocabSize: 128256,
			NumKeyValueHeads: 8, HeadDim: 128, RMSNormEps: 1e-5, RopeTheta: 500000, MaxPositionEmbeddings: 131072,
			RopeScaling: &RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192},
			BOSTokenID:  TokenIDs{128000}, EOSTokenID: TokenIDs{128001, 128008, 128009}, TorchDType: "bfloat16",
		}, ""},
		{"mistral sliding window, null head_dim", `{` + llama + `, "sliding_window": 4096, "head_dim": null, "rope_scaling": null, "eos_token_id": null}`, &Config{
			HiddenSize: 4096, IntermediateSize: 14336, NumHiddenLayers: 32, NumAttentionHeads: 32, VocabSize: 128256,
			NumKeyValueHeads: 32, HeadDim: 128, RMSNormEps: 1e-6, RopeTheta: 10000, SlidingWindow: ptr(4096),
		}, ""},
		{"old rope type key", `{` + llama + `, "rope_scaling": {"type": "linear", "factor": 2.0}}`, &Config{
			HiddenSize: 4096, IntermediateSize: 14336, NumHiddenLayers: 32, NumAttentionHeads: 32, VocabSize: 128256,
			NumKeyValueHeads: 32, HeadDim: 128, RMSNormEps: 1e-6, RopeTheta: 10000, RopeScaling: &RopeScaling{RopeType: "linear", Factor: 2},
		}, ""},
		{"transformers 5 rope_parameters and dtype", `{` + llama + `, "dtype": "bfloat16",
			"rope_parameters": {"rope_theta": 500000.0, "rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}`, &Config{
			HiddenSize: 4096, IntermediateSize: 14336, NumHiddenLayers: 32, NumAttentionHeads: 32, VocabSize: 128256,
			NumKeyValueHeads: 32, HeadDim: 128, RMSNormEps: 1e-6, RopeTheta: 500000, TorchDType: "bfloat16",
			RopeScaling: &RopeScaling{RopeType: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192},
		}, ""},
		{"explicit head_dim", `{` + llama + `, "head_dim": 256}`, &Config{
			HiddenSize: 4096, IntermediateSize: 14336, NumHiddenLayers: 32, NumAttentionHeads: 32, VocabSize: 128256,
			NumKeyValueHeads: 32, HeadDim: 256, RMSNormEps: 1e-6, RopeTheta: 10000,
		}, ""},
		{"kv heads do not divide", `{` + llama + `, "num_key_value_heads": 5}`, nil, "num_key_value_heads 5"},
		{"no vocab", `{"hidden_size": 64, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1}`, nil, "vocab_size"},
		{"negative eps", `{` + llama + `, "rms_norm_eps": -1}`, nil, "rms_norm_eps"},
		{"llama3 scaling without context", `{` + llama + `, "rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4}}`, nil, "original_max_position_embeddings"},
		{"zero factor", `{` + llama + `, "rope_scaling": {"rope_type": "linear"}}`, nil, "factor"},
		{"eos not a number", `{` + llama + `, "eos_token_id": "2"}`, nil, "cannot unmarshal"},
		{"eos list of strings", `{` + llama + `, "eos_token_id": ["2"]}`, nil, "cannot unmarshal"},
		{"not JSON", `{`, nil, "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig([]byte(tt.json))
			if tt.want == nil {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReadConfig(t *testing.T) {
	c, err := ReadConfig(tinyStoriesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama",
		HiddenSize: 128, IntermediateSize: 384, NumHiddenLayers: 2, NumAttentionHeads: 8, NumKeyValueHeads: 4,
		HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 10000, MaxPositionEmbeddings: 512, VocabSize: 2048,
		TieWordEmbeddings: true, BOSTokenID: TokenIDs{1}, EOSTokenID: TokenIDs{2}, TorchDType: "float32",
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}

	if _, err := ReadConfig(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing config.json: err = %v, want fs.ErrNotExist", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"hidden_size": "big"}`), 0o644)
	if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("bad config.json: err = %v, want one naming the file", err)
	}
}
