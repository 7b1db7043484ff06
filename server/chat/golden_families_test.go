package chat

import (
	"testing"
)

// TestGoldenFamilies is TestGolden for testdata/golden-families.json: Python
// jinja2's renderings of Qwen3's (and Qwen3-MoE's), Qwen3-Coder's (a
// qwen3moe model, XML tool calls) and Gemma 3's chat templates, on golden.json's conversations and on conversations that reach
// what these templates read: enable_thinking on and off, reasoning_content
// in the history (Qwen3 keeps it only after the last user query), reasoning
// inside the content, multi-step tool calls, grouped tool responses, a user
// message that is a <tool_response>, Gemma 3's system prompt folded into the
// first turn and its alternation check. Written by
//
//	python3 scripts/chat-template-golden-families.py
//
// (which says where each template comes from; the file's "generator" and
// each template's "from" record it). Qwen3's and Gemma 3's fail on a tool
// call's content None, so the messages carry "" there as the server passes
// them (NeedsStringContent); Qwen3-Coder's takes arguments only as objects,
// shown as <parameter=NAME>; the probes that find both must agree with
// Python's.
func TestGoldenFamilies(t *testing.T) {
	rendered := runGoldenProbed(t, "golden-families.json")
	for _, name := range []string{"Qwen-Qwen3-0.6B", "Qwen3-Coder", "google-gemma-3-it"} {
		if rendered[name] < 15 {
			t.Errorf("%s renders %d conversations; want at least 15", name, rendered[name])
		}
	}
}
