package bench

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/gguf"
)

// TestDescribeMoE counts a mixture of experts' experts: the parameters
// DescribeModel reports are every matrix in the file (what llama-bench's
// "params" counts, less the norms), and the type is the experts'.
func TestDescribeMoE(t *testing.T) {
	shape, _ := synth.LookupShape("qwen3moe-tiny")
	ft, ok := synth.LookupFileType("MXFP4_MOE")
	if !ok {
		t.Fatal("no file type MXFP4_MOE")
	}
	vf, err := gguf.Open(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer vf.Close()
	path := filepath.Join(t.TempDir(), "moe.gguf")
	if _, err := synth.WriteFile(path, synth.Options{Shape: shape, Type: ft, Vocab: vf, Seed: 1, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	file, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, ti := range file.Tensors() {
		if len(ti.Shape) >= 2 {
			n := int64(1)
			for _, d := range ti.Shape {
				n *= int64(d)
			}
			want += n
		}
	}
	file.Close()
	m, err := model.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info := DescribeModel(m)
	if info.Params != want || !strings.HasPrefix(info.Name, "qwen3moe ") || !strings.Contains(info.Name, " MXFP4") {
		t.Errorf("DescribeModel = %+v, want %d parameters and MXFP4 experts", info, want)
	}
}
