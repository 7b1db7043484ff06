package messages

// NewSequence is what the batcher needs to schedule a sequence: its prompt
// and the limits and parameters of its generation.
type NewSequence struct {
	Prompt       []int32        `msgpack:"prompt"`
	MaxTokens    int            `msgpack:"max_tokens,omitempty"` // 0: until the context is full
	Priority     int            `msgpack:"priority,omitempty"`   // lower runs first
	Sampling     SamplingParams `msgpack:"sampling"`
	StopTokenIDs []int32        `msgpack:"stop_token_ids,omitempty"`
	IgnoreEOS    bool           `msgpack:"ignore_eos,omitempty"`
	Embed        *EmbedParams   `msgpack:"embed,omitempty"` // an embedding, not a generation
	// LoRA is the adapters the sequence runs with, resolved by the
	// runtime: ids in increasing order, none twice, no zero scale (empty:
	// the base model). The prefix cache shares blocks only between
	// sequences with the same set.
	LoRA []LoRARef `msgpack:"lora,omitempty"`
	// Images are the prompt's images with their rows (ImageInput.Embeds).
	Images []ImageInput `msgpack:"images,omitempty"`
}

// StepRequest says a sequence is ready for its next step: the first one
// carries New and enters the sequence into the schedule; each later one
// answers a StepResult that did not finish it. Sequence -> batcher.
type StepRequest struct {
	SeqID uint64       `msgpack:"seq_id"`
	New   *NewSequence `msgpack:"new,omitempty"`
	// Mask, for a sequence under a grammar, is the tokens its next sample
	// may take (a bitset over the vocabulary, bit id%64 of word id/64); nil
	// allows every token. It holds until the sequence's next request.
	Mask []uint64 `msgpack:"mask,omitempty"`
	// Draft is up to k tokens the sequence proposes to follow its last one
	// (speculative decoding). The batcher may schedule fewer, or none; it
	// verifies them in the next step and answers with the tokens accepted
	// (StepResult.Tokens).
	Draft []int32 `msgpack:"draft,omitempty"`
	// DraftMasks, for a masked sequence (a grammar, min_tokens), is the
	// mask of each sample after the first of the run: DraftMasks[i] for
	// the token after Draft[i], computed by the sequence's matcher as if
	// Draft[:i+1] were accepted (a nil entry allows every token). nil:
	// Mask holds for every sample of the run. The sequence proposes only
	// draft tokens its masks allow.
	DraftMasks [][]uint64 `msgpack:"draft_masks,omitempty"`
	// DraftQ, when not nil, is the distribution each Draft token was drawn
	// from (a draft model's, after the request's sampler transforms), one
	// per Draft token: the rows verify it by rejection sampling
	// (SampleSpec.DraftQ). nil: the draft is verified as a one-hot q.
	DraftQ []DraftDist `msgpack:"draft_q,omitempty"`
}

// DraftDist is a token distribution: the tokens of nonzero probability and
// their probabilities.
type DraftDist struct {
	IDs []int32   `msgpack:"ids"`
	P   []float32 `msgpack:"p"`
}

// StepResult is the token sampled for a sequence in a step. Finish is set
// when the batcher ended the sequence (end-of-generation or stop token:
// FinishStop, the token is not output; max tokens or context: FinishLength),
// and Err with FinishError when it could not be run (rejected or failed); the
// sequence's blocks are then already free. Batcher -> sequence.
type StepResult struct {
	SeqID           uint64 `msgpack:"seq_id"`
	Token           Token  `msgpack:"token"`
	NumCachedTokens int    `msgpack:"num_cached_tokens,omitempty"` // prompt tokens found cached (first result)
	QueueNanos      int64  `msgpack:"queue_nanos,omitempty"`       // time from entering the schedule to first running (first result)
	Finish          string `msgpack:"finish,omitempty"`
	Err             string `msgpack:"err,omitempty"`
	// Embedding is an embedding sequence's pooled final hidden state, not
	// normalized (its only result, Finish FinishStop; Token means nothing).
	Embedding []float32 `msgpack:"embedding,omitempty"`
	// Tokens, when the step verified a draft, is every token the step gave
	// the sequence, in order (Token is Tokens[0]): the draft tokens it
	// accepted, then the token sampled after them. Finish applies to the
	// last one (FinishStop: that one is the stop token and is not output).
	// nil: Token alone.
	Tokens []Token `msgpack:"tokens,omitempty"`
	// Drafted and Accepted count the draft tokens this step verified for
	// the sequence and those it accepted (0 without speculation).
	Drafted  int `msgpack:"drafted,omitempty"`
	Accepted int `msgpack:"accepted,omitempty"`
	// NoDraft: the device runs more sequences than it verifies drafts for
	// (the runtime's speculative max seqs), so a draft sent with the
	// sequence's next step would be dropped: the sequence proposes none
	// until a result without it.
	NoDraft bool `msgpack:"no_draft,omitempty"`
}

