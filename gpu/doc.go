// Package gpu runs a model's forward pass on an NVIDIA GPU: the weights in
// their GGUF types and the paged KV cache (as halves) in device memory, a
// host tier of pinned memory for swapped-out blocks, and kernels compiled
// at run time by NVRTC from kernels_*.cu, joined into one source (gpu/cuda
// loads the driver, so nothing of CUDA is needed to build or to run without
// a GPU).
//
// A Model has model.Model's Forward contract over its own cache: the same
// ragged model.Batch, the same block tables, logits for the rows that ask.
// Every (row, output) is computed the same way whatever the batch, so the
// pass is batch-invariant like the CPU's (recompute preemption and chunked
// prefill rely on it). An image's rows (Batch.Embeds, encoded on the host)
// are staged with the batch and copied over their placeholders' token
// embeddings; rows with Batch.AttendTo attend past their own position.
//
// The arithmetic is that of ggml's CPU backend, which made llama.cpp's
// reference logits, as the CPU path's is: activations converted to the
// weight type's vec_dot_type (Q8_0, Q8_1 or Q8_K blocks; f16 or bf16
// values) before each matrix product; quantized weights multiplied with
// ggml's exact integer block sums and its float order; RMSNorm's double
// sum, SwiGLU's exp polynomial, flash attention's f16 query and f16 value
// accumulator. Each layer quantizes its input again, so a last-bit
// difference upstream can move a quant a whole step and the logits by
// percents of their spread; with ggml's arithmetic the logits of quantized
// models equal llama.cpp's (almost always bit for bit). Products with F32,
// F16 and BF16 weights sum in another order: they differ by float rounding.
//
// Without a GPU the tests run on a CUDA emulator (testdata/emu, set up by
// internal/cudaemu): the kernels built for the host, each CUDA thread a
// fiber.
//
// Concurrency: a Model is used by one goroutine at a time (its device
// actor); its work runs in order on one CUDA stream.
package gpu
