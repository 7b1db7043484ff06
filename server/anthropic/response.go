package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// response is a message, the answer of POST /v1/messages.
type response struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        usage          `json:"usage"`
}

type usage struct {
	InputTokens              int     `json:"input_tokens"`
	OutputTokens             int     `json:"output_tokens"`
	CacheCreationInputTokens int     `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int     `json:"cache_read_input_tokens"`
	ServiceTier              *string `json:"service_tier"`
}

// contentBlock is a block of the answer: text, thinking or tool_use.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Citations *[]any          `json:"citations,omitempty"`
}

// stopReason is Anthropic's name of a finish reason. A stop string is not
// told apart from the model's end of turn (the runtime does not say which
// ended the output): both are end_turn.
func stopReason(ev *pipeline.Event) string {
	switch ev.Finish {
	case pipeline.FinishStop:
		if ev.Stop != "" {
			return "stop_sequence"
		}
	case pipeline.FinishLength:
		return "max_tokens"
	case pipeline.FinishToolCall:
		return "tool_use"
	}
	return "end_turn"
}

// builder assembles a whole message from the events.
type builder struct {
	args map[int]int // call index -> its tool_use block
	open int         // 1 + the text or thinking block being written; 0: none
}

func (b *builder) add(msg *response, ev *pipeline.Event) {
	switch ev.Kind {
	case pipeline.TextDelta, pipeline.ReasoningDelta:
		typ := blockType(ev.Kind)
		if b.open == 0 || msg.Content[b.open-1].Type != typ {
			msg.Content = append(msg.Content, startBlock(typ))
			b.open = len(msg.Content)
		}
		blk := &msg.Content[b.open-1]
		if typ == "text" {
			*blk.Text += ev.Text
		} else {
			*blk.Thinking += ev.Text
		}
	case pipeline.CallStart:
		msg.Content = append(msg.Content, contentBlock{Type: "tool_use", ID: toolUseID(ev.Call.ID), Name: ev.Call.Name})
		if b.args == nil {
			b.args = map[int]int{}
		}
		b.args[ev.Call.Index], b.open = len(msg.Content)-1, 0
	case pipeline.CallArgs:
		if k, ok := b.args[ev.Call.Index]; ok {
			msg.Content[k].Input = append(msg.Content[k].Input, ev.Call.Arguments...)
		}
	case pipeline.Finish:
		r := stopReason(ev)
		msg.StopReason = &r
		if ev.Stop != "" && r == "stop_sequence" {
			msg.StopSequence = &ev.Stop
		}
	case pipeline.Usage:
		msg.Usage.OutputTokens = ev.Usage.CompletionTokens
		msg.Usage.CacheReadInputTokens = ev.Usage.CachedTokens
	}
}

// blockType is the block a text event goes in.
func blockType(k pipeline.Kind) string {
	if k == pipeline.ReasoningDelta {
		return "thinking"
	}
	return "text"
}

// startBlock is an empty text or thinking block.
func startBlock(typ string) contentBlock {
	if typ == "text" {
		return contentBlock{Type: typ, Text: new(string)}
	}
	return contentBlock{Type: typ, Thinking: new(string), Signature: new(string)}
}

// toolUseID is a call's id as Anthropic writes them: toolu_ in place of
// the server's call_ (toolcall.NewCallID); an id the model wrote itself
// (Kimi's, Mistral's) is kept, since its template reads it back.
func toolUseID(id string) string {
	switch {
	case id == "":
		return newID("toolu_")
	case strings.HasPrefix(id, "call_"):
		return "toolu_" + strings.TrimPrefix(id, "call_")
	}
	return id
}
