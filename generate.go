package troupe

import (
	"context"
	"fmt"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// Chat continues the conversation in req and returns the model's whole
// answer: its text, its reasoning apart where the template reasons, and
// its tool calls, parsed as troupe serve parses them. Cancelling ctx stops
// the generation and frees its KV blocks at once; Chat then returns ctx's
// error.
func (t *Model) Chat(ctx context.Context, req *ChatRequest) (*Response, error) {
	return t.ChatStream(ctx, req, nil)
}

// ChatStream is Chat, calling fn with each piece of the answer as it is
// generated, in the caller's goroutine. An error from fn cancels the
// generation, and ChatStream returns it. fn may be nil.
func (t *Model) ChatStream(ctx context.Context, req *ChatRequest, fn func(Delta) error) (*Response, error) {
	pr, err := chatRequest(req)
	if err != nil {
		return nil, err
	}
	return t.generate(ctx, pr, fn)
}

// Complete continues req.Prompt as it is, without a chat template.
func (t *Model) Complete(ctx context.Context, req *CompletionRequest) (*Response, error) {
	return t.CompleteStream(ctx, req, nil)
}

// CompleteStream is Complete, calling fn with each piece of text as
// ChatStream does.
func (t *Model) CompleteStream(ctx context.Context, req *CompletionRequest, fn func(Delta) error) (*Response, error) {
	if req == nil {
		return nil, &Error{Kind: ErrInvalid, Message: "a nil request"}
	}
	pr := &pipeline.Request{Prompt: &pipeline.Prompt{Text: req.Prompt}, Sampling: sampling(&req.Sampling),
		Constraint: constraint(req.JSON), Names: fieldNames}
	return t.generate(ctx, pr, fn)
}

// generate runs pr through the pipeline, collecting the response and
// passing each delta to fn.
func (t *Model) generate(ctx context.Context, pr *pipeline.Request, fn func(Delta) error) (*Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run, perr := t.srv.Start(ctx, pr)
	if perr != nil {
		return nil, t.failure(ctx, perr)
	}
	var (
		resp  Response
		fnErr error
		calls = map[int]int{} // the event's call index -> resp.ToolCalls index
	)
	deliver := func(d Delta) {
		if fn != nil && fnErr == nil {
			if fnErr = fn(d); fnErr != nil {
				cancel()
			}
		}
	}
	perr = run.Each(func(e *pipeline.Event) {
		switch e.Kind {
		case pipeline.TextDelta:
			resp.Content += e.Text
			deliver(Delta{Content: e.Text})
		case pipeline.ReasoningDelta:
			resp.Reasoning += e.Text
			deliver(Delta{Reasoning: e.Text})
		case pipeline.CallStart, pipeline.CallArgs:
			i, ok := calls[e.Call.Index]
			if !ok {
				i = len(resp.ToolCalls)
				calls[e.Call.Index] = i
				resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: e.Call.ID, Name: e.Call.Name})
			}
			resp.ToolCalls[i].Arguments += e.Call.Arguments
			deliver(Delta{ToolCall: &ToolCallDelta{Index: i, ID: e.Call.ID, Name: e.Call.Name, Arguments: e.Call.Arguments}})
		case pipeline.Finish:
			resp.Finish, resp.Stop = FinishReason(e.Finish), e.Stop
		case pipeline.Usage:
			resp.Usage = Usage{PromptTokens: e.Usage.PromptTokens, CompletionTokens: e.Usage.CompletionTokens}
		}
	})
	switch {
	case fnErr != nil:
		return nil, fnErr
	case perr != nil:
		return nil, t.failure(ctx, perr)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("troupe: %w", context.Cause(ctx))
	case resp.Finish == "":
		return nil, &Error{Kind: ErrUnavailable, Message: "the generation was cancelled: the model is closing"}
	}
	return &resp, nil
}

// failure is the error of a failed request: ctx's when it ended, else the
// pipeline's.
func (t *Model) failure(ctx context.Context, e *pipeline.Error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("troupe: %w", context.Cause(ctx))
	}
	return fromPipeline(e)
}
