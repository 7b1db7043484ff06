package synthtest

import (
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/model/gguf"
	"github.com/troupe-llm/troupe/model/lora"
)

// LoRAFile writes a random LoRA adapter of o for the model file at base
// (o.Base is set to it) into t's temporary directory, as
// `troupe synth --lora-of` would, and returns its path.
func LoRAFile(t testing.TB, base string, o synth.LoRAOptions) string {
	t.Helper()
	bf, err := gguf.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	o.Base = bf
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	if _, err := synth.WriteLoRA(path, o); err != nil {
		t.Fatal(err)
	}
	return path
}

// LoRA writes LoRAFile's adapter and opens it, closed with t.
func LoRA(t testing.TB, base string, o synth.LoRAOptions) *lora.Adapter {
	t.Helper()
	a, err := lora.Open(LoRAFile(t, base, o))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}
