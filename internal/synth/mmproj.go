package synth

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// ProjectorShape is the shape of a multimodal projector (mmproj) file.
type ProjectorShape struct {
	Name      string
	Type      string // clip.projector_type: "gemma3", "idefics3", "qwen2vl_merger", "qwen2.5vl_merger" or "qwen3vl_merger"
	Dim       int    // the ViT's width
	FFN       int
	Heads     int
	Layers    int
	ImageSize int
	Patch     int
	Merge     int   // clip.vision.projector.scale_factor (Gemma 3's pooling kernel); written when not the type's default
	ProjDim   int   // the language model's embedding width (ProjectorOptions.TextDim overrides it)
	Longest   int   // clip.vision.preproc_image_size: Idefics3's resized image's longer side
	WAPattern int   // clip.vision.n_wa_pattern: Qwen2.5-VL's every WAPattern-th layer attends to the whole image, the others to windows
	Deepstack []int // Qwen3-VL: the layers whose outputs a deepstack merger also projects (clip.vision.is_deepstack_layers)
}

// ProjectorShapes are the shapes WriteProjector knows: Gemma 3's (4B's
// text width) and SmolVLM-256M's, and tiny ones of each type for tests.
var ProjectorShapes = []ProjectorShape{
	{Name: "gemma3", Type: "gemma3", Dim: 1152, FFN: 4304, Heads: 16, Layers: 27, ImageSize: 896, Patch: 14, Merge: 4, ProjDim: 2560},
	{Name: "gemma3-tiny", Type: "gemma3", Dim: 64, FFN: 128, Heads: 4, Layers: 2, ImageSize: 64, Patch: 8, Merge: 2, ProjDim: 64},
	{Name: "smolvlm-256m", Type: "idefics3", Dim: 768, FFN: 3072, Heads: 12, Layers: 12, ImageSize: 512, Patch: 16, Merge: 4, ProjDim: 576, Longest: 2048},
	{Name: "idefics3-tiny", Type: "idefics3", Dim: 64, FFN: 128, Heads: 4, Layers: 2, ImageSize: 32, Patch: 4, Merge: 2, ProjDim: 64, Longest: 64},
	// Qwen2-VL-2B's (its text width 1536) and a tiny one: no windows, so
	// any patch size; the feed-forward 4× the width, as Qwen2-VL's mlp_ratio.
	{Name: "qwen2vl", Type: "qwen2vl_merger", Dim: 1280, FFN: 5120, Heads: 16, Layers: 32, ImageSize: 560, Patch: 14, Merge: 2, ProjDim: 1536},
	{Name: "qwen2vl-tiny", Type: "qwen2vl_merger", Dim: 64, FFN: 256, Heads: 4, Layers: 4, ImageSize: 112, Patch: 8, Merge: 2, ProjDim: 64},
	{Name: "qwen2.5vl", Type: "qwen2.5vl_merger", Dim: 1280, FFN: 3420, Heads: 16, Layers: 32, ImageSize: 560, Patch: 14, Merge: 2, ProjDim: 2048, WAPattern: 8},
	// patch 8: llama.cpp's 112-pixel attention windows are 7×7 merged rows,
	// so a 144×96 image has two windows across.
	{Name: "qwen2.5vl-tiny", Type: "qwen2.5vl_merger", Dim: 64, FFN: 96, Heads: 4, Layers: 4, ImageSize: 112, Patch: 8, Merge: 2, ProjDim: 64, WAPattern: 2},
	// Qwen3-VL-4B's and a tiny one: learned positions of a 48×48 (tiny:
	// 8×8) grid, interpolated to each image's.
	{Name: "qwen3vl", Type: "qwen3vl_merger", Dim: 1024, FFN: 4096, Heads: 16, Layers: 24, ImageSize: 768, Patch: 16, Merge: 2, ProjDim: 2560, Deepstack: []int{5, 11, 17}},
	{Name: "qwen3vl-tiny", Type: "qwen3vl_merger", Dim: 64, FFN: 96, Heads: 4, Layers: 4, ImageSize: 64, Patch: 8, Merge: 2, ProjDim: 64, Deepstack: []int{0, 2}},
}

