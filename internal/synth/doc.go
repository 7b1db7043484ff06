// Package synth writes random-weight GGUF models of real models' shapes
// (TinyLlama 1.1B, Llama 3.2 1B, Qwen2.5 0.5B, SmolLM2 135M/360M) with a real
// vocabulary taken from another GGUF file, quantized by troupe's own
// quantizers (compute.QuantizeRow, bit-identical to ggml's) with
// llama-quantize's per-tensor type rules. They measure speed at real sizes
// without downloads; their text is meaningless. Llama 3.2's rope scaling is
// not written (it changes no cost). Write is safe for concurrent use with
// distinct options.
package synth
