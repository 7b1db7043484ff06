// Package gpu runs a model's forward pass on an NVIDIA GPU: the weights in
// their GGUF types and the paged KV cache (as halves) in device memory, a
// host tier of pinned memory for swapped-out blocks, and kernels compiled
// at run time by NVRTC from kernels.cu (compute/cuda loads the driver, so
// nothing of CUDA is needed to build or to run without a GPU).
//
// A Model has model.Model's Forward contract over its own cache: the same
// ragged model.Batch, the same block tables, logits for the rows that ask.
// Matrix products use one warp per output row, dequantizing the weights on
// the fly, with every (row, output) computed the same way whatever the
// batch, so the pass is batch-invariant like the CPU's (recompute
// preemption and chunked prefill rely on it). Arithmetic differs from the
// CPU path (float32 products of dequantized weights instead of ggml's int8
// dot products, float32 attention accumulators), so logits agree with
// llama.cpp within a tolerance, not bit for bit.
//
// Concurrency: a Model is used by one goroutine at a time (its device
// actor); its work runs in order on one CUDA stream.
package gpu
