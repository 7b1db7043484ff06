package server

import (
	"strings"

	"github.com/troupe-llm/troupe/server/chat"
	"github.com/troupe-llm/troupe/server/toolcall"
)

// Tool calls and thinking on Ollama's routes. The output goes through the
// tool-call parser the OpenAI chat route uses (tools.go): the format the
// chat template teaches, or --tool-call-parser. Calls come back in
// message.tool_calls, each whole, with its arguments as a JSON object; the
// reasoning the format marks (<think>, gpt-oss's analysis channel, ...)
// comes back in message.thinking (/api/chat) or thinking (/api/generate).

// templateThinks reports whether a chat template (src, parsed or nil)
// teaches its model to reason apart from its answer: its tool-call format f
// has a reasoning block and the template holds the block's marker. This is
// Ollama's "thinking" capability (Server.thinks).
func templateThinks(t *chat.Template, src string, f toolcall.Format) bool {
	if t == nil {
		return false
	}
	marker, ok := f.ReasoningMarker()
	return ok && strings.Contains(src, marker)
}
