package toolcall

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/grammar"
)

// FuzzParse: no output crashes a parser, and a stream fed the output in
// chunks (sizes drawn from split) adds up to Parse's result.
func FuzzParse(f *testing.F) {
	for _, fx := range fixtures {
		f.Add(string(fx.format), fx.in, []byte{3, 1, 7})
	}
	f.Add("openai", "<|start|><|channel|><|message|><|call|>", []byte{1})
	for _, hc := range harmonyCases {
		f.Add("openai", hc.in, []byte{5, 2, 11})
	}
	f.Add("mistral", "[TOOL_CALLS][TOOL_CALLS]a[CALL_ID][ARGS]", []byte{2})
	f.Fuzz(func(t *testing.T, name, text string, split []byte) {
		form, err := Lookup(name)
		if err != nil {
			form = Format(Names()[len(name)%len(Names())])
		}
		noCalls := len(split)%2 == 1
		for _, open := range []bool{false, true} {
			want := (&Parser{Format: form, ReasoningOpen: open, NoCalls: noCalls, NewID: counter()}).Parse(text)
			st := (&Parser{Format: form, ReasoningOpen: open, NoCalls: noCalls, NewID: counter()}).NewStream()
			var ds []Delta
			for i, s := 0, text; s != ""; i++ {
				n := 1
				if len(split) > 0 {
					n += int(split[i%len(split)]) % 16
				}
				n = min(n, len(s))
				ds, s = append(ds, st.Write(s[:n])...), s[n:]
			}
			ds = append(ds, st.Close()...)
			var got Result
			for _, d := range ds {
				got.Content += d.Content
				got.Reasoning += d.Reasoning
				if c := d.Call; c != nil {
					if c.ID != "" {
						got.Calls = append(got.Calls, Call{ID: c.ID, Name: c.Name})
					} else {
						got.Calls[c.Index].Arguments += c.Arguments
					}
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s open=%v: stream %+v, Parse %+v", form, open, got, want)
			}
		}
	})
}

// FuzzGrammar: no tool schema crashes Grammar or the compiler, and where
// the schema alone compiles, a JSON format's grammar of its calls does too
// (or is too complex: a 400 for the request).
func FuzzGrammar(f *testing.F) {
	for _, t := range grammarTools {
		f.Add(uint8(0), string(t.Parameters))
	}
	f.Add(uint8(1), `{"type": "object", "properties": {"a": {"type": ["object", "object", "array"], "properties": {"b": {"type": ["object", "object"]}}, "items": {"enum": [1, "x", null]}}}}`)
	f.Add(uint8(2), `{"properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}, "required": ["a", "a"]}`)
	formats := append([]Format{Gemma4, None}, slices.Sorted(maps.Keys(xmlShapes))...)
	formats = append(formats, slices.Sorted(maps.Keys(shapes))...)
	f.Fuzz(func(t *testing.T, which uint8, params string) {
		form := formats[int(which)%len(formats)]
		src, err := Grammar(form, withGBNF(Calls{Tools: []Tool{{Name: "f", Parameters: json.RawMessage(params)}}, Parallel: which&1 == 1}))
		if err != nil {
			return
		}
		_, err = grammar.Compile(src)
		if _, jsonShaped := shapes[form]; !jsonShaped || err == nil || errors.Is(err, grammar.ErrTooComplex) {
			return
		}
		if _, serr := grammar.FromJSONSchema([]byte(params)); serr == nil { // the schema alone compiles
			t.Fatalf("%s %q: the grammar does not compile: %v\n%s", form, params, err, src)
		}
	})
}
