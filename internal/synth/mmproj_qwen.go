package synth

import (
	"fmt"

	"github.com/troupe-llm/troupe/compute"
)

// writeQwen2VL writes a Qwen2-VL or Qwen2.5-VL projector as llama.cpp's
// converter (conversion/qwenvl.py, Qwen2VLVisionModel) does: the Conv3D
// patch kernel split into its two temporal slices (v.patch_embd.weight and
// .weight.1, no bias), q/k/v split from qkv with biases, the merger's norm
// as v.post_ln and its two layers as mm.0 and mm.2; no position embedding
// (2-D rope). Qwen2.5-VL (qwen2.5vl_merger): RMS norms without biases, a
// gated SiLU feed-forward with biases (clip.use_silu) and window attention
// (clip.vision.n_wa_pattern). Qwen2-VL (qwen2vl_merger): layer norms with
// biases, a quick-GELU feed-forward with biases (neither use_gelu nor
// use_silu), no windows; and as feed_forward_length the vision config's
// hidden_size, which is the merger's output width (the converter's rename
// of Qwen2-VL's config), not the feed-forward's.
func writeQwen2VL(path string, s ProjectorShape, seed uint64) error {
	v25 := s.Type == "qwen2.5vl_merger"
	if s.Dim%s.Heads != 0 || (s.Dim/s.Heads)%4 != 0 || s.Patch < 1 || s.Merge != 2 || (s.WAPattern < 1) == v25 || s.ProjDim < 1 || s.ImageSize%(s.Patch*s.Merge) != 0 {
		return fmt.Errorf("synth: projector shape %+v is not consistent", s)
	}
	keys := s
	if !v25 {
		keys.FFN = s.ProjDim
	}
	gw := newClipWriter(keys, []float32{0.48145466, 0.4578275, 0.40821073}, []float32{0.26862954, 0.26130258, 0.27577711})
	if v25 {
		gw.SetKV("clip.use_silu", true)
		gw.SetKV("clip.vision.n_wa_pattern", uint32(s.WAPattern))
	}

	d, p := s.Dim, s.Patch
	pt := &projTensors{gw: gw, seed: seed}
	add, ones, in := pt.add, pt.ones, invSqrt
	norm := pt.norm // layer norms: weight and bias
	if v25 {
		norm = func(name string, n int) { ones(name+".weight", n) } // RMS norms: weight only
	}

	add("v.patch_embd.weight", compute.F16, in(6*p*p), p, p, 3, d)
	add("v.patch_embd.weight.1", compute.F16, in(6*p*p), p, p, 3, d)
	for i := range s.Layers {
		b := fmt.Sprintf("v.blk.%d.", i)
		pt.attention(b, d)
		norm(b+"ln1", d)
		norm(b+"ln2", d)
		if v25 {
			pt.linear(b+"ffn_gate", d, s.FFN)
		}
		pt.linear(b+"ffn_up", d, s.FFN)
		pt.linear(b+"ffn_down", s.FFN, d)
	}
	norm("v.post_ln", d)
	k := 4 * d
	pt.linear("mm.0", k, k)
	pt.linear("mm.2", k, s.ProjDim)
	return pt.write(path)
}

// writeQwen3VL writes a Qwen3-VL projector as llama.cpp's converter
// (conversion/qwen3vl.py, Qwen3VLVisionModel) does: the Conv3D patch
// kernel's two temporal slices and its bias, learned positions of an
// image_size/patch square grid (v.position_embd, F32), fused q/k/v with
// biases, layer norms with biases, a GELU feed-forward (no gate), the
// merger's norm as v.post_ln and its layers as mm.0 and mm.2, and for each
// deepstack layer il its merger v.deepstack.il.{norm,fc1,fc2}
// (clip.vision.is_deepstack_layers marks them).
func writeQwen3VL(path string, s ProjectorShape, seed uint64) error {
	side := 0
	if s.Patch > 0 {
		side = s.ImageSize / s.Patch
	}
	ok := s.Dim%s.Heads == 0 && (s.Dim/s.Heads)%4 == 0 && s.Patch >= 1 && s.Merge == 2 && s.ProjDim >= 1 &&
		s.ImageSize%s.Patch == 0 && side%2 == 0
	deep := make([]bool, s.Layers)
	for _, il := range s.Deepstack {
		if il < 0 || il >= s.Layers || deep[il] {
			ok = false
			break
		}
		deep[il] = true
	}
	if !ok {
		return fmt.Errorf("synth: projector shape %+v is not consistent", s)
	}
	gw := newClipWriter(s, []float32{0.5, 0.5, 0.5}, []float32{0.5, 0.5, 0.5})
	gw.SetKV("clip.use_gelu", true)
	gw.SetKV("clip.vision.spatial_merge_size", uint32(s.Merge))
	gw.SetKV("clip.vision.is_deepstack_layers", deep)

	d, p := s.Dim, s.Patch
	pt := &projTensors{gw: gw, seed: seed}
	add, in := pt.add, invSqrt

	add("v.patch_embd.weight", compute.F16, in(6*p*p), p, p, 3, d)
	add("v.patch_embd.weight.1", compute.F16, in(6*p*p), p, p, 3, d)
	add("v.patch_embd.bias", compute.F32, 0.02, d)
	add("v.position_embd.weight", compute.F32, 0.5, d, side*side)
	for i := range s.Layers {
		b := fmt.Sprintf("v.blk.%d.", i)
		pt.linear(b+"attn_qkv", d, 3*d)
		pt.linear(b+"attn_out", d, d)
		pt.norm(b+"ln1", d)
		pt.norm(b+"ln2", d)
		pt.linear(b+"ffn_up", d, s.FFN)
		pt.linear(b+"ffn_down", s.FFN, d)
	}
	pt.norm("v.post_ln", d)
	k := 4 * d
	pt.linear("mm.0", k, k)
	pt.linear("mm.2", k, s.ProjDim)
	for _, il := range s.Deepstack {
		b := fmt.Sprintf("v.deepstack.%d.", il)
		pt.norm(b+"norm", k)
		pt.linear(b+"fc1", k, k)
		pt.linear(b+"fc2", k, s.ProjDim)
	}
	return pt.write(path)
}
