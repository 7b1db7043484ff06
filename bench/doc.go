// Package bench measures troupe's runtime the way llama.cpp's tools measure
// llama.cpp, so the numbers can be set side by side.
//
// Batched is llama-batched-bench: for each batch size B it starts a fresh
// runtime, submits B requests of PP prompt tokens at once, and times the
// prefill (until every request has its first token) and the generation of
// TG tokens each. It also reports how much of a decode step is spent
// outside the forward pass and sampling (the device time in the runtime's
// Stats): the batcher's scheduling, the messages between actors, the
// sequence actors and detokenization. The device is wrapped to see where
// each forward pass starts and ends.
//
// Serve is vllm bench serve: an OpenAI-API load generator that works against
// any compatible server (troupe, llama-server, vLLM), with Poisson arrivals
// or a fixed concurrency, and reports throughput, TTFT, TPOT, ITL and
// end-to-end latency (mean, median, p99) and goodput for given SLOs.
//
// Concurrency: Batched runs its runtimes one after another and waits for
// them; calls may run concurrently, but the timings of overlapping calls
// disturb each other.
package bench
