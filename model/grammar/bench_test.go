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

// BenchmarkMask measures Mask + Accept per generated token under a JSON
// grammar on the 32000-token Llama 2 vocabulary, tokens picked uniformly
// among the allowed ones. warm reuses one Grammar (its automaton and mask
// cache persist, as for a cached grammar serving many requests); cold
// compiles the grammar anew for each document.
func BenchmarkMask(b *testing.B) {
	v := testVocab(b)
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			g, err := Compile(jsonGBNF)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			mask := make([]uint64, v.MaskWords())
			tokens := 0
			for b.Loop() {
				if mode == "cold" {
					g, _ = Compile(jsonGBNF)
				}
				_, n, _ := generate(b, g, v, r, 256, mask)
				tokens += n
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(tokens), "µs/token")
		})
	}
}
