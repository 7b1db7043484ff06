package vision

import (
	"errors"
	"fmt"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// Limits bound what Prepare accepts, checked before an image is decoded.
type Limits struct {
	MaxBytes  int // the encoded file's size
	MaxSide   int // width or height, as the file declares it
	MaxPixels int // width × height, as the file declares it
	MaxTiles  int // tiles an image is cut into (Idefics3), the overview not counted
}

// DefaultLimits are Open's: 32 MiB files, 8192 pixels a side, 32 Mpixel,
// 64 tiles (SmolVLM's files allow 16; one without a longest edge would cut
// an 8192-pixel square into 256).
var DefaultLimits = Limits{MaxBytes: 32 << 20, MaxSide: 8192, MaxPixels: 32 << 20, MaxTiles: 64}

// hparams are the clip.vision.* keys llama.cpp's clip.cpp reads
// (load_hparams), with its per-projector defaults.
type hparams struct {
	dim       int // clip.vision.embedding_length: the ViT's width
	ffn       int // clip.vision.feed_forward_length
	heads     int // clip.vision.attention.head_count
	layers    int // clip.vision.block_count
	projDim   int // clip.vision.projection_dim: the language model's width
	eps       float32
	imageSize int // clip.vision.image_size: the side of the square input
	patch     int // clip.vision.patch_size
	merge     int // clip.vision.projector.scale_factor (Gemma 3's pooling kernel, Idefics3's pixel shuffle)
	mean, std [3]float32
	ffnOp     string // "gelu" (clip.use_gelu), "silu" (clip.use_silu) or "gelu_quick"

	longestEdge int // clip.vision.preproc_image_size: Idefics3's refined image's longer side (0: none)

	// Qwen-VL
	waPattern            int // clip.vision.n_wa_pattern: layers il with (il+1)%waPattern == 0 attend to the whole image, the others to windows
	minPixels, maxPixels int // the resized image's bounds: 8 and 4096 rows' worth of pixels, as clip.cpp's set_limit_image_tokens
}

// typeQwen2VL, typeQwen25VL and typeQwen3VL are llama.cpp's names of
// Qwen2-VL's, Qwen2.5-VL's and Qwen3-VL's projector types.
const (
	typeQwen2VL  = "qwen2vl_merger"
	typeQwen25VL = "qwen2.5vl_merger"
	typeQwen3VL  = "qwen3vl_merger"
)

// isQwen reports whether typ is a Qwen-VL projector (dynamic resolution,
// M-RoPE positions, the 2×2 merger).
func isQwen(typ string) bool { return typ == typeQwen2VL || typ == typeQwen25VL || typ == typeQwen3VL }

// Projector is an open mmproj file: the vision tower, the projector and
// the preprocessing they expect. It is immutable after Open and safe for
// concurrent use; Encode's scratch is allocated per call.
type Projector struct {
	Limits Limits // Prepare's bounds; DefaultLimits unless changed before use

	f   *gguf.File
	typ string
	hp  hparams
	w   *weights
}

// Open reads the projector file at path. It refuses a file that is not a
// vision projector, or one of a projector type this package does not run
// (today: gemma3 and idefics3), naming it.
func Open(path string) (*Projector, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vision: %w", err)
	}
	p, err := newProjector(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("vision: %s: %w", path, err)
	}
	return p, nil
}

func newProjector(f *gguf.File) (*Projector, error) {
	if arch, _ := f.String("general.architecture"); arch != "clip" {
		return nil, fmt.Errorf("general.architecture %q: not a projector (want clip)", arch)
	}
	if v, ok := f.Bool("clip.has_vision_encoder"); ok && !v {
		return nil, errors.New("no vision encoder (clip.has_vision_encoder is false)")
	}
	typ, ok := f.String("clip.projector_type")
	if !ok {
		typ, _ = f.String("clip.vision.projector_type")
	}
	switch typ {
	case "gemma3", "idefics3", typeQwen2VL, typeQwen25VL, typeQwen3VL:
	case "":
		return nil, errors.New("no clip.projector_type")
	default:
		return nil, fmt.Errorf("projector type %q is not supported (supported: gemma3, idefics3, %s, %s, %s)", typ, typeQwen2VL, typeQwen25VL, typeQwen3VL)
	}
	hp, err := readHparams(f, typ)
	if err != nil {
		return nil, err
	}
	w, err := loadWeights(f, typ, hp)
	if err != nil {
		return nil, err
	}
	return &Projector{Limits: DefaultLimits, f: f, typ: typ, hp: hp, w: w}, nil
}

