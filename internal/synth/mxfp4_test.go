package synth_test

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/model/gguf"
)

// TestWriteMXFP4 checks the tensor types of the MXFP4 file types: MXFP4_MOE
// as llama-quantize gives them (experts MXFP4, every other matrix Q8_0, the
// routers F32) on a mixture-of-experts shape, and the dense MXFP4 (every
// matrix MXFP4 but the output) on a dense and an MoE shape.
func TestWriteMXFP4(t *testing.T) {
	vf := stories260K(t)
	moe, _ := synth.LookupShape("qwen3moe-tiny")
	for _, tc := range []struct {
		typ   string
		shape synth.Shape
		want  func(name string) compute.DType
	}{
		{"MXFP4_MOE", moe, func(name string) compute.DType {
			switch {
			case strings.Contains(name, "_exps"):
				return compute.MXFP4
			case strings.Contains(name, "ffn_gate_inp"):
				return compute.F32
			}
			return compute.Q8_0
		}},
		{"MXFP4", moe, func(name string) compute.DType {
			switch {
			case strings.Contains(name, "ffn_gate_inp"):
				return compute.F32
			case name == "output.weight":
				return compute.Q8_0
			}
			return compute.MXFP4
		}},
		{"MXFP4", tiny, func(name string) compute.DType {
			if name == "output.weight" {
				return compute.Q8_0
			}
			return compute.MXFP4
		}},
	} {
		t.Run(tc.typ+"/"+tc.shape.Name, func(t *testing.T) {
			ft, ok := synth.LookupFileType(tc.typ)
			if !ok || ft.ID != 38 {
				t.Fatalf("file type %q: %+v, %v", tc.typ, ft, ok)
			}
			path, _ := writeTemp(t, synth.Options{Shape: tc.shape, Type: ft, Vocab: vf, Seed: 1, Workers: 2})
			g, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			n := 0
			for _, ti := range g.Tensors() {
				if len(ti.Shape) < 2 {
					continue // vectors stay F32
				}
				n++
				if want := tc.want(ti.Name); ti.Type != want {
					t.Errorf("%s: %v, want %v", ti.Name, ti.Type, want)
				}
			}
			if n == 0 {
				t.Fatal("no matrices")
			}
		})
	}
}
