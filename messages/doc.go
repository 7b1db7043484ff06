// Package messages holds the plain data the actors of troupe send each other:
// exported structs without behaviour, sent as pointers inside a node and as
// msgpack bytes between nodes. Each type's comment names its sender and its
// receiver. Commands are verb-noun (StepRequest, SwapOut), events past tense
// (StepDone, Preempted).
//
// The conversations:
//
//	client (HTTP front, embedding API) -> request:  GenerateRequest, Cancel
//	request -> client:                               OutputChunk
//	request -> sequence:                             Cancel
//	sequence -> request:                             SequenceOutput
//	sequence -> batcher:                             StepRequest, Cancel
//	batcher -> sequence:                             StepResult, Preempted
//	batcher -> device:                               SwapOut, SwapIn, Step, Free
//	device -> batcher:                               StepDone, DeviceRestarted
//	anyone -> batcher:                               GetStats (answered with Stats)
//	cluster member -> batcher:                       CachedTokens, ExportKV, ImportKV (answered KVCached, KVExported, KVImported)
//
// Actor addresses never appear here: who talks to whom is wired when actors
// are spawned, so this package imports only the standard library and msgpack.
//
// Concurrency: a message is immutable once sent; neither side changes it.
package messages
