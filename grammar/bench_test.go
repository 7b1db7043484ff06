package grammar

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// pick returns a token chosen uniformly among the mask's set bits, or -1.
func pick(mask []uint64, r *rand.Rand) int32 {
	n := 0
	for _, w := range mask {
		n += bits.OnesCount64(w)
	}
	if n == 0 {
		return -1
	}
	k := r.IntN(n)
	for i, w := range mask {
		c := bits.OnesCount64(w)
		if k < c {
			for ; ; k-- {
				b := bits.TrailingZeros64(w)
				if k == 0 {
					return int32(i*64 + b)
				}
				w &^= 1 << b
			}
		}
		k -= c
	}
	return -1
}

// generate samples up to maxTokens tokens uniformly among those allowed,
// stopping at an end-of-generation token; it returns the text and whether
// the grammar ended.
func generate(tb testing.TB, g *Grammar, v *Vocab, r *rand.Rand, maxTokens int, mask []uint64) (string, int, bool) {
	m, err := g.NewMatcher(v)
	if err != nil {
		tb.Fatal(err)
	}
	var out []byte
	for n := range maxTokens {
		if err := m.Mask(mask); err != nil {
			tb.Fatal(err)
		}
		tok := pick(mask, r)
		if tok < 0 {
			tb.Fatalf("no token allowed after %q", out)
		}
		if err := m.Accept(tok); err != nil {
			tb.Fatalf("after %q: token %d (%q) from the mask: %v", out, tok, v.Piece(tok), err)
		}
		if v.IsEOG(tok) {
			return string(out), n + 1, true
		}
		out = append(out, v.Piece(tok)...)
	}
	return string(out), maxTokens, false
}

// BenchmarkMask measures Mask + Accept per generated token, tokens picked
// uniformly among the allowed ones, on the 32000-token Llama 2 vocabulary
// and the 102400-token DeepSeek LLM one (byte-level BPE), under a JSON
// grammar and under a JSON schema. warm reuses one Grammar (its automaton
// and mask cache persist, as for a cached grammar serving many requests);
// cold compiles the grammar anew for each document, compile included.
func BenchmarkMask(b *testing.B) {
	sources := []struct{ name, src string }{
		{"json", jsonGBNF},
		{"schema", mustGBNF(b, testSchemas[len(testSchemas)-2])},
	}
	for _, voc := range []struct{ name, rel string }{
		{"llama32k", "vocab/ggml-vocab-llama-spm.gguf"},
		{"deepseek102k", "vocab/ggml-vocab-deepseek-llm.gguf"},
	} {
		v := vocabAt(b, voc.rel)
		for _, src := range sources {
			for _, mode := range []string{"warm", "cold"} {
				b.Run(voc.name+"/"+src.name+"/"+mode, func(b *testing.B) {
					g, err := Compile(src.src)
					if err != nil {
						b.Fatal(err)
					}
					r := rand.New(rand.NewPCG(1, 2))
					mask := make([]uint64, v.MaskWords())
					tokens := 0
					for b.Loop() {
						if mode == "cold" {
							g, _ = Compile(src.src)
						}
						_, n, _ := generate(b, g, v, r, 256, mask)
						tokens += n
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(tokens), "µs/token")
				})
			}
		}
	}
}

func mustGBNF(b *testing.B, schema string) string {
	src, err := JSONSchemaGBNF([]byte(schema))
	if err != nil {
		b.Fatal(err)
	}
	return src
}
