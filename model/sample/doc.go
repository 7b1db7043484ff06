// Package sample picks the next token from a row of logits: logit bias,
// repetition/presence/frequency penalties, DRY, greedy argmax or top-k,
// typical-p, top-p, min-p, XTC and temperature followed by a seeded draw,
// and the log-probabilities the OpenAI API reports. The order of the steps
// and their semantics follow llama.cpp's default sampler chain:
//
//	logit bias → penalties → DRY → greedy argmax
//	      → top-k → typical-p → top-p → min-p → XTC → temperature → softmax → draw
//
// Without typical-p, XTC or min_keep, top-k/top-p/min-p take fast paths that
// avoid sorting the vocabulary (truncate.go, topp.go); with them, the general
// chain (chain.go) follows llama.cpp step by step in float32. XTC's coin comes
// from a Mersenne Twister seeded as llama.cpp's, so the same seed drops the
// same tokens; the final draw uses this package's own generator, so the
// token drawn from the survivors is not llama.cpp's. Greedy sampling
// (temperature <= 0) skips truncation altogether, XTC and infill included.
//
// Two more of llama.cpp's samplers: infill (infill.go), for fill-in-the-
// middle, runs after XTC when Params.Infill describes the vocabulary; and
// mirostat (mirostat.go), which replaces the chain after logit bias and
// temperature and draws as llama.cpp does (a Mersenne Twister and
// libstdc++'s discrete_distribution), so the same seed gives llama.cpp's
// tokens. ReasoningBudget (reasoning.go) is llama.cpp's reasoning budget:
// the per-sequence state that tells which token to force when a reasoning
// section has spent its budget.
//
// Sampling is deterministic: the same Params (with HasSeed), the same logits
// and the same histories give the same tokens, call after call. Nothing in
// the computation depends on map iteration order.
//
// A Sampler owns its random number generator and its scratch buffers, which
// grow to the vocabulary size on the first call; after that Sample does not
// allocate. It holds about 4 bytes per vocabulary entry when logit bias or
// penalties are set, 4 more when penalties are set, and 12 more when top-p or
// min-p run without top-k (or nothing truncates at all).
//
// Concurrency: a Sampler belongs to one sequence and is used by one goroutine
// at a time; it is not safe for concurrent use. Different Samplers share
// nothing and may run in parallel. Params and the package-level functions
// (Argmax, LogSoftmax) are safe for concurrent use.
package sample
