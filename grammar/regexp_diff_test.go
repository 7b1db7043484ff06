package grammar

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// TestRegexDifferential compares FromRegex with Go's regexp on random
// strings: full matches must agree, nullable repetitions included.
func TestRegexDifferential(t *testing.T) {
	patterns := []string{
		`(a?)*b`, `(a*)*`, `(a|b?)+c?`, `((ab)*|c)*`, `(a?b?)*c`, `[ab]{2,4}(c|)*`,
		`a(b|c)*?d?`, `(x*y*)*z`, `(?:a|ab)(c|bcd)(d*)`, `[^a]b{0,3}`, `(a{0,2}b?){1,3}`,
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range patterns {
		g, err := FromRegex(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		re := regexp.MustCompile(`^(?:` + p + `)$`)
		for range 3000 {
			b := make([]byte, r.IntN(9))
			for i := range b {
				b[i] = "abcdxyz"[r.IntN(7)]
			}
			got := matchesWhole(g, b)
			if want := re.Match(b); got != want {
				t.Fatalf("%s on %q: grammar %v, regexp %v", p, b, got, want)
			}
		}
	}
}
