package actors_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/model"
)

// embedRef reads one of model's embedding references (scripts/embed-ref.sh),
// and its inputs' tokens.
func embedRef(t *testing.T, name string) (inputs []reftest.EmbedInput, tokens [][]int32) {
	t.Helper()
	inputs = reftest.EmbedInputs(t, name)
	for _, in := range inputs {
		tokens = append(tokens, in.Tokens)
	}
	return inputs, tokens
}

// mixRecorder is the CPU backend, counting the steps in which embedding
// rows and generation rows ran together. While gate is open (not closed),
// every forward pass waits for it, so a test can queue work before the
// first step runs.
type mixRecorder struct {
	*backend.CPU
	mixed atomic.Int64
	gate  chan struct{}
}

func (r *mixRecorder) Forward(b *model.Batch, logits []float32) error {
	<-r.gate
	return r.CPU.Forward(b, logits)
}

func (r *mixRecorder) ForwardHidden(b *model.Batch, logits, hidden []float32) error {
	<-r.gate
	if slices.Contains(b.Hidden, false) {
		r.mixed.Add(1)
	}
	return r.CPU.ForwardHidden(b, logits, hidden)
}

// TestEmbedRuntime checks Runtime.Embed against llama-embedding's
// references, and that an embedding is the same bit for bit alone, beside
// generation in the same steps (small token budget: chunked), and again
// once its prefix is cached.
func TestEmbedRuntime(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	for _, pool := range []model.Pooling{model.PoolingMean, model.PoolingLast, model.PoolingCLS} {
		t.Run(pool.String(), func(t *testing.T) {
			ref, tokens := embedRef(t, "stories260K-"+pool.String())
			opts := actors.EmbedOptions{Pooling: pool}
			rt := start(t, m, actors.Config{})
			alone := make([][]float32, len(tokens))
			for i, in := range tokens {
				got, usage, err := rt.Embed(context.Background(), [][]int32{in}, opts)
				if err != nil {
					t.Fatal(err)
				}
				if usage.PromptTokens != len(in) {
					t.Errorf("usage %+v, want %d prompt tokens", usage, len(in))
				}
				alone[i] = got[0]
				if c := reftest.Cosine(got[0], ref[i].Embedding); !(c >= 0.9999) {
					t.Errorf("input %d: cosine %.6f with llama-embedding, want >= 0.9999", i, c)
				}
			}

			cpu, err := backend.NewCPU(m, 64, 16, 0, 2)
			if err != nil {
				t.Fatal(err)
			}
			rec := &mixRecorder{CPU: cpu, gate: make(chan struct{})}
			rt2 := start(t, m, actors.Config{Backends: []actors.Backend{rec}, MaxNumBatchedTokens: 24})
			t.Cleanup(func() { // runs before rt2 stops: a failed wait leaves no step blocked
				select {
				case <-rec.gate:
				default:
					close(rec.gate)
				}
			})
			cases := loadCases(t, "stories260K")
			for round := range 2 { // the second time, the prefixes are cached
				var wg sync.WaitGroup
				for _, c := range cases {
					wg.Go(func() { run(t, rt2, greedy(c.PromptIDs, 24)) })
				}
				var got [][]float32
				wg.Go(func() {
					var err error
					if got, _, err = rt2.Embed(context.Background(), tokens, opts); err != nil {
						t.Error(err)
					}
				})
				if round == 0 { // every sequence is queued before the first step runs
					waitQueued(t, rt2, len(cases)+len(tokens))
					close(rec.gate)
				}
				wg.Wait()
				for i := range got {
					if !slices.Equal(got[i], alone[i]) {
						t.Errorf("round %d, input %d: batched embedding differs from alone (cosine %.9f)", round, i, reftest.Cosine(got[i], alone[i]))
					}
				}
			}
			if rec.mixed.Load() == 0 {
				t.Error("no step mixed embedding and generation rows")
			}
		})
	}
}

// waitQueued polls rt's scheduler until n sequences wait or run.
func waitQueued(t *testing.T, rt *actors.Runtime, n int) {
	t.Helper()
	for deadline := time.Now().Add(gateWait); ; time.Sleep(time.Millisecond) {
		st := stats(t, rt)
		if st.Waiting+st.Running >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sequences queued after %v, want %d", st.Waiting+st.Running, gateWait, n)
		}
	}
}

