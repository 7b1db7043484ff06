package actors

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/sample"
)

// vocabOnly is a Backend that only tells its vocabulary size.
type vocabOnly struct {
	Backend
	n int
}

func (v vocabOnly) VocabSize() int { return v.n }

// BenchmarkSampleMasked is the device's sampling of a 16-row decode step
// over a 32000-token vocabulary, greedy and at temperature 1, without a
// grammar mask and with one (sparse: 1% of the tokens allowed, as between
// JSON values; dense: 97%, as inside a JSON string): what a grammar adds
// to a step on the device.
func BenchmarkSampleMasked(b *testing.B) {
	const rows, vocab = 16, 32000
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, rows*vocab)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	masks := map[string][]uint64{"none": nil}
	for name, p := range map[string]float64{"sparse": 0.01, "dense": 0.97} {
		m := make([]uint64, (vocab+63)/64)
		for i := range vocab {
			if r.Float64() < p {
				m[i/64] |= 1 << (i % 64)
			}
		}
		masks[name] = m
	}
	for _, temp := range []float32{0, 1} {
		for _, name := range []string{"none", "sparse", "dense"} {
			b.Run(fmt.Sprintf("temp%g/%s", temp, name), func(b *testing.B) {
				d := &device{backend: vocabOnly{n: vocab}, samplers: map[uint64]*sample.Sampler{}}
				step := &messages.Step{}
				for i := range rows {
					step.Samples = append(step.Samples, messages.SampleSpec{SeqID: uint64(i),
						Params: &messages.SamplingParams{Temperature: temp, Seed: uint64(i), HasSeed: true}, Mask: masks[name]})
				}
				d.logits = make([]float32, len(logits))
				for b.Loop() {
					copy(d.logits, logits)
					if _, errs := d.sample(step); errs != nil {
						b.Fatal(errs)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/step")
			})
		}
	}
}
