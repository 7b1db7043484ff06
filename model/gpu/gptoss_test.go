package gpu

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/gguf"
	"github.com/troupe-llm/troupe/model/synth"
)

// TestLoadRefusesGptOss: a gpt-oss file (experts, attention sinks, YaRN)
// fails to load on the GPU with an error saying it runs on the CPU only
// (for its experts, and for its attention without them),
// as the runtime then reports.
func TestLoadRefusesGptOss(t *testing.T) {
	dev := openDevice(t)
	s, _ := synth.LookupShape("gpt-oss-tiny")
	ft, _ := synth.LookupFileType("Q8_0")
	vocab, err := gguf.Open(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer vocab.Close()
	path := filepath.Join(t.TempDir(), "gpt-oss-tiny.gguf")
	if _, err := synth.WriteFile(path, synth.Options{Shape: s, Type: ft, Vocab: vocab, Seed: 1, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	m, _, err := model.LoadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// Refused for its experts, and with them out of the way for its
	// attention (sinks, biases, YaRN, windows).
	for _, want := range []string{"gpt-oss (mixture of experts) runs on the CPU only", "gpt-oss models run on the CPU only"} {
		g, err := Load(m, dev, Config{NumBlocks: 4, BlockSize: 16})
		if err == nil {
			g.Close()
			t.Fatal("Load accepted a gpt-oss model")
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
		m.Config.Experts = 0
	}
}
