package model_test

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/gguf"
)

// writeGGUF writes a tiny GGUF with the given architecture and keys.
func writeGGUF(t *testing.T, arch string, kv map[string]any) string {
	w := gguf.NewWriter(3)
	w.SetKV("general.architecture", arch)
	for k, v := range kv {
		w.SetKV(k, v)
	}
	if err := w.AddTensor("token_embd.weight", compute.F32, []int{4, 8}, make([]byte, 4*8*4)); err != nil {
		t.Fatal(err)
	}
	return model.WriteTempGGUF(t, w)
}

func TestUnsupportedArchitecture(t *testing.T) {
	for _, arch := range []string{"gptj", "mamba", ""} {
		_, _, err := model.LoadGGUF(writeGGUF(t, arch, nil))
		if err == nil {
			t.Fatalf("%q: loaded", arch)
		}
		for _, want := range append([]string{"unsupported architecture"}, model.Architectures...) {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q: error %q does not mention %q", arch, err, want)
			}
		}
	}
}

func TestMissingHyperparameters(t *testing.T) {
	_, _, err := model.LoadGGUF(writeGGUF(t, "llama", map[string]any{"llama.embedding_length": uint32(4)}))
	if err == nil || !strings.Contains(err.Error(), "missing llama.block_count") {
		t.Errorf("error %v, want it to name the missing key", err)
	}
}
