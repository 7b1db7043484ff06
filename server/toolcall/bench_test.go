package toolcall

import (
	"strings"
	"testing"
)

// BenchmarkStream feeds a 2 KB answer and a 2 KB call in 4-byte deltas
// (about a token each) and reports the cost per delta.
func BenchmarkStream(b *testing.B) {
	out := strings.Repeat("The weather in Paris is mild. ", 68) +
		`<tool_call>{"name": "write", "arguments": {"text": "` + strings.Repeat("lorem ipsum ", 170) + `"}}</tool_call>`
	for _, f := range []Format{Hermes, Mistral, OpenAI} {
		if f == Mistral {
			out = strings.ReplaceAll(strings.ReplaceAll(out, "<tool_call>", "[TOOL_CALLS]"), "</tool_call>", "")
		}
		b.Run(string(f), func(b *testing.B) {
			p := &Parser{Format: f, NewID: counter()}
			deltas := 0
			for b.Loop() {
				st := p.NewStream()
				for i := 0; i < len(out); i += 4 {
					st.Write(out[i:min(i+4, len(out))])
					deltas++
				}
				st.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(deltas), "ns/delta")
		})
	}
}
