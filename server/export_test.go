package server

import (
	"context"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/messages"
)

// Script makes the server answer generation requests with fn's output
// instead of the runtime's: each request is passed to fn, and each choice
// gets the text pieces fn returns, one chunk per piece, then finish (the
// request as the runtime would have seen it, for tests of the mapping,
// and a deterministic output, for tests of what the server makes of it).
func (s *Server) Script(fn func(req *messages.GenerateRequest) (pieces []string, finish string)) {
	var f scriptFunc = func(ctx context.Context, req *messages.GenerateRequest) (<-chan *messages.OutputChunk, error) {
		pieces, finish := fn(req)
		n := max(req.N, 1)
		ch := make(chan *messages.OutputChunk, n*(len(pieces)+1)+1)
		for i := range n {
			for k, p := range pieces {
				c := &messages.OutputChunk{Index: i, Text: p, Tokens: []messages.Token{{ID: 1}}}
				if slices.Contains(req.Stop, p) { // a piece that is a stop string ends the choice, unsent
					c.Text, c.FinishReason, c.StopString = "", messages.FinishStop, p
					ch <- c
					break
				}
				if k == len(pieces)-1 {
					c.FinishReason = finish
				}
				ch <- c
			}
			if len(pieces) == 0 {
				ch <- &messages.OutputChunk{Index: i, FinishReason: finish}
			}
		}
		ch <- &messages.OutputChunk{Done: true, Usage: &messages.Usage{PromptTokens: len(req.Prompt), CompletionTokens: n * len(pieces)}}
		close(ch)
		return ch, nil
	}
	s.scripted.Store(&f)
}

// System is the actor system the server runs in.
func (s *Server) System() *actor.ActorSystem { return s.system }
