package messages

// EmbedParams makes a NewSequence an embedding: a prefill-only sequence
// whose result is its pooled final hidden state, not sampled tokens. It is
// computed whole (no prefix-cache hits), answered with one StepResult
// (Finish FinishStop, Embedding set), and its blocks are freed at once.
type EmbedParams struct {
	Pooling string `msgpack:"pooling"` // "mean", "cls" or "last" (model.Pooling's names)
	// Whole computes the sequence in one step, never in chunks (an
	// encoder's tokens attend to all of it).
	Whole bool `msgpack:"whole,omitempty"`
}

// EmbedSpec says that the rows of one sequence in a Step are an embedding's:
// the device keeps their final hidden states, pooled with Pooling, and
// answers the pooled state on the step that samples the sequence (its last
// chunk) in StepDone.Embeddings. Part of Step.
type EmbedSpec struct {
	Seq     int32  `msgpack:"seq"` // index into the Step's BlockTables
	SeqID   uint64 `msgpack:"seq_id"`
	Pooling string `msgpack:"pooling"`
}
