package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// conversation translates the messages: user and assistant turns, whose
// content is a string or a list of blocks. An assistant's text, thinking
// and tool_use blocks make one assistant message with its calls; a user's
// tool_result blocks become tool messages (each answering a tool_use of
// the turn before), its text blocks a user message.
//
// A user's image blocks go into images, their markers into its text.
func conversation(msgs []message, images *[]pipeline.Image) ([]pipeline.Message, *pipeline.Error) {
	if len(msgs) == 0 {
		return nil, pipeline.Errorf("messages", "messages: at least one message is required")
	}
	var out []pipeline.Message
	calls := map[string]string{} // tool_use id -> name, of the latest assistant turn
	for i, m := range msgs {
		field := fmt.Sprintf("messages.%d", i)
		blocks, err := readBlocks(m.Content, field+".content")
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case "user":
			if i > 0 && msgs[i-1].Role == "user" {
				return nil, pipeline.Errorf(field+".role", "%s.role: roles must alternate between \"user\" and \"assistant\"", field)
			}
			ms, err := userTurn(blocks, field, calls, images)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
			calls = map[string]string{}
		case "assistant":
			if i == 0 || msgs[i-1].Role == "assistant" {
				return nil, pipeline.Errorf(field+".role", "%s.role: roles must alternate between \"user\" and \"assistant\", starting with \"user\"", field)
			}
			am, err := assistantTurn(blocks, field, calls)
			if err != nil {
				return nil, err
			}
			out = append(out, am)
		default:
			return nil, pipeline.Errorf(field+".role", `%s.role %q: want "user" or "assistant"`, field, m.Role)
		}
	}
	return out, nil
}

// readBlocks reads a message's content: a string is one text block.
func readBlocks(raw json.RawMessage, field string) ([]block, *pipeline.Error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}, nil
	}
	var blocks []block
	if pipeline.IsNull(raw) || json.Unmarshal(raw, &blocks) != nil {
		return nil, pipeline.Errorf(field, "%s: expected a string or a list of content blocks", field)
	}
	return blocks, nil
}

// userTurn is a user message's blocks as pipeline messages.
func userTurn(blocks []block, field string, calls map[string]string, images *[]pipeline.Image) ([]pipeline.Message, *pipeline.Error) {
	var out []pipeline.Message
	var text []string
	for k, b := range blocks {
		bf := fmt.Sprintf("%s.content.%d", field, k)
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_result":
			name, ok := calls[b.ToolUseID]
			if !ok {
				return nil, pipeline.Errorf(bf+".tool_use_id", "%s.tool_use_id %q: no tool_use block with this id in the previous assistant message", bf, b.ToolUseID)
			}
			content, err := resultText(b.Content, bf+".content")
			if err != nil {
				return nil, err
			}
			out = append(out, pipeline.Message{Role: pipeline.ToolRole, Content: content, ToolCallID: b.ToolUseID, Name: name})
		case "image":
			im, err := imageBlock(b, bf) // images.go
			if err != nil {
				return nil, err
			}
			*images = append(*images, im)
			text = append(text, pipeline.ImageMarker)
		case "tool_use", "thinking", "redacted_thinking":
			return nil, pipeline.Errorf(bf+".type", "%s.type %q: only an assistant message may hold this block", bf, b.Type)
		default:
			return nil, unsupportedBlock(bf, b.Type)
		}
	}
	if len(text) > 0 {
		out = append(out, pipeline.Message{Role: pipeline.User, Content: strings.Join(text, "\n")})
	}
	return out, nil
}

// assistantTurn is an assistant message's blocks as one message; calls
// gets the ids of its tool_use blocks.
func assistantTurn(blocks []block, field string, calls map[string]string) (pipeline.Message, *pipeline.Error) {
	m := pipeline.Message{Role: pipeline.Assistant}
	var text []string
	for k, b := range blocks {
		bf := fmt.Sprintf("%s.content.%d", field, k)
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "thinking":
			m.Reasoning += b.Thinking
		case "redacted_thinking":
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return m, pipeline.Errorf(bf, "%s: a tool_use block needs an id and a name", bf)
			}
			input := "{}"
			if !pipeline.IsNull(b.Input) {
				if strings.TrimSpace(string(b.Input))[0] != '{' {
					return m, pipeline.Errorf(bf+".input", "%s.input: expected an object", bf)
				}
				input = string(b.Input)
			}
			calls[b.ID] = b.Name
			m.ToolCalls = append(m.ToolCalls, pipeline.ToolCall{ID: b.ID, Name: b.Name, Arguments: input})
		case "tool_result":
			return m, pipeline.Errorf(bf+".type", "%s.type \"tool_result\": only a user message may hold this block", bf)
		default:
			return m, unsupportedBlock(bf, b.Type)
		}
	}
	m.Content = strings.Join(text, "")
	return m, nil
}

// resultText is a tool_result's content: a string or text blocks.
func resultText(raw json.RawMessage, field string) (string, *pipeline.Error) {
	if pipeline.IsNull(raw) {
		return "", nil
	}
	blocks, err := readBlocks(raw, field)
	if err != nil {
		return "", err
	}
	var text []string
	for k, b := range blocks {
		if b.Type != "text" {
			return "", unsupportedBlock(fmt.Sprintf("%s.%d", field, k), b.Type)
		}
		text = append(text, b.Text)
	}
	return strings.Join(text, "\n"), nil
}

// unsupportedBlock is the 400 of a content block troupe cannot read.
func unsupportedBlock(field, typ string) *pipeline.Error {
	switch typ {
	case "document":
		return pipeline.Errorf(field+".type", "%s.type %q: document blocks are not supported", field, typ)
	case "image":
		return pipeline.Errorf(field+".type", "%s.type %q: only a user message's content may hold an image", field, typ)
	}
	return pipeline.Errorf(field+".type", "%s.type %q: unknown content block type (want text, tool_use, tool_result or thinking)", field, typ)
}
