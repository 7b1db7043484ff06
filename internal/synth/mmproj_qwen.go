package synth

import (
	"fmt"

	"github.com/troupe-llm/troupe/compute"
)

// writeQwen25VL writes a Qwen2.5-VL projector as llama.cpp's converter
// (conversion/qwenvl.py, Qwen2VLVisionModel) does: the Conv3D patch kernel
// split into its two temporal slices (v.patch_embd.weight and .weight.1,
// no bias), q/k/v split from qkv with biases, RMS norms without biases,
// a gated SiLU feed-forward with biases, the merger's norm as v.post_ln
// and its two layers as mm.0 and mm.2; no position embedding (2-D rope).
func writeQwen25VL(path string, s ProjectorShape, seed uint64) error {
	if s.Dim%s.Heads != 0 || (s.Dim/s.Heads)%4 != 0 || s.Patch < 1 || s.Merge != 2 || s.WAPattern < 1 || s.ProjDim < 1 || s.ImageSize%(s.Patch*s.Merge) != 0 {
		return fmt.Errorf("synth: projector shape %+v is not consistent", s)
	}
	gw := newClipWriter(s, []float32{0.48145466, 0.4578275, 0.40821073}, []float32{0.26862954, 0.26130258, 0.27577711})
	gw.SetKV("clip.use_silu", true)
	gw.SetKV("clip.vision.n_wa_pattern", uint32(s.WAPattern))

	d, p := s.Dim, s.Patch
	pt := &projTensors{gw: gw, seed: seed}
	add, ones, in := pt.add, pt.ones, invSqrt

	add("v.patch_embd.weight", compute.F16, in(6*p*p), p, p, 3, d)
	add("v.patch_embd.weight.1", compute.F16, in(6*p*p), p, p, 3, d)
	for i := range s.Layers {
		b := fmt.Sprintf("v.blk.%d.", i)
		pt.attention(b, d)
		ones(b+"ln1.weight", d)
		ones(b+"ln2.weight", d)
		add(b+"ffn_gate.weight", compute.F16, in(d), d, s.FFN)
		add(b+"ffn_gate.bias", compute.F32, 0.02, s.FFN)
		add(b+"ffn_up.weight", compute.F16, in(d), d, s.FFN)
		add(b+"ffn_up.bias", compute.F32, 0.02, s.FFN)
		add(b+"ffn_down.weight", compute.F16, in(s.FFN), s.FFN, d)
		add(b+"ffn_down.bias", compute.F32, 0.02, d)
	}
	ones("v.post_ln.weight", d)
	k := 4 * d
	add("mm.0.weight", compute.F16, in(k), k, k)
	add("mm.0.bias", compute.F32, 0.02, k)
	add("mm.2.weight", compute.F16, in(k), k, s.ProjDim)
	add("mm.2.bias", compute.F32, 0.02, s.ProjDim)
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
	add, ones, in := pt.add, pt.ones, invSqrt

	add("v.patch_embd.weight", compute.F16, in(6*p*p), p, p, 3, d)
	add("v.patch_embd.weight.1", compute.F16, in(6*p*p), p, p, 3, d)
	add("v.patch_embd.bias", compute.F32, 0.02, d)
	add("v.position_embd.weight", compute.F32, 0.5, d, side*side)
	for i := range s.Layers {
		b := fmt.Sprintf("v.blk.%d.", i)
		add(b+"attn_qkv.weight", compute.F16, in(d), d, 3*d)
		add(b+"attn_qkv.bias", compute.F32, 0.02, 3*d)
		add(b+"attn_out.weight", compute.F16, in(d), d, d)
		add(b+"attn_out.bias", compute.F32, 0.02, d)
		ones(b+"ln1.weight", d)
		add(b+"ln1.bias", compute.F32, 0.02, d)
		ones(b+"ln2.weight", d)
		add(b+"ln2.bias", compute.F32, 0.02, d)
		add(b+"ffn_up.weight", compute.F16, in(d), d, s.FFN)
		add(b+"ffn_up.bias", compute.F32, 0.02, s.FFN)
		add(b+"ffn_down.weight", compute.F16, in(s.FFN), s.FFN, d)
		add(b+"ffn_down.bias", compute.F32, 0.02, d)
	}
	ones("v.post_ln.weight", d)
	add("v.post_ln.bias", compute.F32, 0.02, d)
	k := 4 * d
	add("mm.0.weight", compute.F16, in(k), k, k)
	add("mm.0.bias", compute.F32, 0.02, k)
	add("mm.2.weight", compute.F16, in(k), k, s.ProjDim)
	add("mm.2.bias", compute.F32, 0.02, s.ProjDim)
	for _, il := range s.Deepstack {
		b := fmt.Sprintf("v.deepstack.%d.", il)
		ones(b+"norm.weight", k)
		add(b+"norm.bias", compute.F32, 0.02, k)
		add(b+"fc1.weight", compute.F16, in(k), k, k)
		add(b+"fc1.bias", compute.F32, 0.02, k)
		add(b+"fc2.weight", compute.F16, in(k), k, s.ProjDim)
		add(b+"fc2.bias", compute.F32, 0.02, s.ProjDim)
	}
	return pt.write(path)
}
