package tokenizer

import (
	"strings"
	"testing"
)

const benchText = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. " +
	"One day, she saw a big, red ball. She wanted to play with it, but it was too high. Cửa Việt 🦙.cpp\n"

func benchmarkEncode(b *testing.B, rel string) {
	benchEncode(b, loadTokenizer(b, rel), strings.Repeat(benchText, 16), true)
}

// benchEncode measures tok's Encode of text, in bytes and tokens a second.
func benchEncode(b *testing.B, tok *Tokenizer, text string, addSpecial bool) {
	b.SetBytes(int64(len(text)))
	n := 0
	for b.Loop() {
		ids, _ := tok.Encode(text, addSpecial, false)
		n += len(ids)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tok/s")
}

func BenchmarkEncodeSPM(b *testing.B) { benchmarkEncode(b, "vocab/ggml-vocab-llama-spm.gguf") }
func BenchmarkEncodeWPM(b *testing.B) { benchmarkEncode(b, "vocab/ggml-vocab-bert-bge.gguf") }

func BenchmarkDecoder(b *testing.B) {
	tok := loadTokenizer(b, "vocab/ggml-vocab-llama-spm.gguf")
	ids, _ := tok.Encode(strings.Repeat(benchText, 16), false, false)
	d := NewDecoder(tok)
	for b.Loop() {
		for _, id := range ids {
			d.Add(id)
		}
		d.Flush()
	}
	b.ReportMetric(float64(len(ids)*b.N)/b.Elapsed().Seconds(), "tok/s")
}
