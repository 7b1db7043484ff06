// Package gguf reads GGUF model files (versions 2 and 3): the metadata
// key/value section, the tensor infos and the tensor data, which is
// memory-mapped and never copied.
//
// Every offset and length in the file is checked before it is used, so a
// truncated or corrupt file gives an error naming the file and the problem,
// never a panic or an out-of-range read.
//
// Concurrency: a File is immutable after Open and safe for concurrent use;
// tensor data stays valid until Close.
package gguf
