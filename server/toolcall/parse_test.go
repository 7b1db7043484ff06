package toolcall

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// counter makes ids call_1, call_2, ... so two parses can be compared.
func counter() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("call_%d", n) }
}

func checkResult(t *testing.T, got, want Result) {
	t.Helper()
	if got.Content != want.Content {
		t.Errorf("content %q, want %q", got.Content, want.Content)
	}
	if got.Reasoning != want.Reasoning {
		t.Errorf("reasoning %q, want %q", got.Reasoning, want.Reasoning)
	}
	if len(got.Calls) != len(want.Calls) {
		t.Fatalf("calls %+v, want %+v", got.Calls, want.Calls)
	}
	for i, c := range got.Calls {
		w := want.Calls[i]
		if c.Name != w.Name || c.Arguments != w.Arguments {
			t.Errorf("call %d: %+v, want %+v", i, c, w)
		}
		if w.ID != "" && c.ID != w.ID || c.ID == "" {
			t.Errorf("call %d: id %q, want %q", i, c.ID, w.ID)
		}
	}
}

func TestParseFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			p := &Parser{Format: f.format, ReasoningOpen: f.reasoningOpen}
			checkResult(t, p.Parse(f.in), f.want)
		})
	}
}

// collect feeds chunks to a stream, checks the deltas' order and returns
// what they add up to.
func collect(t *testing.T, p *Parser, chunks []string) Result {
	t.Helper()
	st := p.NewStream()
	var ds []Delta
	for _, c := range chunks {
		ds = append(ds, st.Write(c)...)
	}
	ds = append(ds, st.Close()...)
	var r Result
	for _, d := range ds {
		set := 0
		if d.Content != "" {
			set++
			r.Content += d.Content
		}
		if d.Reasoning != "" {
			set++
			r.Reasoning += d.Reasoning
		}
		if c := d.Call; c != nil {
			set++
			switch {
			case c.ID != "": // a new call: id and name first, no arguments
				if c.Index != len(r.Calls) || c.Name == "" || c.Arguments != "" {
					t.Fatalf("call header %+v after %d calls", *c, len(r.Calls))
				}
				r.Calls = append(r.Calls, Call{ID: c.ID, Name: c.Name})
			default:
				if c.Index != len(r.Calls)-1 || c.Name != "" {
					t.Fatalf("argument delta %+v with %d calls", *c, len(r.Calls))
				}
				r.Calls[c.Index].Arguments += c.Arguments
			}
		}
		if set != 1 {
			t.Fatalf("delta %+v sets %d fields", d, set)
		}
	}
	if st.Finished() != (len(r.Calls) > 0) {
		t.Errorf("Finished %v with %d calls", st.Finished(), len(r.Calls))
	}
	return r
}

func sameResult(t *testing.T, how string, got, want Result) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: stream gives %+v, Parse gives %+v", how, got, want)
	}
}

// TestStreamSplits: a stream fed in any split adds up to Parse's result.
func TestStreamSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			parser := func() *Parser {
				return &Parser{Format: f.format, ReasoningOpen: f.reasoningOpen, NewID: counter()}
			}
			want := parser().Parse(f.in)
			sameResult(t, "whole", collect(t, parser(), []string{f.in}), want)
			var chars []string
			for _, r := range f.in {
				chars = append(chars, string(r))
			}
			sameResult(t, "char by char", collect(t, parser(), chars), want)
			for cut := 1; cut < len(f.in); cut++ { // every split in two, at bytes
				sameResult(t, fmt.Sprintf("split at %d", cut), collect(t, parser(), []string{f.in[:cut], f.in[cut:]}), want)
			}
			for range 50 {
				var chunks []string
				for s := f.in; s != ""; {
					n := min(len(s), 1+rng.IntN(12))
					chunks, s = append(chunks, s[:n]), s[n:]
				}
				sameResult(t, fmt.Sprintf("chunks %q", chunks), collect(t, parser(), chunks), want)
			}
		})
	}
}