// Preemption modes.
const (
	ModeRecompute = "recompute" // blocks freed; recomputed from the tokens on resume
	ModeSwap      = "swap"      // blocks copied to the device's host tier and back
)

// Preempted tells a sequence it lost its place for now (Mode says how): the
// scheduler took its KV blocks for other sequences, or its device failed
// during its step. It resumes by itself; the sequence counts these, and its
// choice reports them (OutputChunk.Preemptions, Usage.Preemptions).
// Batcher -> sequence.
type Preempted struct {
	SeqID uint64 `msgpack:"seq_id"`
	Mode  string `msgpack:"mode"`
}

// Step is one micro-batch for a device: a flattened ragged batch (as
// model.Batch) and, for each row with Logits set, in batch order, how to
// sample it. Batcher -> device.
type Step struct {
	StepID      uint64       `msgpack:"step_id"`
	Tokens      []int32      `msgpack:"tokens"`           // (n_tokens)
	Positions   []int32      `msgpack:"positions"`        // (n_tokens)
	Seq         []int32      `msgpack:"seq"`              // (n_tokens) index into BlockTables
	BlockTables [][]int32    `msgpack:"block_tables"`     // (n_seqs) (blocks)
	Logits      []bool       `msgpack:"logits"`           // (n_tokens)
	Samples     []SampleSpec `msgpack:"samples"`          // (n_logits)
	Embeds      []EmbedSpec  `msgpack:"embeds,omitempty"` // the embedding sequences among BlockTables
	// LoRA is each sequence's adapters (NewSequence.LoRA), ids into the
	// runtime's loaded adapters; nil when the runtime has none.
	LoRA [][]LoRARef `msgpack:"lora,omitempty"` // (n_seqs) (adapters)
	// Inputs is a row's input embedding (an image's row) in place of its
	// token's (model.Batch.Embeds); nil, or a nil entry: the token's.
	Inputs [][]float32 `msgpack:"inputs,omitempty"` // (n_tokens) (dim)
	// AttendTo, where set, is where a row's attention ends (exclusive)
	// past its own position: the rows of a bidirectional image span see
	// the whole span (ImageInput.Bidirectional); 0: causal.
	AttendTo []int32 `msgpack:"attend_to,omitempty"` // (n_tokens)
	// RopePositions, where set, are the rows' M-RoPE (t, h, w) positions
	// (model.Batch.RopePositions): a step with a sequence whose images
	// have Positions; nil: each row at its position.
	RopePositions [][3]int32 `msgpack:"rope_positions,omitempty"` // (n_tokens)
}

// SampleSpec is how to sample one row of a Step's logits.
type SampleSpec struct {
	SeqID  uint64          `msgpack:"seq_id"`
	Params *SamplingParams `msgpack:"params"`
	// History is the sequence's tokens the penalties look at (nil when it
	// has no penalties).
	History []int32 `msgpack:"history,omitempty"`
	// Draw numbers this token among the sequence's samples; a seeded draw
	// depends only on (Seed, Draw), so a recomputed sequence draws the same.
	Draw uint64 `msgpack:"draw"`
	// Mask is the sequence's grammar mask (see StepRequest.Mask), applied to
	// the logits before sampling; nil allows every token.
	Mask []uint64 `msgpack:"mask,omitempty"`
	// Verify marks a row of a speculative run: one sequence's consecutive
	// rows, one per draft token and one after the last (Verify false). The
	// row's sample is checked against Draft, the draft token computed at
	// the next position: on a mismatch the run ends at this row, and the
	// device need not sample the run's later rows (their Tokens entries
	// are then ID -1, without an error).
	Verify bool  `msgpack:"verify,omitempty"`
	Draft  int32 `msgpack:"draft,omitempty"`
	// DraftQ, when not nil, is the distribution Draft was drawn from: the
	// row accepts Draft with probability min(1, p/q) and otherwise samples
	// from max(0, p - q), normalised (model/sample's Verify), so the token
	// is still distributed as plain sampling's. A row with DraftQ but not
	// Verify (the last of a run, whose draft the batcher cut) samples so
	// too, and the run ends there as any run's last row.
	DraftQ *DraftDist `msgpack:"draft_q,omitempty"`
}