func TestEmbedErrors(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	rt := start(t, m, actors.Config{MaxModelLen: 64})
	long := make([]int32, 65)
	for _, tc := range []struct {
		name   string
		inputs [][]int32
		opts   actors.EmbedOptions
	}{
		{"no inputs", nil, actors.EmbedOptions{}},
		{"empty input", [][]int32{{1, 2}, {}}, actors.EmbedOptions{}},
		{"longer than the context", [][]int32{long}, actors.EmbedOptions{}},
		{"id outside the vocabulary", [][]int32{{1, 100000}}, actors.EmbedOptions{}},
		{"rank pooling", [][]int32{{1, 2}}, actors.EmbedOptions{Pooling: model.PoolingRank}},
	} {
		if _, _, err := rt.Embed(context.Background(), tc.inputs, tc.opts); !errors.Is(err, actors.ErrInvalidRequest) {
			t.Errorf("%s: error %v, want ErrInvalidRequest", tc.name, err)
		}
	}
	full := make([]int32, 64) // fills the context: nothing is generated after it
	for i := range full {
		full[i] = int32(1 + i)
	}
	if _, _, err := rt.Embed(context.Background(), [][]int32{full}, actors.EmbedOptions{}); err != nil {
		t.Errorf("an input filling the context: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := rt.Embed(ctx, [][]int32{{1, 2, 3}}, actors.EmbedOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v, want context.Canceled", err)
	}
}

// noHidden is a backend that cannot compute hidden states.
type noHidden struct{ actors.Backend }

func TestEmbedUnsupportedBackend(t *testing.T) {
	m := openModel(t, "stories260K.gguf")
	cpu, err := backend.NewCPU(m, 64, 16, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	rt := start(t, m, actors.Config{Backends: []actors.Backend{noHidden{cpu}}})
	if _, _, err := rt.Embed(context.Background(), [][]int32{{1, 2}}, actors.EmbedOptions{}); !errors.Is(err, actors.ErrNoEmbeddings) {
		t.Errorf("error %v, want ErrNoEmbeddings", err)
	}
}

// synthEncoder writes the F16 encoder of shape (seed 1, the bge
// vocabulary: scripts/embed-ref.sh's) into a temporary directory and opens it.
func synthEncoder(t *testing.T, shape string) *model.Model {
	t.Helper()
	return reftest.Open(t, synthtest.Write(t, shape, "F16", "vocab/ggml-vocab-bert-bge.gguf", 1))
}

// TestEmbedEncoder serves a BERT encoder: its tokenizer and embeddings
// match llama.cpp's, each input runs whole (never chunked) and the same
// beside others, an input past the step budget and any generation are
// refused.
func TestEmbedEncoder(t *testing.T) {
	noLeaks(t)
	m := synthEncoder(t, "bert-tiny")
	ref, inputs := embedRef(t, "bert-tiny-F16-cls")
	rt := start(t, m, actors.Config{MaxNumBatchedTokens: 40})
	for i, in := range ref {
		ids, err := rt.Tokenize(in.Text)
		if err != nil || !slices.Equal(ids, in.Tokens) {
			t.Errorf("input %d: tokens %v (%v), llama-tokenize %v", i, ids, err, in.Tokens)
		}
	}
	alone := make([][]float32, len(inputs))
	for i, in := range inputs {
		got, _, err := rt.Embed(context.Background(), [][]int32{in}, actors.EmbedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = got[0]
		if c := reftest.Cosine(got[0], ref[i].Embedding); !(c >= 0.9999) {
			t.Errorf("input %d: cosine %.6f with llama-embedding, want >= 0.9999", i, c)
		}
	}
	var wg sync.WaitGroup
	for range 3 { // together they exceed a step's 40 tokens: some wait for the next step
		wg.Go(func() {
			got, _, err := rt.Embed(context.Background(), inputs, actors.EmbedOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			for i := range got {
				if !slices.Equal(got[i], alone[i]) {
					t.Errorf("input %d: batched embedding differs from alone", i)
				}
			}
		})
	}
	wg.Wait()
	if _, _, err := rt.Embed(context.Background(), [][]int32{make([]int32, 41)}, actors.EmbedOptions{}); !errors.Is(err, actors.ErrInvalidRequest) {
		t.Errorf("input past the step budget: error %v, want ErrInvalidRequest", err)
	}
	if _, err := rt.Stream(context.Background(), greedy(inputs[0], 4)); !errors.Is(err, actors.ErrInvalidRequest) {
		t.Errorf("generation on an encoder: error %v, want ErrInvalidRequest", err)
	}
}
