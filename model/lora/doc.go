// Package lora reads LoRA adapters in llama.cpp's GGUF format
// (general.type = adapter, adapter.type = lora, adapter.lora.alpha, and a
// pair of tensors NAME.lora_a, NAME.lora_b for each adapted weight NAME)
// and applies them to the rows of a matrix product: each row adds its own
// adapters' low-rank products B·(A·x)·scale to the base product W·x, as
// llama.cpp's build_lora_mm does, so that sequences with different
// adapters share one micro-batch (the rows of each adapter gathered, as
// S-LoRA and Punica do).
//
// Concurrency: an Adapter is immutable after Open and safe for concurrent
// use; its tensors stay valid until Close. An Applier is one device's
// scratch: one goroutine at a time (the function Prepare returns runs on
// the base product's workers, on disjoint columns, until the next call).
package lora
