package grammar

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model/gguf"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

// loadVocab reads a GGUF vocabulary as the matcher sees it: control and
// unknown tokens have no bytes, EOS ends generation.
func loadVocab(rel string) (*Vocab, error) {
	f, err := gguf.Open(testmodels.Lookup() + "/" + rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tok, err := tokenizer.FromFile(f)
	if err != nil {
		return nil, err
	}
	pieces := make([][]byte, tok.VocabSize())
	for i := range pieces {
		pieces[i] = slices.Clone(tok.TokenPiece(int32(i), false))
	}
	return NewVocab(pieces, tok.EOS())
}

var vocabs sync.Map // rel -> func() (*Vocab, error)

// vocabAt returns the vocabulary of a GGUF under the test models, loaded
// once, or ends the test when the file is missing.
func vocabAt(t testing.TB, rel string) *Vocab {
	t.Helper()
	testmodels.Path(t, rel)
	load, _ := vocabs.LoadOrStore(rel, sync.OnceValues(func() (*Vocab, error) { return loadVocab(rel) }))
	v, err := load.(func() (*Vocab, error))()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// testVocab returns the 32000-token Llama 2 vocabulary (SentencePiece, with
// byte tokens), or ends the test when the file is missing.
func testVocab(t testing.TB) *Vocab { return vocabAt(t, "vocab/ggml-vocab-llama-spm.gguf") }

// bruteMask is the mask by definition: every token tried on a clone.
func bruteMask(t testing.TB, m *Matcher, v *Vocab) []uint64 {
	dst := make([]uint64, v.MaskWords())
	for id := range int32(v.Size()) {
		c := m.Clone()
		if c.Accept(id) == nil {
			dst[id>>6] |= 1 << (id & 63)
		}
	}
	return dst
}

// maskCase is a grammar and a text it accepts.
type maskCase struct{ name, src, text string }

// checkMaskCases compiles each case's grammar and checks its masks along
// its text (checkMasks, at every every-th byte).
func checkMaskCases(t *testing.T, v *Vocab, every int, tests []maskCase) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			checkMasks(t, g, v, tt.text, every)
		})
	}
}

func checkMasks(t *testing.T, g *Grammar, v *Vocab, text string, every int) {
	t.Helper()
	m, err := g.NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]uint64, v.MaskWords())
	for i := 0; i <= len(text); i++ {
		if i%every == 0 || i == len(text) {
			if err := m.Mask(got); err != nil {
				t.Fatal(err)
			}
			want := bruteMask(t, m, v)
			if !slices.Equal(got, want) {
				n := 0
				for w := range got {
					n += bits.OnesCount64(got[w] ^ want[w])
				}
				t.Fatalf("after %q: mask differs from brute force in %d tokens", text[:i], n)
			}
		}
		if i < len(text) {
			if err := m.AcceptBytes([]byte{text[i]}); err != nil {
				t.Fatalf("after %q: %v", text[:i], err)
			}
		}
	}
}

func TestMaskSmallVocab(t *testing.T) {
	pieces := [][]byte{nil, []byte("a"), []byte("ab"), []byte("abc"), []byte("b"), []byte("ab"), []byte("\xc3"), []byte("\xa9"), []byte("é"), []byte("é!"), []byte("</s>"), []byte(""), []byte("!"), []byte("bb")}
	v, err := NewVocab(pieces, 10)
	if err != nil {
		t.Fatal(err)
	}
	tests := []maskCase{
		{"ab", `root ::= "a" "b"+ "c"?`, "abbc"},
		{"utf8", `root ::= [^a]+ "!"`, "é!é!"},
		{"end", `root ::= "ab" | "abc"`, "abc"},
	}
	checkMaskCases(t, v, 1, tests)
	g, _ := Compile(`root ::= "ab"`)
	m, _ := g.NewMatcher(v)
	mask := make([]uint64, 1)
	m.Mask(mask)
	if want := uint64(1<<1 | 1<<2 | 1<<5); mask[0] != want {
		t.Fatalf("mask %b, want %b (a and both ab tokens)", mask[0], want)
	}
	if err := m.Accept(5); err != nil {
		t.Fatal(err)
	}
	m.Mask(mask)
	if mask[0] != 1<<10 || !m.CanEnd() || !m.Done() {
		t.Fatalf("after ab: mask %b, CanEnd %v, Done %v; want only EOS", mask[0], m.CanEnd(), m.Done())
	}
	logits := make([]float32, len(pieces))
	MaskLogits(logits, mask)
	for i, l := range logits {
		if (l == 0) != (i == 10) {
			t.Fatalf("MaskLogits: logit %d is %v with mask %b", i, l, mask[0])
		}
	}
	if err := m.Accept(10); err != nil || !m.Done() {
		t.Fatalf("EOS: %v, Done %v", err, m.Done())
	}
}