func readHparams(f *gguf.File, typ string) (hparams, error) {
	var hp hparams
	var err error
	u := func(key string, dst *int, required bool) {
		v, ok := f.Int(key)
		switch {
		case !ok && required && err == nil:
			err = fmt.Errorf("missing %s", key)
		case ok && (v < 1 || v > 1<<20) && err == nil:
			err = fmt.Errorf("%s = %d: out of range", key, v)
		case ok:
			*dst = int(v)
		}
	}
	u("clip.vision.embedding_length", &hp.dim, true)
	u("clip.vision.feed_forward_length", &hp.ffn, true)
	u("clip.vision.attention.head_count", &hp.heads, true)
	u("clip.vision.block_count", &hp.layers, true)
	u("clip.vision.projection_dim", &hp.projDim, true)
	u("clip.vision.image_size", &hp.imageSize, true)
	u("clip.vision.patch_size", &hp.patch, true)
	if err != nil {
		return hp, err
	}
	eps, ok := f.Float("clip.vision.attention.layer_norm_epsilon")
	if !ok {
		return hp, errors.New("missing clip.vision.attention.layer_norm_epsilon")
	}
	hp.eps = float32(eps)
	mean, ok1 := f.Float32s("clip.vision.image_mean")
	std, ok2 := f.Float32s("clip.vision.image_std")
	if !ok1 || !ok2 || len(mean) < 3 || len(std) < 3 {
		return hp, errors.New("clip.vision.image_mean and image_std: want 3 values each")
	}
	copy(hp.mean[:], mean)
	copy(hp.std[:], std)
	gelu, _ := f.Bool("clip.use_gelu")
	silu, _ := f.Bool("clip.use_silu")
	switch {
	case gelu && silu:
		return hp, errors.New("both clip.use_gelu and clip.use_silu are set")
	case gelu:
		hp.ffnOp = "gelu"
	case silu:
		hp.ffnOp = "silu"
	default:
		hp.ffnOp = "gelu_quick"
	}
	switch typ {
	case "gemma3":
		hp.merge = 4 // clip.cpp's default for every Gemma 3 size
	case typeQwen2VL, typeQwen25VL, typeQwen3VL:
		hp.merge = 2
		u("clip.vision.spatial_merge_size", &hp.merge, false)
		u("clip.vision.n_wa_pattern", &hp.waPattern, typ == typeQwen25VL)
		area := hp.patch * hp.patch * hp.merge * hp.merge
		hp.minPixels, hp.maxPixels = 8*area, 4096*area
	}
	u("clip.vision.projector.scale_factor", &hp.merge, false)
	u("clip.vision.preproc_image_size", &hp.longestEdge, false)
	if err != nil {
		return hp, err
	}
	if typ == "idefics3" && hp.merge < 2 {
		return hp, fmt.Errorf("idefics3 projector: clip.vision.projector.scale_factor %d: want at least 2", hp.merge)
	}
	if hp.dim%hp.heads != 0 {
		return hp, fmt.Errorf("embedding_length %d is not a multiple of head_count %d", hp.dim, hp.heads)
	}
	{
		side := hp.imageSize / hp.patch
		if hp.imageSize%hp.patch != 0 || side%hp.merge != 0 {
			return hp, fmt.Errorf("image_size %d, patch_size %d, scale_factor %d: the patch grid does not pool evenly", hp.imageSize, hp.patch, hp.merge)
		}
	}
	err = checkType(f, typ, &hp) // sets hp.ffn for Qwen2-VL
	return hp, err
}