// StepDone answers a Step: one token per Samples entry, in order, or Err
// when the step failed as a whole. Errs, when not nil, holds a per-sample
// error ("" for the rows that sampled). Device -> batcher.
type StepDone struct {
	StepID       uint64   `msgpack:"step_id"`
	Tokens       []Token  `msgpack:"tokens"`
	Errs         []string `msgpack:"errs,omitempty"`
	Err          string   `msgpack:"err,omitempty"`
	ForwardNanos int64    `msgpack:"forward_nanos"` // time in the forward pass and sampling
	// Embeddings, when not nil, holds per Samples entry the pooled state of
	// an embedding sequence (nil for the others).
	Embeddings [][]float32 `msgpack:"embeddings,omitempty"`
}

// BlockCopy copies one block, all layers, from Src to Dst.
type BlockCopy struct {
	Src int32 `msgpack:"src"`
	Dst int32 `msgpack:"dst"`
}

// SwapOut copies device blocks (Src) to host-tier blocks (Dst) before the
// device blocks are reused. Batcher -> device, ahead of the Step that reuses
// them; a device handles its mailbox in order, so no answer is needed.
type SwapOut struct {
	Blocks []BlockCopy `msgpack:"blocks"`
}

// SwapIn copies host-tier blocks (Src) back to device blocks (Dst) before the
// Step that reads them. Batcher -> device.
type SwapIn struct {
	Blocks []BlockCopy `msgpack:"blocks"`
}

// Free tells a device that sequences ended, so it drops what it keeps for
// them (sampler state). Their blocks are the batcher's to reuse.
// Batcher -> device.
type Free struct {
	SeqIDs []uint64 `msgpack:"seq_ids"`
}

// DeviceRestarted tells the batcher its device was restarted by its
// supervisor after a failure: the step in flight, if any, is lost.
// Device -> batcher (its parent).
type DeviceRestarted struct {
	Device int    `msgpack:"device"`
	Reason string `msgpack:"reason,omitempty"`
}

// GetStats asks the batcher for a Stats snapshot. Anyone -> batcher.
type GetStats struct{}

// Stats is a snapshot of the batcher's schedule and counters, summed over
// its devices. Batcher -> the asker.
type Stats struct {
	Running, Waiting, Swapped  int
	NumBlocks, NumFreeBlocks   int
	KVCacheUsage               float64 // fraction of device blocks held by sequences
	PrefixQueries, PrefixHits  int64   // prompt tokens looked up / found in the prefix cache
	Preemptions, SwapOuts      int64   // sequences preempted (any mode) / swapped out
	SwapIns                    int64
	Steps                      int64 // micro-batches dispatched
	StepTokens                 int64 // tokens computed by those steps
	ForwardNanos               int64 // device time in forward passes and sampling, summed
	Rejected                   int64 // sequences that could never fit
	DeviceRestarts             int64
	HostBlocks, FreeHostBlocks int
	NumCachedBlocks            int   // free blocks still holding a cached prefix
	WindowFreedBlocks          int64 // blocks freed behind every layer's sliding window
	// Speculative decoding (vLLM's spec_decode_* counters): draft tokens
	// verified, and accepted; SpecDrafts counts the runs verified, and
	// SpecAcceptedPerPos[i] the runs whose draft token i was accepted.
	SpecDrafts, SpecDraftTokens, SpecAcceptedTokens int64
	SpecAcceptedPerPos                              []int64
	Devices                                         []DeviceStats // (devices) each device's part, in device order
}

// DeviceStats is one device's part of a Stats snapshot: its schedule, its
// KV blocks, and counters of the steps it ran (a reader takes rates and
// means from the differences between two snapshots).
type DeviceStats struct {
	Running, Waiting, Swapped                 int
	NumBlocks, NumFreeBlocks, NumCachedBlocks int // free includes cached
	Preemptions                               int64
	Steps                                     int64 // micro-batches run
	StepTokens                                int64 // tokens computed by those steps
	StepSeqs                                  int64 // sequences in those steps, summed
	Samples                                   int64 // tokens sampled (one per sequence-step that produced a token; a speculative run's accepted tokens too)
	ForwardNanos                              int64 // time in forward passes and sampling
	Dead                                      bool  // stopped after repeated failures
}
