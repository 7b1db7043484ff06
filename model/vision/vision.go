// Package vision reads llama.cpp's multimodal projector files (mmproj GGUF:
// clip.* keys, v.* and mm.* tensors), turns image files into the pixel
// tensors llama.cpp's clip preprocessing makes, and encodes them into
// embedding rows of the language model's width (issue 34).
//
// The contract between this package and the runtime (actors/, server/):
//
//   - Open reads a projector; Projector.Check refuses one whose output width
//     is not the language model's embedding width.
//   - Projector.Prepare decodes one image file (PNG, JPEG, GIF's first frame,
//     WebP), checks its declared size before decoding it, and preprocesses it
//     as llama.cpp does for the projector's type. The result says how the
//     image enters the prompt: Chunks, text and embedding runs in order (the
//     model's wrap tokens around the image, Idefics3's per-tile row/column
//     markers, ...), and a Hash of its pixels for the prefix cache.
//   - Projector.Encode runs the vision tower and the projector over a
//     Prepared image: Rows() rows of Dim() values each, the runs of Chunks in
//     order. It is pure computation (no actor, no goroutine of its own
//     beyond the MatMuler it is given), so the runtime runs it where it
//     chooses (an encoder actor, off the step path).
package vision

import "errors"

// Chunk is one piece of the prompt an image becomes: text to tokenize (the
// model's image markers), or a run of Embeds rows of the encoder's output.
type Chunk struct {
	Text   string // when Embeds == 0: text, tokenized with special tokens parsed
	Embeds int    // when > 0: this many embedding rows, the next ones of Encode's output
}

// Prepared is one preprocessed image, ready to encode.
type Prepared struct {
	Chunks []Chunk  // in order
	Hash   [32]byte // sha256 of the preprocessed pixels: the same image gives the same hash
	Width  int      // the decoded image's size, before preprocessing
	Height int
	// Positions, for models with M-RoPE (Qwen2-VL family), is each embedding
	// row's (t, h, w) position offsets within the image; nil otherwise.
	Positions [][3]int32

	tiles []pixels // preprocessed tiles, as llama.cpp's clip_image_f32 batch
	gridX int      // tiles per row / patches per row where the projector needs it
	gridY int
}

// Rows is how many embedding rows Encode returns for p.
func (p *Prepared) Rows() int {
	n := 0
	for _, c := range p.Chunks {
		n += c.Embeds
	}
	return n
}

// pixels is one preprocessed image or tile: nx·ny·3 float32 values, RGB
// interleaved per pixel and normalized, as llama.cpp's clip_image_f32.
type pixels struct {
	nx, ny int
	buf    []float32
}

// Errors callers tell apart (errors.Is).
var (
	ErrFormat   = errors.New("vision: not an image in a supported format (PNG, JPEG, GIF, WebP)")
	ErrTooLarge = errors.New("vision: image too large")
	ErrMismatch = errors.New("vision: projector does not match the model")
)
