// Package spec holds speculative decoding's proposers: plain Go values that
// guess the tokens that follow a sequence, for the runtime to verify in one
// step (see ARCHITECTURE.md, "Speculative decoding").
//
// A proposer belongs to one sequence and is used from its actor's goroutine
// only; nothing here is safe for concurrent use.
package spec
