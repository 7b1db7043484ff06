// Package model loads Llama-family models (GGUF files and Hugging Face
// safetensors directories) and runs their forward pass over one flattened,
// ragged batch of tokens from many sequences, reading and writing keys and
// values through block tables in a paged kv.Cache.
//
// Lifetimes follow llama2.c: Config (hyperparameters), Weights (mapped from
// the file, immutable), State (scratch, one per device). A Model is safe for
// concurrent use; a State and a kv.Cache belong to one caller at a time.
//
// Subpackages: gguf and safetensors (file formats), tokenizer, sample.
package model
