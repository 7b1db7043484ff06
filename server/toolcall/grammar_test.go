package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/grammar"
)

var grammarTools = []Tool{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {
		"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14},
		"unit": {"enum": ["C", "F"]}}, "required": ["city"], "additionalProperties": false}`)},
	{Name: "search", Parameters: json.RawMessage(`{"type": "object", "properties": {"q": {"type": "string"},
		"opts": {"$ref": "#/$defs/opts"}}, "required": ["q", "opts"],
		"$defs": {"opts": {"type": "object", "properties": {"limit": {"type": "integer"}}, "required": ["limit"]}}}`)},
	{Name: "now"}, // no parameters
}

// sample walks a grammar byte by byte at random (a vocabulary of the 256
// bytes and an end token), preferring to close strings and brackets so
// that the walk ends.
func sample(t *testing.T, g *grammar.Grammar, v *grammar.Vocab, rng *rand.Rand) string {
	t.Helper()
	m, err := g.NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]uint64, v.MaskWords())
	var out []byte
	for len(out) < 4000 {
		if m.CanEnd() && (rng.IntN(2) == 0 || len(out) > 300) {
			return string(out)
		}
		if err := m.Mask(mask); err != nil {
			t.Fatal(err)
		}
		var allowed, ascii, closing []byte
		for c := range 256 {
			if grammar.Allowed(mask, int32(c)) {
				allowed = append(allowed, byte(c))
				if c >= ' ' && c < 0x7f || c == '\n' {
					ascii = append(ascii, byte(c))
				}
				if strings.IndexByte(`"}]</`, byte(c)) >= 0 {
					closing = append(closing, byte(c))
				}
			}
		}
		if len(out) > 150 && rng.IntN(3) > 0 { // head for the end: closing bytes, none of the last two again
			if c, ok := closer(mask, out, rng); ok {
				if err := m.AcceptBytes([]byte{c}); err != nil {
					t.Fatal(err)
				}
				out = append(out, c)
				continue
			}
		}
		pick := allowed
		switch {
		case rng.IntN(4) == 0:
		case len(closing) > 0 && rng.IntN(3) == 0:
			pick = closing
		case len(ascii) > 0:
			pick = ascii
		}
		if len(pick) == 0 && m.CanEnd() {
			return string(out)
		}
		if len(pick) == 0 {
			t.Fatalf("the grammar allows nothing after %q", out)
		}
		c := pick[rng.IntN(len(pick))]
		if err := m.AcceptBytes([]byte{c}); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	t.Fatalf("no end after %q", out)
	return ""
}

// closer picks a byte that heads for the end: after "<" or "[" the second
// byte of a closing marker ("</", "<|", "<c", "[/"), else one of "\n<\"}][" the
// mask allows that is not one of the last two bytes of out.
func closer(mask []uint64, out []byte, rng *rand.Rand) (byte, bool) {
	b := []byte("\n<\"}][")
	rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	order := string(b)
	if c := out[len(out)-1]; c == '<' || c == '[' {
		second := []byte("/|c")
		rng.Shuffle(len(second), func(i, j int) { second[i], second[j] = second[j], second[i] })
		order = string(second) + order
	}
	for _, c := range []byte(order) {
		if grammar.Allowed(mask, int32(c)) && c != out[len(out)-1] && c != out[len(out)-2] {
			return c, true
		}
	}
	return 0, false
}

