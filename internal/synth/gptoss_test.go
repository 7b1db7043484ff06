package synth_test

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/gguf"
)

// TestWriteExpertType writes gpt-oss-tiny as Q8_0 with F16 experts: the
// expert tensors take F16, the rest the file type's, the biases stay f32,
// and troupe loads it; an unknown expert type is an error.
func TestWriteExpertType(t *testing.T) {
	vf := stories260K(t)
	s, _ := synth.LookupShape("gpt-oss-tiny")
	ft, _ := synth.LookupFileType("Q8_0")
	path, _ := writeTemp(t, synth.Options{Shape: s, Type: ft, Vocab: vf, Seed: 1, Workers: 2, ExpertType: "F16"})
	g, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for name, want := range map[string]compute.DType{
		"blk.0.ffn_gate_exps.weight": compute.F16, "blk.3.ffn_down_exps.weight": compute.F16,
		"blk.0.attn_q.weight": compute.Q8_0, "blk.0.ffn_gate_inp.weight": compute.F32,
		"blk.0.ffn_up_exps.bias": compute.F32, "blk.0.attn_sinks.weight": compute.F32,
	} {
		tt, err := g.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		if tt.Type != want {
			t.Errorf("%s: %s, want %s", name, tt.Type, want)
		}
	}
	m, err := model.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	_, err = synth.Write(new(strings.Builder), synth.Options{Shape: s, Type: ft, Vocab: vf, Seed: 1, ExpertType: "Q9_9"})
	if err == nil || !strings.Contains(err.Error(), `"Q9_9"`) {
		t.Errorf("unknown expert type: error %v", err)
	}
}
