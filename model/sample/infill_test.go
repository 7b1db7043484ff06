package sample

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model/gguf"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

// infillVocabOf loads a GGUF vocabulary from the test models as the
// runtime builds the infill sampler's: pieces without special text, the
// EOT token or else EOS.
func infillVocabOf(t *testing.T, rel string) *InfillVocab {
	t.Helper()
	f, err := gguf.Open(testmodels.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	eot := tok.EOT()
	if eot < 0 {
		eot = tok.EOS()
	}
	return NewInfillVocab(tok.VocabSize(), func(id int32) []byte { return tok.TokenPiece(id, false) }, tok.IsEOG, eot)
}

// TestInfillMatchesLlamaCpp: on deepseek-coder's vocabulary, the infill
// sampler after top-p 0.95 (keep0), and after top-k 40 and top-p 0.9
// (keep1, llama.vim's chain), keeps the tokens llama.cpp b10573 keeps, in
// its order. testdata/infill-deepseek-coder.txt was printed by a C++
// program linked against libllama: 80 cases of a family of tokens sharing
// a prefix, other tokens and sometimes EOT/EOS, with distinct logits (every
// other token -30).
func TestInfillMatchesLlamaCpp(t *testing.T) {
	v := infillVocabOf(t, "vocab/ggml-vocab-deepseek-coder.gguf")
	n := len(v.eog)
	f, err := os.Open("testdata/infill-deepseek-coder.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var logits []float32
	cases, merged := 0, 0
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		switch kind := fields[0]; kind {
		case "case":
			logits = make([]float32, n)
			for i := range logits {
				logits[i] = -30
			}
			for _, kv := range fields[1:] {
				id, l, _ := strings.Cut(kv, ":")
				i, _ := strconv.Atoi(id)
				x, err := strconv.ParseFloat(l, 32)
				if err != nil {
					t.Fatalf("line %d: %v", line, err)
				}
				logits[i] = float32(x)
			}
		case "keep0", "keep1":
			p := Params{Temperature: 1, TopP: 0.95, Infill: v}
			if kind == "keep1" {
				p.TopK, p.TopP = 40, 0.9
			}
			s := mustNew(t, p)
			var got []string
			for _, c := range s.chainTruncate(logits) {
				got = append(got, strconv.Itoa(int(c.id)))
			}
			if want := fields[1:]; !slices.Equal(got, want) {
				t.Errorf("line %d (%s): kept %v, want %v", line, kind, got, want)
			}
			// Without the merge, some cases must come out otherwise, or the
			// test would not check it.
			if noMerge := infillNoMerge(s, logits); !slices.Equal(noMerge, fields[1:]) {
				merged++
			}
			cases++
		}
	}
	if cases != 160 || merged == 0 {
		t.Errorf("%d cases, %d where merging tokens mattered; want 160 and some", cases, merged)
	}
	t.Logf("%d cases, %d where merging tokens mattered", cases, merged)
}

// infillNoMerge is the test's control: the survivors of the infill
// sampler with no token merged into another.
func infillNoMerge(s *Sampler, logits []float32) []string {
	v := *s.p.Infill
	v.text, v.off = nil, make([]int32, len(v.off)) // every piece empty: nothing merges
	p := s.p
	p.Infill = &v
	s2, _ := New(p)
	var out []string
	for _, c := range s2.chainTruncate(logits) {
		out = append(out, strconv.Itoa(int(c.id)))
	}
	return out
}