// TestStreamHoldsBack: text that may begin a marker waits; plain text does not.
func TestStreamHoldsBack(t *testing.T) {
	p := &Parser{Format: Hermes, NewID: counter()}
	st := p.NewStream()
	if ds := st.Write("Hello <tool"); len(ds) != 1 || ds[0].Content != "Hello" {
		t.Fatalf("Write(Hello <tool) = %+v, want content Hello", ds)
	}
	if ds := st.Write("box> done"); len(ds) != 1 || ds[0].Content != " <toolbox> done" {
		t.Fatalf("Write(box> done) = %+v, want the held text released", ds)
	}
	if ds := st.Write(" <tool_call>{\"name\": \"f\", \"arguments\": {}}"); len(ds) != 0 {
		t.Fatalf("an open call emitted %+v", ds)
	}
	ds := st.Write("</tool_call>")
	if len(ds) != 2 || ds[0].Call == nil || ds[0].Call.Name != "f" || ds[0].Call.ID != "call_1" || ds[1].Call.Arguments != "{}" {
		t.Fatalf("closing the call emitted %+v", ds)
	}
}

func TestParseIDs(t *testing.T) {
	r := (&Parser{Format: Hermes}).Parse(`<tool_call>{"name": "f", "arguments": {}}</tool_call><tool_call>{"name": "f", "arguments": {}}</tool_call>`)
	a, b := r.Calls[0].ID, r.Calls[1].ID
	if !strings.HasPrefix(a, "call_") || len(a) != 29 || a == b {
		t.Errorf("ids %q %q: want distinct call_ + 24 characters", a, b)
	}
	m := (&Parser{Format: Mistral}).Parse(`[TOOL_CALLS]f[ARGS]{}`)
	if id := m.Calls[0].ID; len(id) != 9 {
		t.Errorf("mistral id %q: want 9 characters (its template refuses others)", id)
	}
}

func TestPromptOpensReasoning(t *testing.T) {
	for _, c := range []struct {
		f      Format
		prompt string
		want   bool
	}{
		{DeepSeekR1, "<｜Assistant｜><think>\n", true},
		{Hermes, "<|im_start|>assistant\n", false},
		{Hermes, "<|im_start|>assistant\n<think>\n\n</think>\n\n", false},
		{Mistral, "[/INST][THINK]", true},
		{None, "<think>", false},
	} {
		if got := PromptOpensReasoning(c.f, c.prompt); got != c.want {
			t.Errorf("PromptOpensReasoning(%s, %q) = %v, want %v", c.f, c.prompt, got, c.want)
		}
	}
}

