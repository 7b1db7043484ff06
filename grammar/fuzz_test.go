package grammar

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// smallVocab is a vocabulary of all single bytes and some longer pieces,
// for fuzzing without model files.
func smallVocab(t testing.TB) *Vocab {
	pieces := make([][]byte, 0, 300)
	for b := range 256 {
		pieces = append(pieces, []byte{byte(b)})
	}
	for _, s := range []string{"</s>", "ab", "abc", "\"a\"", "{\"", "\":", "true", "null", "123", "é", "日本", "  ", "\n"} {
		pieces = append(pieces, []byte(s))
	}
	v, err := NewVocab(pieces, 256)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// exercise runs a compiled grammar a little: masks and a few accepted
// tokens, checking that an allowed token is accepted.
func exercise(t *testing.T, g *Grammar, v *Vocab) {
	m, err := g.NewMatcher(v)
	if err != nil {
		if !errors.Is(err, ErrTooComplex) {
			t.Fatalf("NewMatcher: %v", err)
		}
		return
	}
	mask := make([]uint64, v.MaskWords())
	for step := 0; step < 8 && !m.Done(); step++ {
		if err := m.Mask(mask); err != nil {
			if !errors.Is(err, ErrTooComplex) {
				t.Fatalf("Mask: %v", err)
			}
			return
		}
		tok := int32(-1)
		for id := int32(v.Size()) - 1; id >= 0; id-- { // prefer the longer pieces at the end
			if Allowed(mask, id) && !v.IsEOG(id) {
				tok = id
				break
			}
		}
		if tok < 0 {
			return
		}
		if err := m.Accept(tok); err != nil && !errors.Is(err, ErrTooComplex) {
			t.Fatalf("token %d (%q) allowed by the mask but Accept: %v", tok, v.Piece(tok), err)
		}
	}
}

// TestHostile compiles grammars built to be expensive: each must give an
// error or work.
func TestHostile(t *testing.T) {
	v := smallVocab(t)
	tests := []struct{ name, src string }{
		{"nested optional repetitions", `root ::= (("a"{0,2000}){0,2000}){0,2000}`},
		{"nested exact repetitions", `root ::= ((("a"{1000}){1000}){1000})`},
		{"many nullable alternatives", "root ::= " + strings.Repeat(`("a" | "") `, 3000)},
		{"wide alternatives", "root ::= " + strings.Repeat(`"x" | `, 50000) + `"y"`},
		{"deep rule chain", func() string {
			var b strings.Builder
			b.WriteString("root ::= r0\n")
			for i := range 20000 {
				b.WriteString("r" + itoa(i) + " ::= \"(\" r" + itoa(i+1) + " \")\" | \"x\"\n")
			}
			b.WriteString("r20000 ::= \"x\"\n")
			return b.String()
		}()},
		{"ambiguous", `root ::= ("a" | "a" "a" | "a" "a" "a")* "b"`},
		{"big class", `root ::= [^\x00]* [\U00010000-\U0010FFFF]+`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			g, err := Compile(tt.src)
			if err == nil {
				exercise(t, g, v)
			} else if !errors.Is(err, ErrTooComplex) {
				t.Logf("error: %v", err)
			}
			// No wall-time bound (the machine may be busy): the work of each
			// Compile, Mask and Accept is bounded (maxSymbols, maxWork), and a
			// hang is the test binary's timeout.
			t.Logf("%v, err %v", time.Since(start), err)
		})
	}
}

func FuzzCompile(f *testing.F) {
	fuzzBuild(f, []string{jsonGBNF, `root ::= "a"+ [b-d]* ("x" | "y"){2,5}`, `root ::= [^"\\]{0,3} .`, "root ::= a\na ::= \"(\" a \")\" | \"\""}, Compile)
}

func FuzzJSONSchema(f *testing.F) {
	fuzzBuild(f, testSchemas, func(schema string) (*Grammar, error) { return FromJSONSchema([]byte(schema)) })
}

func FuzzRegex(f *testing.F) {
	fuzzBuild(f, []string{`[a-z]+@[a-z]+\.com`, `(\d{1,3}\.){3}\d{1,3}`, `(?i)yes|no`, `\p{L}{2,4}`}, FromRegex)
}

// fuzzBuild fuzzes build from seeds: a grammar it builds must stand being
// exercised, and no input may take 2 minutes. The work of each Compile,
// Mask and Accept is bounded (maxSymbols, maxWork), so the bound is for a
// blow-up those miss, not a speed target: fuzz-short's workers share a
// busy machine's cores.
func fuzzBuild(f *testing.F, seeds []string, build func(string) (*Grammar, error)) {
	for _, s := range seeds {
		f.Add(s)
	}
	v := smallVocab(f)
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		g, err := build(src)
		if err == nil {
			exercise(t, g, v)
		}
		if d := time.Since(start); d > 2*time.Minute {
			t.Fatalf("%q took %v", src, d)
		}
	})
}
