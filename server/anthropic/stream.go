package anthropic

import (
	"net/http"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// stream answers with Anthropic's event stream: message_start, a ping,
// then each content block as content_block_start, its deltas
// (text_delta, thinking_delta, input_json_delta) and content_block_stop,
// then message_delta (stop_reason, output tokens) and message_stop. A
// failure mid-stream is an error event.
func (h *Handler) stream(w http.ResponseWriter, run pipeline.Run, msg *response) {
	out := pipeline.NewSSE(w)
	out.Event("message_start", map[string]any{"type": "message_start", "message": msg})
	out.Event("ping", map[string]string{"type": "ping"})
	st := &streamer{out: out, index: -1}
	stop := "end_turn"
	var seq *string // the stop sequence that ended the message
	var u usage
	failed := run.Each(func(ev *pipeline.Event) {
		switch ev.Kind {
		case pipeline.TextDelta, pipeline.ReasoningDelta:
			typ := blockType(ev.Kind)
			if st.open != typ {
				st.start(startBlock(typ))
			}
			delta := map[string]string{"type": "text_delta", "text": ev.Text}
			if typ == "thinking" {
				delta = map[string]string{"type": "thinking_delta", "thinking": ev.Text}
			}
			st.delta(delta)
		case pipeline.CallStart:
			st.start(contentBlock{Type: "tool_use", ID: toolUseID(ev.Call.ID), Name: ev.Call.Name, Input: []byte("{}")})
		case pipeline.CallArgs:
			st.delta(map[string]string{"type": "input_json_delta", "partial_json": ev.Call.Arguments})
		case pipeline.Finish:
			stop = stopReason(ev)
			if stop == "stop_sequence" {
				seq = &ev.Stop
			}
		case pipeline.Usage:
			u.InputTokens, u.OutputTokens = ev.Usage.PromptTokens, ev.Usage.CompletionTokens
			u.CacheReadInputTokens = ev.Usage.CachedTokens
		case pipeline.Failed:
			out.Event("error", errorBody(ev.Err))
		}
	})
	if failed != nil {
		return
	}
	st.stop()
	out.Event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": seq}, "usage": u})
	out.Event("message_stop", map[string]string{"type": "message_stop"})
}

// streamer writes the content blocks of a stream.
type streamer struct {
	out   *pipeline.SSE
	index int    // the current block's index; -1 before the first
	open  string // the type of the open block; "": none
}

func (s *streamer) start(b contentBlock) {
	s.stop()
	s.index++
	s.open = b.Type
	s.out.Event("content_block_start", map[string]any{"type": "content_block_start", "index": s.index, "content_block": b})
}

func (s *streamer) delta(d any) {
	s.out.Event("content_block_delta", map[string]any{"type": "content_block_delta", "index": s.index, "delta": d})
}

func (s *streamer) stop() {
	if s.open == "" {
		return
	}
	s.out.Event("content_block_stop", map[string]any{"type": "content_block_stop", "index": s.index})
	s.open = ""
}