func TestLookup(t *testing.T) {
	for name, want := range map[string]Format{
		"hermes": Hermes, "llama3_json": Llama3JSON, "mistral": Mistral, "qwen3_coder": Qwen3Coder,
		"openai": OpenAI, "kimi_k2": KimiK2, "glm45": GLM45, "granite": Granite, "deepseek_v31": DeepSeekV31,
		"functionary_v3": FunctionaryV3, "Hermes": Hermes, "gpt-oss": OpenAI, "none": None,
	} {
		got, err := Lookup(name)
		if err != nil || got != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := Lookup("pythonic_v9"); err == nil || !strings.Contains(err.Error(), "hermes") {
		t.Errorf("Lookup of an unknown name: %v, want an error listing the names", err)
	}
}

// TestToolSchemaTypes: the XML formats' bare-text parameters take the
// types of the tool's schema.
func TestToolSchemaTypes(t *testing.T) {
	tools := []Tool{{Name: "f", Parameters: []byte(`{"type": "object", "properties": {
		"code": {"type": "string"}, "n": {"type": "integer"}, "opt": {"type": ["boolean", "null"]},
		"tags": {"type": "array", "items": {"type": "string"}}}}`)}}
	out := "<tool_call>\n<function=f>\n<parameter=code>\n42\n</parameter>\n<parameter=n>\n7\n</parameter>\n" +
		"<parameter=opt>\nnull\n</parameter>\n<parameter=tags>\n[\"a\"]\n</parameter>\n<parameter=free>\n8\n</parameter>\n</function>\n</tool_call>"
	for _, c := range []struct {
		tools []Tool
		want  string
	}{
		{tools, `{"code": "42", "n": 7, "opt": null, "tags": ["a"], "free": 8}`},
		{nil, `{"code": 42, "n": 7, "opt": null, "tags": ["a"], "free": 8}`},
	} {
		r := (&Parser{Format: Qwen3Coder, Tools: c.tools}).Parse(out)
		if len(r.Calls) != 1 || r.Calls[0].Arguments != c.want {
			t.Errorf("tools %v: calls %+v, want arguments %s", c.tools != nil, r.Calls, c.want)
		}
	}
	// a number parameter that is not a number stays text rather than failing
	r := (&Parser{Format: GLM45, Tools: tools}).Parse("<tool_call>f\n<arg_key>n</arg_key>\n<arg_value>seven</arg_value>\n</tool_call>")
	if len(r.Calls) != 1 || r.Calls[0].Arguments != `{"n": "seven"}` {
		t.Errorf("GLM with a wrong-typed value: %+v", r.Calls)
	}
}

// TestMarkers: every format lists its markers, and each block's opening
// marker is among them (or is plain text a tokenizer never holds whole).
func TestMarkers(t *testing.T) {
	for _, name := range Names() {
		f := Format(name)
		ms := f.Markers()
		if len(ms) == 0 {
			t.Errorf("%s: no markers", f)
		}
		for _, b := range f.def().blocks {
			if b.start == "{" || b.start == ";" || b.start == "<|call|>" || b.start == "<|return|>" || b.start == " to=" {
				continue // JSON at the start (llama3), gpt-oss's stop tokens end the text, its recipient is text
			}
			found := false
			for _, m := range ms {
				found = found || strings.HasPrefix(b.start, m)
			}
			if !found {
				t.Errorf("%s: block %q has no marker", f, b.start)
			}
		}
	}
}

// TestStreamLongBlocks: blocks past the rescan threshold (read again only
// as they grow) still add up to Parse's result.
func TestStreamLongBlocks(t *testing.T) {
	long := strings.Repeat("lorem ipsum ", 2000)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		f   Format
		out string
	}{
		{Hermes, "a <tool_call>{\"name\": \"w\", \"arguments\": {\"t\": \"" + long + "\"}}</tool_call> b <tool_call>{\"name\": \"x\"}</tool_call> c"},
		{Hermes, "<tool_call>{\"name\": \"w\", \"arguments\": {\"t\": \"" + long + "\"}}"}, // unclosed at the end
		{Llama3JSON, "<|python_tag|>" + long},
		{Mistral, "[TOOL_CALLS]w[ARGS]{\"t\": \"" + long + "\"}[TOOL_CALLS]x[ARGS]{}"},
	} {
		want := (&Parser{Format: c.f, NewID: counter()}).Parse(c.out)
		var chunks []string
		for s := c.out; s != ""; {
			n := min(len(s), 1+rng.IntN(8))
			chunks, s = append(chunks, s[:n]), s[n:]
		}
		sameResult(t, string(c.f), collect(t, &Parser{Format: c.f, NewID: counter()}, chunks), want)
		if len(want.Calls) == 0 {
			t.Errorf("%s: no calls in %.40q...", c.f, c.out)
		}
	}
}

func TestNoCalls(t *testing.T) {
	out := "<think>r</think>a <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"
	p := &Parser{Format: Hermes, NoCalls: true, NewID: counter()}
	want := Result{Reasoning: "r", Content: "a <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"}
	checkResult(t, p.Parse(out), want)
	sameResult(t, "stream", collect(t, p, strings.Split(out, "")), p.Parse(out))
}
