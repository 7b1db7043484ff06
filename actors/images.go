package actors

import (
	"encoding/binary"

	"github.com/troupe-llm/troupe/messages"
)

// The batcher's side of images. The schedule (and so the prefix cache)
// sees a prompt whose image positions hold image keys in place of the
// placeholder tokens: negative ids, never a token, made from the image's
// hash and the row's index in it (imageKeys). The block manager compares
// blocks' ids, so a block that holds image rows is shared only by prompts
// with the same image at the same place (and the same text around it);
// another image behind the same placeholders differs in its keys. When a
// step carries such a row, the batcher puts the placeholder token back and
// the row's embedding beside it (Step.Inputs); the rows live in the
// sequence's NewSequence, so a recomputed or swapped sequence has them.

// imageKey is the key id of row k of the image hashed to h: one of the
// hash's eight words, mixed with k, with the sign bit set. Eight
// consecutive rows carry all 256 bits of the hash.
func imageKey(h *[32]byte, k int) int32 {
	w := binary.LittleEndian.Uint32(h[4*(k%8):])
	return int32(w ^ uint32(k)*2654435761 | 1<<31)
}

// imageKeys returns prompt with every image row's token replaced by its
// key (prompt itself when there are no images).
func imageKeys(prompt []int32, images []messages.ImageInput) []int32 {
	if len(images) == 0 {
		return prompt
	}
	keyed := append([]int32(nil), prompt...)
	for _, im := range images {
		for k := range im.Rows {
			keyed[im.Pos+k] = imageKey(&im.Hash, im.Row+k)
		}
	}
	return keyed
}

// imageInput returns the placeholder token and the embedding of prompt
// position pos of n, which is an image row (its key is negative), and its
// span.
func imageInput(n *messages.NewSequence, pos int) (int32, []float32, *messages.ImageInput) {
	for i, im := range n.Images {
		if pos >= im.Pos && pos < im.Pos+im.Rows {
			dim := len(im.Embeds) / im.Rows
			k := pos - im.Pos
			return n.Prompt[pos], im.Embeds[k*dim : (k+1)*dim], &n.Images[i]
		}
	}
	panic("batcher: a negative token outside the sequence's images") // broken invariant
}

// addImageInput appends the placeholder token of image row pos of n to the
// step, and its embedding to step.Inputs (made as long as the tokens when
// the step's first image row comes); a bidirectional span's row attends up
// to the span's end, or the chunk's (end) where the span was too long for
// one step (sched.Seq.Spans).
func addImageInput(step *messages.Step, n *messages.NewSequence, pos, end int) {
	tok, row, im := imageInput(n, pos)
	if step.Inputs == nil {
		step.Inputs = make([][]float32, len(step.Tokens), cap(step.Tokens))
	}
	if im.Bidirectional && step.AttendTo == nil {
		step.AttendTo = make([]int32, len(step.Tokens), cap(step.Tokens))
	}
	step.Tokens = append(step.Tokens, tok)
	step.Inputs = append(step.Inputs, row)
	switch {
	case im.Bidirectional:
		step.AttendTo = append(step.AttendTo, int32(min(im.Pos+im.Rows, end)))
	case step.AttendTo != nil:
		step.AttendTo = append(step.AttendTo, 0)
	}
}

// padImageInputs gives a token the step has just taken no input row and
// causal attention, where the step has image rows before it.
func padImageInputs(step *messages.Step) {
	if step.Inputs != nil {
		step.Inputs = append(step.Inputs, nil)
	}
	if step.AttendTo != nil {
		step.AttendTo = append(step.AttendTo, 0)
	}
}

// bidirectionalSpans are the [start, end) positions of n's bidirectional
// image spans, for the scheduler to keep whole (sched.Seq.Spans).
func bidirectionalSpans(images []messages.ImageInput) [][2]int {
	var spans [][2]int
	for _, im := range images {
		if im.Bidirectional {
			spans = append(spans, [2]int{im.Pos, im.Pos + im.Rows})
		}
	}
	return spans
}

// unkeyHistory puts the placeholder tokens back into a penalty history h
// whose first entry is the sequence's token at position off.
func unkeyHistory(h []int32, n *messages.NewSequence, off int) {
	for j, t := range h {
		if t < 0 {
			h[j] = n.Prompt[off+j]
		}
	}
}

// M-RoPE (model.Batch.RopePositions; mtmd's layout for Qwen-VL): an
// image's rows sit at its first rope position plus their (t, h, w)
// offsets (ImageInput.Positions), and the tokens after it continue from
// its first position plus its extent (its largest offset + 1), not plus
// its rows: every later position is shifted back by rows − extent. The
// cache and the schedule keep the plain positions (the rows in order).

// ropeExtent is how many rope positions an image of those row offsets
// takes (mtmd_image_tokens_get_n_pos: max(rows, columns) for Qwen-VL).
func ropeExtent(offsets [][3]int32) int {
	n := int32(0)
	for _, o := range offsets {
		n = max(n, o[0]+1, o[1]+1, o[2]+1)
	}
	return int(n)
}

// ropePosition is position pos of n's M-RoPE position, and whether n has
// images with M-RoPE offsets at all.
func ropePosition(n *messages.NewSequence, pos int) ([3]int32, bool) {
	shift, mrope := 0, false
	for i := range n.Images {
		im := &n.Images[i]
		if im.Positions == nil {
			continue
		}
		mrope = true
		if pos < im.Pos {
			break
		}
		if pos < im.Pos+im.Rows {
			base, o := int32(im.Pos-shift), im.Positions[pos-im.Pos]
			return [3]int32{base + o[0], base + o[1], base + o[2]}, true
		}
		shift += im.Rows - ropeExtent(im.Positions)
	}
	p := int32(pos - shift)
	return [3]int32{p, p, p}, mrope
}

// addRopePosition appends position pos of n's M-RoPE position to the step
// (before its plain position), making step.RopePositions when the step's
// first sequence with M-RoPE images comes: the rows before it are at
// their plain positions.
func addRopePosition(step *messages.Step, n *messages.NewSequence, pos int) {
	rp, mrope := ropePosition(n, pos)
	if !mrope && step.RopePositions == nil {
		return
	}
	if step.RopePositions == nil {
		step.RopePositions = make([][3]int32, 0, cap(step.Tokens))
		for _, p := range step.Positions {
			step.RopePositions = append(step.RopePositions, [3]int32{p, p, p})
		}
	}
	step.RopePositions = append(step.RopePositions, rp)
}
