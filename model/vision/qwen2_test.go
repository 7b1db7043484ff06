package vision

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/imagetest"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/model/gguf"
)

// qwen2File is the qwen2vl-tiny projector (synth, seed 1) rewritten with
// the keys of set added or replaced and the tensors of rename renamed.
func qwen2File(t *testing.T, set map[string]any, rename map[string]string) *gguf.File {
	t.Helper()
	s, _ := synth.LookupProjectorShape("qwen2vl-tiny")
	path := filepath.Join(t.TempDir(), "mmproj.gguf")
	if err := synth.WriteProjector(path, synth.ProjectorOptions{Shape: s, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter(3)
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		w.SetKV(k, v)
	}
	for k, v := range set {
		w.SetKV(k, v)
	}
	for _, ti := range f.Tensors() {
		tt, err := f.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		name := ti.Name
		if r, ok := rename[name]; ok {
			name = r
		}
		if err := w.AddTensor(name, ti.Type, ti.Shape, tt.Data); err != nil {
			t.Fatal(err)
		}
	}
	g, err := w.Parse("qwen2vl-tiny")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// prepareFile prepares testdata/img's image name with p.
func prepareFile(t *testing.T, p *Projector, name string) *Prepared {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "img", name))
	if err != nil {
		t.Fatal(err)
	}
	prep, err := p.Prepare(data)
	if err != nil {
		t.Fatal(err)
	}
	return prep
}

// encodeBig prepares and encodes testdata/img/big.png with p.
func encodeBig(t *testing.T, p *Projector) []float32 {
	t.Helper()
	out, err := p.Encode(compute.NewMatMuler(1), prepareFile(t, p, "big.png"))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQwen2Open: a Qwen2-VL projector as llama.cpp's converter writes it
// opens with the feed-forward width of its tensors (256; the file's
// feed_forward_length is the merger's output width, 64), gives M-RoPE
// positions between the vision markers, and with the old converters'
// swapped ffn_up/ffn_down names (which clip.cpp swaps back) the same rows
// bit for bit.
func TestQwen2Open(t *testing.T) {
	p := tinyProjectorSeed(t, "qwen2vl-tiny", 1)
	if ffn, _ := p.f.Int("clip.vision.feed_forward_length"); p.Type() != typeQwen2VL || !p.MRoPE() || p.Dim() != 64 || p.hp.ffn != 256 || ffn != 64 {
		t.Fatalf("Type %q MRoPE %v Dim %d ffn %d (key %d); want %s, true, 64, 256 (64)", p.Type(), p.MRoPE(), p.Dim(), p.hp.ffn, ffn, typeQwen2VL)
	}
	prep, err := p.Prepare(imagetest.PNG(t, testImage(100, 50)))
	if err != nil {
		t.Fatal(err)
	}
	if prep.Rows() != 18 || prep.Positions[7] != [3]int32{0, 1, 1} || prep.Chunks[0].Text != "<|vision_start|>" || prep.Chunks[2].Text != "<|vision_end|>" {
		t.Errorf("%d rows, row 7 at %v, chunks %v; want 18 (6×3), (0, 1, 1), the vision markers", prep.Rows(), prep.Positions[7], prep.Chunks)
	}

	rename := map[string]string{}
	for i := range p.hp.layers {
		for _, s := range []string{"weight", "bias"} {
			up, down := fmt.Sprintf("v.blk.%d.ffn_up.%s", i, s), fmt.Sprintf("v.blk.%d.ffn_down.%s", i, s)
			rename[up], rename[down] = down, up
		}
	}
	swapped, err := newProjector(qwen2File(t, nil, rename))
	if err != nil {
		t.Fatal(err)
	}
	if swapped.hp.ffn != 256 {
		t.Errorf("swapped names: ffn %d, want 256", swapped.hp.ffn)
	}
	if !slices.Equal(encodeBig(t, p), encodeBig(t, swapped)) {
		t.Error("swapped ffn_up/ffn_down names: other rows")
	}
}

// TestQwen2Refused: what clip.cpp's Qwen2-VL graph would run differently
// from what this package does is refused, naming it: window attention
// (n_wa_pattern, which only Qwen2.5-VL's files have), a SiLU feed-forward
// without a gate.
func TestQwen2Refused(t *testing.T) {
	for _, tc := range []struct {
		key  string
		v    any
		want string
	}{
		{"clip.vision.n_wa_pattern", uint32(2), "n_wa_pattern 2"},
		{"clip.use_silu", true, "activation silu"},
	} {
		_, err := newProjector(qwen2File(t, map[string]any{tc.key: tc.v}, nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.key, err, tc.want)
		}
	}
}

// TestQwen2ActivationMatters: the file's activation reaches the rows. With
// clip.use_gelu (GELU where Qwen2-VL's files take quick GELU) the
// projector opens and its rows differ from llama.cpp's quick-GELU ones far
// beyond TestParityEmbeddings' bound, so that test would see the wrong
// activation.
func TestQwen2ActivationMatters(t *testing.T) {
	p, err := newProjector(qwen2File(t, map[string]any{"clip.use_gelu": true}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.hp.ffnOp != "gelu" {
		t.Fatalf("activation %s, want gelu", p.hp.ffnOp)
	}
	got := encodeBig(t, p)
	want := readF32(t, filepath.Join("testdata", "qwen2vl-tiny", "big.emb"))
	if len(got) != len(want) {
		t.Fatalf("%d values, llama.cpp %d", len(got), len(want))
	}
	rel, abs := rowsOff(got, want, p.Dim())
	t.Logf("GELU against llama.cpp's quick GELU: max |Δ| %.3g, max |Δ|/std %.2f%% (TestParityEmbeddings' bound %.2f%%)", abs, 100*rel, 100*embBound)
	if rel < 4*embBound {
		t.Errorf("GELU for quick GELU: max |Δ|/std %.5f only", rel)
	}
}