// checkType refuses what a projector type's graph in clip.cpp would run
// differently from this package's (and reads Qwen2-VL's feed-forward width
// from its tensors).
func checkType(f *gguf.File, typ string, hp *hparams) error {
	if typ == typeQwen25VL {
		if hp.merge != 2 || hp.ffnOp != "silu" || (hp.dim/hp.heads)%4 != 0 {
			return fmt.Errorf("%s projector: merge %d, activation %s, head size %d: want 2, silu (clip.use_silu) and a multiple of 4",
				typ, hp.merge, hp.ffnOp, hp.dim/hp.heads)
		}
		return nil
	}
	if typ == typeQwen2VL {
		var err error
		if hp.ffn, err = qwen2FFN(f, hp.dim); err != nil {
			return err
		}
		if hp.merge != 2 || hp.ffnOp == "silu" || (hp.dim/hp.heads)%4 != 0 || hp.waPattern != 0 {
			return fmt.Errorf("%s projector: merge %d, activation %s, head size %d, n_wa_pattern %d: want 2, quick GELU or gelu (clip.use_gelu), a multiple of 4 and none",
				typ, hp.merge, hp.ffnOp, hp.dim/hp.heads, hp.waPattern)
		}
		return nil
	}
	if typ == typeQwen3VL {
		if hp.merge != 2 || hp.ffnOp != "gelu" || (hp.dim/hp.heads)%4 != 0 || hp.waPattern != 0 {
			return fmt.Errorf("%s projector: merge %d, activation %s, head size %d, n_wa_pattern %d: want 2, gelu (clip.use_gelu), a multiple of 4 and none",
				typ, hp.merge, hp.ffnOp, hp.dim/hp.heads, hp.waPattern)
		}
		return nil
	}
	if hp.ffnOp != "gelu" {
		return fmt.Errorf("feed-forward activation %s is not supported (want clip.use_gelu)", hp.ffnOp)
	}
	return nil
}

// Close releases the file. The Projector must not be used after.
func (p *Projector) Close() error { return p.f.Close() }

// Type is llama.cpp's name of the projector type (clip.projector_type):
// "gemma3", "idefics3", "qwen2vl_merger", "qwen2.5vl_merger",
// "qwen3vl_merger".
func (p *Projector) Type() string { return p.typ }

// Bidirectional reports whether the language model attends over an
// image's rows both ways, as llama.cpp's mtmd decodes them
// (mtmd_decode_use_non_causal: Gemma 3's projector): the runtime then
// computes an image in one step, each row seeing all of it.
func (p *Projector) Bidirectional() bool { return p.typ == "gemma3" }

// MRoPE reports whether Prepare gives the rows M-RoPE positions
// (Prepared.Positions), for a language model with multimodal rope
// (llama.cpp's qwen2vl and qwen3vl: the Qwen-VL projectors).
func (p *Projector) MRoPE() bool { return isQwen(p.typ) }

// Dim is the width of Encode's rows: the language model's input width the
// projector was made for (clip_n_mmproj_embd). For Qwen3-VL that is the
// text model's width times 1 + Deepstack(): each row its merger's output,
// then each deepstack layer's, as llama.cpp's qwen3vl takes them (its
// n_embd_inp).
func (p *Projector) Dim() int { return p.hp.projDim * (1 + p.Deepstack()) }

// Deepstack is how many deepstack layers' outputs each row carries after
// the merger's (Qwen3-VL; 0 for the others).
func (p *Projector) Deepstack() int {
	n := 0
	for i := range p.w.layers {
		if p.w.layers[i].dsFC1 != nil {
			n++
		}
	}
	return n
}

// MaxImageBytes is the largest encoded image Prepare takes (Limits.MaxBytes).
func (p *Projector) MaxImageBytes() int { return p.Limits.MaxBytes }

// Check refuses a projector whose output width is not embedDim, the
// language model's input width (model.Config.InputDim: the embedding
// width, times 1 + the deepstack layers for Qwen3-VL) (ErrMismatch).
func (p *Projector) Check(embedDim int) error {
	if p.Dim() != embedDim {
		return fmt.Errorf("%w: the %s projector's output width is %d, the model's input width %d", ErrMismatch, p.typ, p.Dim(), embedDim)
	}
	return nil
}

// tokens is how many embedding rows one image (one tile) gives.
func (p *Projector) tokens() int {
	side := p.hp.imageSize / p.hp.patch / p.hp.merge
	return side * side
}

// vec reads a 1-D weight (a norm's or a bias) as float32 values.
func vec(t *compute.Tensor) ([]float32, error) {
	out := make([]float32, t.Elems())
	if err := compute.Dequantize(t.Type, t.Data, out); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return out, nil
}