// LookupProjectorShape finds a projector shape by name.
func LookupProjectorShape(name string) (ProjectorShape, bool) {
	for _, s := range ProjectorShapes {
		if s.Name == name {
			return s, true
		}
	}
	return ProjectorShape{}, false
}

// ProjectorOptions says what WriteProjector writes.
type ProjectorOptions struct {
	Shape   ProjectorShape
	TextDim int // overrides Shape.ProjDim when > 0: the width of the text model it pairs with
	Seed    uint64
}

// WriteProjector writes a random-weight mmproj file of o.Shape to path,
// with the keys and tensor names and types llama.cpp's converter
// (convert_hf_to_gguf.py, Gemma3VisionModel, SmolVLMModel,
// Qwen2VLVisionModel and Qwen3VLVisionModel) writes: F32 embeddings, norms
// and biases, F16 block matrices and projector.
func WriteProjector(path string, o ProjectorOptions) error {
	s := o.Shape
	if o.TextDim > 0 {
		s.ProjDim = o.TextDim
	}
	switch s.Type {
	case "qwen2vl_merger", "qwen2.5vl_merger":
		return writeQwen2VL(path, s, o.Seed)
	case "qwen3vl_merger":
		return writeQwen3VL(path, s, o.Seed)
	}
	if s.Type != "gemma3" && s.Type != "idefics3" {
		return fmt.Errorf("synth: projector type %q: want gemma3, idefics3, qwen2vl_merger, qwen2.5vl_merger or qwen3vl_merger", s.Type)
	}
	if s.Dim%s.Heads != 0 || s.ImageSize%s.Patch != 0 || (s.ImageSize/s.Patch)%s.Merge != 0 || s.ProjDim < 1 {
		return fmt.Errorf("synth: projector shape %+v is not consistent", s)
	}
	gw := newClipWriter(s, []float32{0.5, 0.5, 0.5}, []float32{0.5, 0.5, 0.5})
	gw.SetKV("clip.use_gelu", true)
	if s.Merge != 4 || s.Type != "gemma3" {
		gw.SetKV("clip.vision.projector.scale_factor", uint32(s.Merge))
	}
	if s.Longest > 0 {
		gw.SetKV("clip.vision.preproc_image_size", uint32(s.Longest))
	}

	d, side := s.Dim, s.ImageSize/s.Patch
	pt := &projTensors{gw: gw, seed: o.Seed}
	add, ones, in := pt.add, pt.ones, invSqrt

	add("v.patch_embd.weight", compute.F32, in(3*s.Patch*s.Patch), s.Patch, s.Patch, 3, d)
	add("v.patch_embd.bias", compute.F32, 0.02, d)
	add("v.position_embd.weight", compute.F32, 0.5, d, side*side)
	for i := range s.Layers {
		b := fmt.Sprintf("v.blk.%d.", i)
		pt.attention(b, d)
		pt.norm(b+"ln1", d)
		pt.linear(b+"ffn_up", d, s.FFN)
		pt.linear(b+"ffn_down", s.FFN, d)
		pt.norm(b+"ln2", d)
	}
	pt.norm("v.post_ln", d)
	switch s.Type {
	case "gemma3":
		ones("mm.soft_emb_norm.weight", d)
		add("mm.input_projection.weight", compute.F16, in(d), s.ProjDim, d)
	case "idefics3":
		k := d * s.Merge * s.Merge
		add("mm.model.fc.weight", compute.F16, in(k), k, s.ProjDim)
	}
	return pt.write(path)
}

