// Package tokenizer turns text into token ids and back exactly as llama.cpp's
// src/llama-vocab.cpp does, so that troupe feeds a model the same ids
// llama.cpp would and prints the same text.
//
// A Vocab is plain data, read from a GGUF file by FromGGUF (with llama.cpp's
// defaults, special-token detection and end-of-generation set) or from a
// Hugging Face tokenizer.json. New builds a Tokenizer from it for one of three
// families, named as in GGUF:
//
//   - "llama": SentencePiece BPE with scores and <0xNN> byte fallback (SPM)
//   - "gpt2":  byte-level BPE with merges and a pre-tokenizer regex (BPE)
//   - "bert":  WordPiece (WPM)
//
// Encode first cuts special tokens out of the text (control tokens only when
// asked to parse them, user-defined tokens always), then hands each raw
// fragment to the family's encoder. Decode and Detokenize mirror
// llama_detokenize; TokenPiece is llama_token_to_piece; a Decoder turns a
// stream of ids into text without splitting UTF-8 characters.
//
// Where llama.cpp aborts, troupe does not: a character that is no token in a
// vocabulary without byte tokens becomes UNK.
//
// Concurrency: a Tokenizer is immutable after New and safe for concurrent
// use; the Vocab it was built from must not change afterwards. A Decoder
// holds one stream's state and belongs to one goroutine.
package tokenizer
