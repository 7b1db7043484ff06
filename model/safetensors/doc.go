// Package safetensors reads Hugging Face model directories: the weights in
// one or more .safetensors files, memory-mapped, and config.json.
//
// A .safetensors file is a little-endian uint64 header length, a JSON header
// that maps each tensor name to its dtype, shape and byte range, then the raw
// tensor bytes. Open maps every file read-only and validates each header
// entry (dtype size times shape equals the byte range, the range lies inside
// the file) before handing out anything; a malformed file is an error naming
// the file and the problem, never a panic. A checkpoint split into shards
// carries model.safetensors.index.json, whose weight_map says which file
// holds which tensor.
//
// Tensor returns a compute.Tensor whose Data points into the mapping and
// whose Shape is in ggml order (the safetensors shape reversed). Tied
// embeddings stored once are reached under both names through the aliases
// in the header's __metadata__ (see Model.Aliases).
//
// Concurrency: a Model is immutable after Open, so its methods are safe for
// concurrent use, except Close, which must not run concurrently with any
// other call. Tensor data is valid until Close; reading it afterwards faults.
package safetensors