// randomValues is n values of type F32 or F16, normal with standard
// deviation std (std < 0: about 1, a norm's weight, 1 + N(0, 0.05)),
// seeded by seed and name.
func randomValues(seed uint64, name string, typ compute.DType, n int, std float64) []byte {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	size := 4
	if typ == compute.F16 {
		size = 2
	}
	out := make([]byte, size*n)
	for i := range n {
		v := float64(rng.NormFloat64() * std)
		if std < 0 {
			v = 1 + float64(rng.NormFloat64()*0.05)
		}
		if typ == compute.F16 {
			binary.LittleEndian.PutUint16(out[2*i:], compute.FP32ToFP16(float32(v)))
		} else {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(v)))
		}
	}
	return out
}

// newClipWriter starts a projector file as llama.cpp's converter writes
// one: the clip keys every projector type has, from s, and the image
// normalization's mean and std.
func newClipWriter(s ProjectorShape, mean, std []float32) *gguf.Writer {
	gw := gguf.NewWriter(3)
	gw.SetKV("general.architecture", "clip")
	gw.SetKV("general.name", "troupe synthetic "+s.Name+" projector")
	gw.SetKV("general.file_type", uint32(1))
	gw.SetKV("clip.has_vision_encoder", true)
	gw.SetKV("clip.projector_type", s.Type)
	gw.SetKV("clip.vision.image_size", uint32(s.ImageSize))
	gw.SetKV("clip.vision.patch_size", uint32(s.Patch))
	gw.SetKV("clip.vision.embedding_length", uint32(s.Dim))
	gw.SetKV("clip.vision.feed_forward_length", uint32(s.FFN))
	gw.SetKV("clip.vision.block_count", uint32(s.Layers))
	gw.SetKV("clip.vision.attention.head_count", uint32(s.Heads))
	gw.SetKV("clip.vision.attention.layer_norm_epsilon", float32(1e-6))
	gw.SetKV("clip.vision.projection_dim", uint32(s.ProjDim))
	gw.SetKV("clip.vision.image_mean", mean)
	gw.SetKV("clip.vision.image_std", std)
	return gw
}

// projTensors adds a projector's random tensors to gw, keeping the first
// error.
type projTensors struct {
	gw   *gguf.Writer
	seed uint64
	err  error
}

// add adds tensor name of type typ and shape, its values random with
// standard deviation std (std < 0: about 1, as randomValues).
func (p *projTensors) add(name string, typ compute.DType, std float64, shape ...int) {
	if p.err != nil {
		return
	}
	n := 1
	for _, v := range shape {
		n *= v
	}
	p.err = p.gw.AddTensor(name, typ, shape, randomValues(p.seed, name, typ, n, std))
}

// attention adds layer b's separate q, k, v and output projections of
// width d, with biases.
func (p *projTensors) attention(b string, d int) {
	for _, m := range []string{"attn_q", "attn_k", "attn_v", "attn_out"} {
		p.linear(b+m, d, d)
	}
}

// linear adds matrix name.weight of k inputs and n outputs (F16) and its
// bias name.bias.
func (p *projTensors) linear(name string, k, n int) {
	p.add(name+".weight", compute.F16, invSqrt(k), k, n)
	p.add(name+".bias", compute.F32, 0.02, n)
}

// norm adds a norm's weight name.weight (about 1) and bias name.bias, of n
// values each.
func (p *projTensors) norm(name string, n int) {
	p.ones(name+".weight", n)
	p.add(name+".bias", compute.F32, 0.02, n)
}

// ones adds a norm's weight of n values about 1.
func (p *projTensors) ones(name string, n int) { p.add(name, compute.F32, -1, n) }

// write writes the projector to path, or returns the first error.
func (p *projTensors) write(path string) error {
	if p.err != nil {
		return fmt.Errorf("synth: %w", p.err)
	}
	return writeGGUF(path, p.gw)
}

// invSqrt is 1/√k, a k-input matrix's standard deviation.
func invSqrt(k int) float64 { return 1 / math.Sqrt(float64(k)) }
