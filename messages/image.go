package messages

// ImageInput is one image of a prompt: Rows embedding rows that take the
// place of the prompt's tokens at Pos..Pos+Rows-1 (placeholder ids, valid
// in the vocabulary). Client -> request actor (GenerateRequest.Images, with
// Image set: the runtime encodes it), request actor -> batcher
// (NewSequence.Images, with Embeds set). The prefix cache keys those
// positions by Hash, so a later prompt with the same image at the same
// place hits, and another image behind the same placeholders does not.
type ImageInput struct {
	Pos  int      `msgpack:"pos"`
	Rows int      `msgpack:"rows"`
	Hash [32]byte `msgpack:"hash"` // of the image's pixels (vision.Prepared.Hash)
	// Row is the image's row this span starts at: an image whose rows come
	// in several runs (tiles with markers between them) is one span per
	// run, each with the same Image and Hash.
	Row int `msgpack:"row,omitempty"`
	// Embeds is the span's rows, (Rows, the model's dim), once encoded; the
	// batcher keeps them with the sequence, so a recomputed sequence has
	// them again.
	Embeds []float32 `msgpack:"embeds,omitempty"`
	// Image is the prepared image the runtime's encoder encodes (in
	// process only: the *vision.Prepared that Runtime.PrepareImage
	// returned); nil when Embeds is set.
	Image any `msgpack:"-"`
	// Bidirectional rows attend to every row of the span, later ones too,
	// as llama.cpp's mtmd decodes Gemma 3's images (non-causal attention
	// over the image batch); the span is then computed in one step.
	Bidirectional bool `msgpack:"bidirectional,omitempty"`
	// Positions, for a model with M-RoPE (Qwen2-VL family), is each of the
	// span's rows' (t, h, w) offsets from the image's first rope position
	// (vision.Prepared.Positions); the text after the image continues past
	// the largest. nil: the rows take their prompt positions.
	Positions [][3]int32 `msgpack:"positions,omitempty"`
}