// byteVocab is a vocabulary of the 256 bytes and an end token "</s>".
func byteVocab(t *testing.T) *grammar.Vocab {
	t.Helper()
	pieces := make([][]byte, 257)
	for c := range 256 {
		pieces[c] = []byte{byte(c)}
	}
	pieces[256] = []byte("</s>")
	v, err := grammar.NewVocab(pieces, 256)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGrammarParses: every output of a format's tool-call grammar parses
// as calls of the offered tools, arguments valid JSON objects with the
// required keys; named: only that tool; not parallel: one call.
func TestGrammarParses(t *testing.T) {
	v := byteVocab(t)
	formats := []struct {
		f        Format
		template string
	}{{Mistral, "[ARGS]"}}
	for _, f := range append([]Format{Gemma4}, slices.Collect(maps.Keys(xmlShapes))...) {
		formats = append(formats, struct {
			f        Format
			template string
		}{f, ""})
	}
	for f := range shapes {
		formats = append(formats, struct {
			f        Format
			template string
		}{f, ""})
	}
	slices.SortFunc(formats, func(a, b struct {
		f        Format
		template string
	}) int {
		return strings.Compare(string(a.f)+a.template, string(b.f)+b.template)
	})
	required := map[string][]string{"get_weather": {"city"}, "search": {"q", "opts"}}
	reasoned := map[Format]int{}
	for _, fc := range formats {
		for _, name := range []string{"", "search"} {
			for k, parallel := range []bool{false, true} {
				open := k == 1 && name == "" // the prompt opened reasoning
				c := Calls{Tools: grammarTools, Name: name, Parallel: parallel, ReasoningOpen: open,
					Template: fc.template + " <think> [THINK] <|START_THINKING|>"} // the templates of reasoning models
				src, err := Grammar(fc.f, withGBNF(c))
				if err != nil {
					t.Fatalf("%s: %v", fc.f, err)
				}
				g, err := grammar.Compile(src)
				if err != nil {
					t.Fatalf("%s %q: %v\n%s", fc.f, fc.template, err, src)
				}
				rng := rand.New(rand.NewPCG(1, uint64(len(name))))
				p := &Parser{Format: fc.f, Tools: grammarTools, ReasoningOpen: open}
				multi := 0
				for range 12 {
					out := sample(t, g, v, rng)
					r := p.Parse(out)
					if r.Content != "" || len(r.Calls) == 0 {
						t.Fatalf("%s %q name %q: %q parses to %+v", fc.f, fc.template, name, out, r)
					}
					if r.Reasoning != "" {
						reasoned[fc.f]++
					}
					if len(r.Calls) > 1 {
						multi++
						if !parallel {
							t.Fatalf("%s: %d calls without parallel: %q", fc.f, len(r.Calls), out)
						}
					}
					for _, call := range r.Calls {
						var args map[string]json.RawMessage
						if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
							t.Fatalf("%s: arguments %q of %q: %v", fc.f, call.Arguments, out, err)
						}
						if name != "" && call.Name != name {
							t.Fatalf("%s: call of %q, want only %q: %q", fc.f, call.Name, name, out)
						}
						if u, ok := args["unit"]; ok && string(u) != `"C"` && string(u) != `"F"` {
							t.Fatalf("%s: unit %s: %q", fc.f, u, out)
						}
						var days int
						if d, ok := args["days"]; ok && (json.Unmarshal(d, &days) != nil || days < 1 || days > 14) {
							t.Fatalf("%s: days %s: %q", fc.f, d, out)
						}
						for _, k := range required[call.Name] {
							if _, ok := args[k]; !ok {
								t.Fatalf("%s: call of %q without %q: %q", fc.f, call.Name, k, out)
							}
						}
					}
				}
				if parallel && !shapes[fc.f].single && multi == 0 {
					t.Errorf("%s %q: no sample had parallel calls", fc.f, fc.template)
				}
			}
		}
	}
	for _, fc := range formats {
		if d := fc.f.def(); (d.think.open != "" || fc.f == OpenAI) && reasoned[fc.f] == 0 {
			t.Errorf("%s: no sample reasoned first", fc.f)
		}
	}
}

