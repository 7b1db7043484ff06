package model

import (
	"fmt"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model/lora"
)

// Batch is one flattened, ragged micro-batch: the tokens of several
// sequences, prefill chunks and decode steps mixed. Token i of the batch
// belongs to sequence Seq[i], sits at position Positions[i] of it, and its
// keys and values are written through that sequence's block table. Every
// position before it must already be in the cache or earlier in this batch.
type Batch struct {
	Tokens      []int32   // (n_tokens) token ids
	Positions   []int32   // (n_tokens) position of each token in its sequence
	Seq         []int32   // (n_tokens) index into BlockTables
	BlockTables [][]int32 // (n_seqs) (blocks) physical kv.Cache blocks of each sequence
	Logits      []bool    // (n_tokens) rows whose logits are wanted
	Hidden      []bool    // (n_tokens) rows whose final hidden states are wanted (ForwardHidden); nil: none
	// LoRA are the adapters of each sequence, applied in order at every
	// projection (lora.go); nil: none for any sequence. Adapters must have
	// passed Model.CheckAdapter.
	LoRA [][]lora.Scaled // (n_seqs) (adapters)
	// Embeds is a row's input embedding (InputDim values: an image's
	// projected row; qwen3vl's deepstack slices after the first Dim) in
	// place of its token's; nil, or a nil entry: the token's. The
	// token id is then only a placeholder (still a valid id). Scaling
	// (EmbedScale) applies to token embeddings only, as llama.cpp's.
	Embeds [][]float32 // (n_tokens) (dim)
	// AttendTo, where a row's entry is past its own position, is where its
	// attention ends (exclusive): the positions from its own to AttendTo
	// must be rows of the same sequence in this batch (their K/V are
	// written before any row attends), as for the rows of an image that
	// attend to one another both ways (llama.cpp's non-causal decoding of
	// Gemma 3's images). The sliding window still counts back from the
	// row's own position. nil, or 0: causal.
	AttendTo []int32 // (n_tokens)
	// RopePositions are the tokens' M-RoPE (t, h, w) positions, for a
	// model with rope sections (qwen2vl.go): an image's rows at their grid
	// places, text after an image past its largest one. nil: each token at
	// (p, p, p), p its Positions entry. A model without rope sections
	// refuses them.
	RopePositions [][3]int32 // (n_tokens)
}

// NumLogits is the number of rows with Logits set.
func (b *Batch) NumLogits() int { return numSet(b.Logits) }

// numSet is the number of true entries of rows.
func numSet(rows []bool) int {
	n := 0
	for _, w := range rows {
		if w {
			n++
		}
	}
	return n
}

// HasEmbeds says whether some row takes an input embedding (Embeds).
func (b *Batch) HasEmbeds() bool {
	for _, e := range b.Embeds {
		if e != nil {
			return true
		}
	}
	return false
}

// Reset empties the batch, keeping its storage.
func (b *Batch) Reset() {
	b.Tokens, b.Positions, b.Seq, b.Logits = b.Tokens[:0], b.Positions[:0], b.Seq[:0], b.Logits[:0]
	b.BlockTables, b.Hidden, b.LoRA, b.Embeds = b.BlockTables[:0], b.Hidden[:0], b.LoRA[:0], b.Embeds[:0]
	b.AttendTo, b.RopePositions = b.AttendTo[:0], b.RopePositions[:0]
}

// Add appends one token.
func (b *Batch) Add(token, pos, seq int32, logits bool) {
	b.Tokens = append(b.Tokens, token)
	b.Positions = append(b.Positions, pos)
	b.Seq = append(b.Seq, seq)
	b.Logits = append(b.Logits, logits)
}

// Validate checks the batch against a model's Config and a cache of
// numBlocks blocks of blockSize tokens: lengths, token ids, sequence
// indexes, positions covered by their block tables, block ids in range.
func (b *Batch) Validate(c *Config, blockSize, numBlocks int) error {
	n := len(b.Tokens)
	if len(b.Positions) != n || len(b.Seq) != n || len(b.Logits) != n {
		return fmt.Errorf("model: batch of %d tokens has %d positions, %d sequence indexes, %d logit flags",
			n, len(b.Positions), len(b.Seq), len(b.Logits))
	}
	if len(b.LoRA) != 0 && len(b.LoRA) != len(b.BlockTables) {
		return fmt.Errorf("model: batch of %d sequences has adapters for %d", len(b.BlockTables), len(b.LoRA))
	}
	if len(b.Embeds) != 0 && len(b.Embeds) != n {
		return fmt.Errorf("model: batch of %d tokens has %d input embeddings", n, len(b.Embeds))
	}
	for i, e := range b.Embeds {
		if e != nil && len(e) != c.InputDim() {
			return fmt.Errorf("model: batch token %d: input embedding of %d values, the model's input width is %d", i, len(e), c.InputDim())
		}
	}
	if len(b.RopePositions) != 0 && len(b.RopePositions) != n {
		return fmt.Errorf("model: batch of %d tokens has %d rope positions", n, len(b.RopePositions))
	}
	if len(b.RopePositions) != 0 && c.RopeSections == [4]int{} {
		return fmt.Errorf("model: batch has M-RoPE positions, the %s model has no rope sections", c.Arch)
	}
	if err := b.validateAttendTo(); err != nil {
		return err
	}
	window := c.KVWindow()
	for i := range n {
		tok, pos, s := b.Tokens[i], b.Positions[i], b.Seq[i]
		if tok < 0 || int(tok) >= c.VocabSize {
			return fmt.Errorf("model: batch token %d: id %d outside the vocabulary (%d)", i, tok, c.VocabSize)
		}
		if s < 0 || int(s) >= len(b.BlockTables) {
			return fmt.Errorf("model: batch token %d: sequence %d of %d", i, s, len(b.BlockTables))
		}
		if pos < 0 || int(pos)/blockSize >= len(b.BlockTables[s]) {
			return fmt.Errorf("model: batch token %d: position %d not covered by %d blocks of %d", i, pos, len(b.BlockTables[s]), blockSize)
		}
		// Blocks freed behind a sliding window (kv.NoBlock) lead the table;
		// the first one this token attends to must be there.
		if from := kv.WindowStart(int(pos), window); b.BlockTables[s][from/blockSize] == kv.NoBlock {
			return fmt.Errorf("model: batch token %d: position %d attends from position %d, whose block was freed", i, pos, from)
		}
	}
	for s, table := range b.BlockTables {
		live := false
		for _, blk := range table {
			if blk == kv.NoBlock && !live {
				continue
			}
			live = true
			if blk < 0 || int(blk) >= numBlocks {
				return fmt.Errorf("model: sequence %d: block %d outside the cache (%d blocks)", s, blk, numBlocks)
			}
		}
	}
	return nil
}

// validateAttendTo checks that each row's AttendTo past its own position
// reaches only positions of its sequence that the batch holds.
func (b *Batch) validateAttendTo() error {
	if len(b.AttendTo) == 0 {
		return nil
	}
	if len(b.AttendTo) != len(b.Tokens) {
		return fmt.Errorf("model: batch of %d tokens has %d attention ends", len(b.Tokens), len(b.AttendTo))
	}
	held := map[[2]int32]bool{}
	for i, pos := range b.Positions {
		held[[2]int32{b.Seq[i], pos}] = true
	}
	for i, to := range b.AttendTo {
		for p := b.Positions[i] + 1; p < to; p++ {
			if !held[[2]int32{b.Seq[i], p}] {
				return fmt.Errorf("model: batch token %d attends to position %d of its sequence, which the batch does not hold", i, p)
			}
		}
	}
	return nil
}
