package synth_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
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
		{"qwen2vl-tiny", []string{"clip.vision.feed_forward_length", "clip.vision.image_mean"},
			[]string{"v.patch_embd.weight", "v.patch_embd.weight.1", "v.blk.3.ln1.bias", "v.blk.3.ffn_up.bias", "v.post_ln.bias", "mm.0.bias", "mm.2.weight"}},
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
	// Qwen2-VL: quick GELU (neither use_gelu nor use_silu), no windows, no
	// gate, no positions; feed_forward_length the merger's output width
	// (the converter's value), the feed-forward's own in the tensors.
	f, err := gguf.Parse("qwen2vl-tiny", write("qwen2vl-tiny", "qwen2vl-tiny", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"clip.use_gelu", "clip.use_silu", "clip.vision.n_wa_pattern"} {
		if _, ok := f.Value(k); ok {
			t.Errorf("qwen2vl-tiny: key %s", k)
		}
	}
	for _, n := range []string{"v.blk.0.ffn_gate.weight", "v.position_embd.weight", "v.patch_embd.bias"} {
		if _, err := f.Tensor(n); err == nil {
			t.Errorf("qwen2vl-tiny: tensor %s", n)
		}
	}
	up, err := f.Tensor("v.blk.0.ffn_up.weight")
	if ffn, _ := f.Int("clip.vision.feed_forward_length"); err != nil || ffn != 64 || !slices.Equal(up.Shape, []int{64, 256}) {
		t.Errorf("qwen2vl-tiny: feed_forward_length %d, ffn_up %v (%v); want 64, [64 256]", ffn, up, err)
	}
	bad := synth.ProjectorShape{Name: "bad", Type: "gemma3", Dim: 10, FFN: 8, Heads: 3, Layers: 1, ImageSize: 16, Patch: 4, Merge: 2, ProjDim: 8}
	if err := synth.WriteProjector(filepath.Join(dir, "bad"), synth.ProjectorOptions{Shape: bad}); err == nil {
		t.Error("a width not a multiple of the heads: no error")
	}
	win, _ := synth.LookupProjectorShape("qwen2vl-tiny")
	win.WAPattern = 2
	if err := synth.WriteProjector(filepath.Join(dir, "win"), synth.ProjectorOptions{Shape: win}); err == nil {
		t.Error("a qwen2vl_merger shape with windows: no error")
	}
	llava := synth.ProjectorShape{Name: "llava", Type: "mlp", Dim: 8, FFN: 8, Heads: 2, Layers: 1, ImageSize: 16, Patch: 4, Merge: 2, ProjDim: 8}
	if err := synth.WriteProjector(filepath.Join(dir, "llava"), synth.ProjectorOptions{Shape: llava}); err == nil {
		t.Error("an unsupported projector type: no error")
	}
}