func TestGrammarErrors(t *testing.T) {
	for _, c := range []struct {
		f    Format
		c    Calls
		want string
	}{
		{Gemma4, Calls{Tools: []Tool{{Name: "f", Parameters: json.RawMessage(`{"type": "object", "properties": {"a": {"type": "tuple"}}}`)}}}, "tuple"},
		{None, Calls{Tools: grammarTools}, "no grammar"},
		{Hermes, Calls{Tools: grammarTools, Name: "nope"}, `no tool named "nope"`},
		{Hermes, Calls{}, "no tools"},
		{Hermes, Calls{Tools: []Tool{{Name: "f", Parameters: json.RawMessage(`{"type": "object", "properties": {"a": {"not": {"type": "string"}}}}`)}}}, "not"},
		{Hermes, Calls{Tools: []Tool{{Name: "a b"}}}, `tool "a b"`},
	} {
		_, err := Grammar(c.f, withGBNF(c.c))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: error %v, want one containing %q", c.f, c.c, err, c.want)
		}
	}
	_, err := Grammar(Hermes, withGBNF(Calls{Tools: []Tool{{Name: "f", Parameters: json.RawMessage(`{"type": "object", "patternProperties": {"a": {}}}`)}}}))
	var ue *grammar.UnsupportedError
	if !errors.As(err, &ue) {
		t.Errorf("an unsupported schema: error %v, want a *grammar.UnsupportedError", err)
	}
}

// TestGrammarReasoning: reasoning before the calls only where the template
// knows it, and closed first when the prompt opened it.
func TestGrammarReasoning(t *testing.T) {
	for _, c := range []struct {
		calls Calls
		want  string // in root's rule, "" for no reasoning
	}{
		{Calls{Tools: grammarTools}, ""},
		{Calls{Tools: grammarTools, Template: "{{ '<think>' }}"}, `root ::= ("<think>" think-text "</think>" think-space)?`},
		{Calls{Tools: grammarTools, ReasoningOpen: true}, `root ::= think-text "</think>" think-space call`},
	} {
		src, err := Grammar(Hermes, withGBNF(c.calls))
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" && strings.Contains(src, "think") || c.want != "" && !strings.Contains(src, c.want) {
			t.Errorf("%+v: grammar\n%s\nwant %q", c.calls, src, c.want)
		}
	}
}

// withGBNF gives c grammar's converter, as the server gives it the
// runtime's.
func withGBNF(c Calls) Calls {
	c.Converter = grammar.NewConverter(context.Background())
	return c
}

// xmlShapes are the formats that write parameters apart (XML tags, Python
// calls); shapes the others with a grammar but Gemma 4's, whose arguments
// are JSON.
var (
	xmlShapes = map[Format]bool{GLM45: true, LFM2: true, Qwen3Coder: true}
	shapes    = func() map[Format]callSyntax {
		m := map[Format]callSyntax{}
		for f, d := range formats {
			if d.calls != nil && !xmlShapes[f] && f != Gemma4 {
				m[f] = *d.calls("")
			}
		}
		return m
	}()
)

// TestGrammarEndsAfterCall: with parallel calls allowed, the output may
// end after its first whole call (tool_choice "required" must not force a
// model to chain calls until max_tokens): one call, sampled from the
// one-call grammar, leaves the parallel grammar able to end.
func TestGrammarEndsAfterCall(t *testing.T) {
	v := byteVocab(t)
	var formats []Format
	for f := range shapes {
		formats = append(formats, f)
	}
	formats = append(append(formats, Gemma4), slices.Collect(maps.Keys(xmlShapes))...)
	slices.Sort(formats)
	for _, f := range formats {
		compile := func(parallel bool) *grammar.Grammar {
			src, err := Grammar(f, withGBNF(Calls{Tools: grammarTools, Parallel: parallel, Template: "[ARGS]"}))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			g, err := grammar.Compile(src)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			return g
		}
		one, many := compile(false), compile(true)
		rng := rand.New(rand.NewPCG(2, 3))
		for range 4 {
			out := sample(t, one, v, rng)
			m, err := many.NewMatcher(v)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.AcceptBytes([]byte(out)); err != nil {
				t.Fatalf("%s: the parallel grammar refuses one call %q: %v", f, out, err)
			}
			if !m.CanEnd() {
				t.Errorf("%s: cannot end after one whole call %q", f, out)
			}
		}
	}
}