func TestMaskLlamaVocab(t *testing.T) {
	v := testVocab(t)
	tests := []maskCase{
		{"json", jsonGBNF, `{"name": "Zoë", "tags": ["a\n", 12, -3.5e2, true], "x": {}}`},
		{"unicode", `root ::= [α-ω]+ " " [😀-😏]`, "λμ 😃"},
		{"digits", `root ::= [0-9]{1,3} ("," [0-9]{3})*`, "12,345,678"},
	}
	checkMaskCases(t, v, 3, tests)
}

// TestAutomatonReset runs matchers on a grammar whose shared automaton is
// kept tiny, so it is reset many times: masks must stay right (matchers
// replay their input) and a state that alone is past the limit is an error.
func TestAutomatonReset(t *testing.T) {
	v := testVocab(t)
	g, err := Compile(jsonGBNF)
	if err != nil {
		t.Fatal(err)
	}
	g.m.limitStates, g.m.limitNodes = 100, 1000
	other, _ := g.NewMatcher(v)
	if err := other.AcceptBytes([]byte(`{"a": [`)); err != nil {
		t.Fatal(err)
	}
	checkMasks(t, g, v, `{"name": "Zoë", "tags": ["a\n", 12, -3.5e2, true], "x": {"y": [[]]}}`, 5)
	if g.m.gen < 1 {
		t.Fatalf("automaton reset %d times; the test needs resets", g.m.gen)
	}
	if err := other.AcceptBytes([]byte(`1, {"b": null}]}`)); err != nil || !other.CanEnd() {
		t.Fatalf("a matcher across resets: %v, CanEnd %v", err, other.CanEnd())
	}
	t.Logf("%d resets", g.m.gen)
	deep, _ := g.NewMatcher(v)
	err = deep.AcceptBytes([]byte(`{"a": ` + strings.Repeat(`[`, 300)))
	if !errors.Is(err, ErrTooComplex) {
		t.Fatalf("a state past the limit: %v, want ErrTooComplex", err)
	}
}

// TestMaskByteLevelBPE checks masks against brute force on a byte-level
// BPE vocabulary of 102400 tokens (DeepSeek LLM), whose pieces split UTF-8.
func TestMaskByteLevelBPE(t *testing.T) {
	v := vocabAt(t, "vocab/ggml-vocab-deepseek-llm.gguf")
	g, err := FromJSONSchema([]byte(testSchemas[len(testSchemas)-2]))
	if err != nil {
		t.Fatal(err)
	}
	checkMasks(t, g, v, `{"name": "Zoë 日本", "emails": ["a.b@c.de"], "address": null, "role": "user"}`, 9)
}

// TestMaskLogits: every logit whose bit is clear becomes -Inf and every
// other keeps its value, over masks of whole, empty and mixed words and a
// row that ends inside a word.
func TestMaskLogits(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 200} {
		for seed := range uint64(4) {
			r := rand.New(rand.NewPCG(seed, uint64(n)))
			mask := make([]uint64, (n+63)/64)
			for i := range mask {
				switch r.IntN(3) {
				case 0:
					mask[i] = ^uint64(0)
				case 1:
					mask[i] = 0
				default:
					mask[i] = r.Uint64()
				}
			}
			logits := make([]float32, n)
			for i := range logits {
				logits[i] = float32(i) + 0.5
			}
			MaskLogits(logits, mask)
			for i, l := range logits {
				allowed := mask[i/64]&(1<<(i%64)) != 0
				if allowed != Allowed(mask, int32(i)) || (allowed && l != float32(i)+0.5) || (!allowed && !math.IsInf(float64(l), -1)) {
					t.Fatalf("n %d seed %d: logit %d is %v, allowed %v", n, seed, i, l, allowed)
				}
			}
		}
	}
}

// BenchmarkMaskLogits masks a 32000-token row with a sparse mask (a few
// hundred tokens allowed, as inside a JSON structure) and a dense one (a
// JSON string's contents).
func BenchmarkMaskLogits(b *testing.B) {
	logits := make([]float32, 32000)
	for _, tc := range []struct {
		name string
		p    float64 // chance a token is allowed
	}{{"sparse", 0.01}, {"dense", 0.97}} {
		b.Run(tc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			mask := make([]uint64, 500)
			for i := range 32000 {
				if r.Float64() < tc.p {
					mask[i/64] |= 1 << (i % 64)
				}
			}
			for b.Loop() {
				MaskLogits(logits, mask)
			}
		})
	}
}
