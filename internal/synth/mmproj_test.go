package synth_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/model/gguf"
)

// TestWriteProjector: the same options give the same bytes (the parity
// references depend on it), llama.cpp's keys and tensor names are there,
// and inconsistent shapes are refused.
func TestWriteProjector(t *testing.T) {
	dir := t.TempDir()
	write := func(name, shape string, seed uint64) []byte {
		s, ok := synth.LookupProjectorShape(shape)
		if !ok {
			t.Fatalf("no shape %s", shape)
		}
		path := filepath.Join(dir, name)
		if err := synth.WriteProjector(path, synth.ProjectorOptions{Shape: s, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := write("a", "gemma3-tiny", 1), write("b", "gemma3-tiny", 1), write("c", "gemma3-tiny", 2)
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Fatal("the same seed must give the same file, another seed another")
	}
	for _, tc := range []struct {
		shape string
		keys  []string
		names []string
	}{
		{"gemma3-tiny", []string{"clip.projector_type", "clip.use_gelu", "clip.vision.projector.scale_factor"},
			[]string{"v.patch_embd.weight", "v.blk.1.ffn_down.weight", "mm.soft_emb_norm.weight", "mm.input_projection.weight"}},
		{"idefics3-tiny", []string{"clip.vision.preproc_image_size", "clip.vision.image_mean"},
			[]string{"v.position_embd.weight", "v.post_ln.bias", "mm.model.fc.weight"}},
		{"qwen2.5vl-tiny", []string{"clip.use_silu", "clip.vision.n_wa_pattern"},
			[]string{"v.patch_embd.weight", "v.patch_embd.weight.1", "v.blk.3.ffn_gate.weight", "v.post_ln.weight", "mm.0.bias", "mm.2.weight"}},
		{"qwen3vl-tiny", []string{"clip.use_gelu", "clip.vision.is_deepstack_layers"},
			[]string{"v.patch_embd.bias", "v.position_embd.weight", "v.blk.3.attn_qkv.weight", "v.deepstack.2.fc2.bias", "mm.2.weight"}},
	} {
		f, err := gguf.Parse(tc.shape, write(tc.shape, tc.shape, 1))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range tc.keys {
			if _, ok := f.Value(k); !ok {
				t.Errorf("%s: no key %s", tc.shape, k)
			}
		}
		for _, n := range tc.names {
			if _, err := f.Tensor(n); err != nil {
				t.Errorf("%s: %v", tc.shape, err)
			}
		}
	}
	bad := synth.ProjectorShape{Name: "bad", Type: "gemma3", Dim: 10, FFN: 8, Heads: 3, Layers: 1, ImageSize: 16, Patch: 4, Merge: 2, ProjDim: 8}
	if err := synth.WriteProjector(filepath.Join(dir, "bad"), synth.ProjectorOptions{Shape: bad}); err == nil {
		t.Error("a width not a multiple of the heads: no error")
	}
	llava := synth.ProjectorShape{Name: "llava", Type: "mlp", Dim: 8, FFN: 8, Heads: 2, Layers: 1, ImageSize: 16, Patch: 4, Merge: 2, ProjDim: 8}
	if err := synth.WriteProjector(filepath.Join(dir, "llava"), synth.ProjectorOptions{Shape: llava}); err == nil {
		t.Error("an unsupported projector type: no error")
	}
}
