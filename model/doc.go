// Package model loads Llama-family models (GGUF files and Hugging Face
// safetensors directories) and runs their forward pass over one flattened,
// ragged batch of tokens from many sequences, reading and writing keys and
// values through block tables in a paged kv.Cache.
//
// Lifetimes follow llama2.c: Config (hyperparameters), Weights (mapped from
// the file, immutable), State (scratch, one per device). A Model is safe for
// concurrent use; a State and a kv.Cache belong to one caller at a time.
//
// A model's Features, derived from its Config at load, name the ways its
// arithmetic departs from the plain llama block; each forward pass declares
// the features it implements (CPUFeatures here, the gpu package's for CUDA)
// and refuses a model with others, by name (features.go). The CPU layer is
// a sequence of named stages, each switching on its own features (layer.go).
//
// Subpackages: gguf and safetensors (file formats), tokenizer, sample.
package model
