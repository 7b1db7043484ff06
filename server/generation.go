package server

import (
	"context"
	"time"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// generation is a request mapped onto the runtime's terms by its route
// (rendered, its sampling fields and constraint set on g), before the
// steps every chat-like route shares (startGeneration).
type generation struct {
	g            *messages.GenerateRequest
	text         string     // the rendered prompt
	grammarParam string     // the field g.Grammar came from
	tools        *chatTools // the request's tools; nil: none
	chat         bool       // a conversation: a thinking template's reasoning is parsed
	maxTokens    *int       // the request's limit, named maxParam
	defaultMax   int        // the limit when it sets none; 0: the rest of the context
	ctxLen       int        // the context it may use; 0: the served one
	maxParam     string
	promptParam  string // the field the prompt came from
}

// startGeneration is the one prologue of the chat routes (OpenAI's chat
// handler and the pipeline's dialects): the grammar compiled (and, for
// gpt-oss, wrapped so that the model reasons first), the output's parser
// (tool calls, with their grammar when forced; or the reasoning), max
// tokens resolved against the context, the runtime's check, the launch.
func (s *Server) startGeneration(ctx context.Context, gen *generation, start time.Time) (*job, *toolcall.Parser, *apiError) {
	g := gen.g
	if e := s.checkGrammar(ctx, g.Grammar, gen.grammarParam); e != nil {
		return nil, nil, e
	}
	if e := s.harmonyAnswer(ctx, g, gen.grammarParam); e != nil {
		return nil, nil, e
	}
	var parser *toolcall.Parser
	if gen.tools != nil {
		var e *apiError
		if parser, e = s.toolParser(ctx, gen.tools, g, gen.text, gen.grammarParam); e != nil {
			return nil, nil, e
		}
	}
	if parser == nil && gen.chat {
		parser = s.reasoningParser(g, gen.text)
	}
	ctxLen := s.rt.MaxModelLen()
	if gen.ctxLen > 0 {
		ctxLen = gen.ctxLen
	}
	var e *apiError
	if g.MaxTokens, e = maxTokens(gen.maxTokens, gen.maxParam, gen.promptParam, gen.defaultMax, len(g.Prompt), ctxLen); e != nil {
		return nil, nil, e
	}
	if err := s.rt.Check(g); err != nil {
		return nil, nil, userError(err)
	}
	j, e := s.launch(ctx, []*messages.GenerateRequest{g}, start)
	if e != nil {
		return nil, nil, e
	}
	return j, parser, nil
}
