package toolcall

import (
	"reflect"
	"testing"
)

// FuzzParse: no output crashes a parser, and a stream fed the output in
// chunks (sizes drawn from split) adds up to Parse's result.
func FuzzParse(f *testing.F) {
	for _, fx := range fixtures {
		f.Add(string(fx.format), fx.in, []byte{3, 1, 7})
	}
	f.Add("openai", "<|start|><|channel|><|message|><|call|>", []byte{1})
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
