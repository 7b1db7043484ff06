package toolcall

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/grammar"
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

// BenchmarkStreamLongCall: a 256 KB call body (a model writing a file) fed in
// 4-byte deltas; the stream must not rescan and copy it per delta.
func BenchmarkStreamLongCall(b *testing.B) {
	out := `<tool_call>{"name": "write", "arguments": {"text": "` + strings.Repeat("lorem ipsum ", 1<<15) + `"}}</tool_call>`
	p := &Parser{Format: Hermes, NewID: counter()}
	for b.Loop() {
		st := p.NewStream()
		n := 0
		for i := 0; i < len(out); i += 4 {
			n += len(st.Write(out[i:min(i+4, len(out))]))
		}
		if n += len(st.Close()); n != 2 {
			b.Fatalf("got %d deltas", n)
		}
	}
	b.ReportMetric(float64(len(out))/1024, "KB")
}

// BenchmarkGrammar writes and compiles the grammar of three tools' calls,
// per format (what a tool_choice "required" request costs the first time;
// the runtime caches the compiled grammar by its source).
func BenchmarkGrammar(b *testing.B) {
	for _, f := range []Format{Hermes, Qwen3Coder, Mistral, Gemma4} {
		b.Run(string(f), func(b *testing.B) {
			for b.Loop() {
				src, err := Grammar(f, withGBNF(Calls{Tools: grammarTools, Parallel: true}))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := grammar.Compile(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
