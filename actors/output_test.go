package actors_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// TestOutputStream sends into a stream nobody reads yet, then reads it:
// send never blocks, every chunk arrives once and in order, the stream is
// closed after the Done chunk, and done is closed when that chunk is sent,
// not when it is read. Readers of several speeds are covered: none until
// the end, one as fast as the sender, one that lags.
func TestOutputStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int           // choices (the channel's room)
		chunks int           // before the Done chunk
		lag    time.Duration // the reader's pause every 100 chunks; < 0: it reads only after the last send
	}{
		{"no reader", 4, 20000, -1},
		{"fast reader", 1, 20000, 0},
		{"slow reader", 128, 5000, time.Millisecond},
		{"only done", 1, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			ch, sink, done := actors.NewOutputStream(tc.n)
			got := make(chan []int, 1)
			read := func() {
				var idx []int
				for c := range ch {
					idx = append(idx, c.Index)
					if tc.lag > 0 && len(idx)%100 == 0 {
						time.Sleep(tc.lag)
					}
				}
				got <- idx
			}
			if tc.lag >= 0 {
				go read()
			}
			sent := make(chan struct{})
			go func() {
				for i := range tc.chunks {
					sink(&messages.OutputChunk{Index: i})
				}
				sink(&messages.OutputChunk{Index: -1, Done: true})
				close(sent)
			}()
			select {
			case <-sent:
			case <-time.After(gateWait):
				t.Fatal("send blocked")
			}
			select {
			case <-done:
			default:
				t.Fatal("done not closed after the Done chunk was sent")
			}
			if tc.lag < 0 {
				go read()
			}
			idx := <-got
			if len(idx) != tc.chunks+1 || idx[tc.chunks] != -1 {
				t.Fatalf("read %d chunks, want %d and the Done chunk last", len(idx), tc.chunks+1)
			}
			for i := range tc.chunks {
				if idx[i] != i {
					t.Fatalf("chunk %d read as the %dth", idx[i], i)
				}
			}
		})
	}
}

// longContextModel returns stories260K with its context length raised to
// ctxLen (written to a temporary file): a model whose default max_tokens,
// the rest of the context, is large.
func longContextModel(t *testing.T, ctxLen int) *model.Model {
	t.Helper()
	path := synthtest.Edit(t, "stories260K.gguf", "stories260K-long.gguf", func(k string, v any) any {
		if k == "llama.context_length" {
			return uint32(ctxLen)
		}
		return v
	})
	m := reftest.Open(t, path)
	if m.Config.ContextLen != ctxLen {
		t.Fatalf("context length %d, want %d", m.Config.ContextLen, ctxLen)
	}
	return m
}

// TestRequestMemory runs many n=128 requests with the default max_tokens
// (the rest of a 131072-token context) at once, their output not read: the
// heap they take must follow what they produced, not the n × max_tokens
// chunks they could produce (an output channel sized for those is 128 MiB
// per request).
func TestRequestMemory(t *testing.T) {
	const ctxLen, requests, n = 131072, 16, actors.MaxN
	m := longContextModel(t, ctxLen)
	rt := start(t, m, actors.Config{NumBlocks: ctxLen / 16, BlockSize: 16})
	prompt, err := rt.Tokenize("Once upon a time")
	if err != nil {
		t.Fatal(err)
	}
	reservation := uint64(requests) * n * uint64(ctxLen-len(prompt)) * 8 // the chunk pointers a sized channel holds

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	chans := make([]<-chan *messages.OutputChunk, requests)
	for i := range chans {
		req := &messages.GenerateRequest{Prompt: prompt, N: n, Sampling: messages.SamplingParams{Temperature: 1}}
		if chans[i], err = rt.Stream(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// Let tokens flow, unread: what is produced is queued.
	var st *messages.Stats
	for deadline := time.Now().Add(gateWait); ; time.Sleep(10 * time.Millisecond) {
		if st, err = rt.Stats(timeout); err != nil {
			t.Fatal(err)
		}
		if st.Steps >= 16 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d steps in %v", st.Steps, gateWait)
		}
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d requests of n=%d, %d steps of %d tokens: %.1f MiB allocated, heap +%.1f MiB; sized channels would reserve %.0f MiB",
		requests, n, st.Steps, st.StepTokens, float64(allocated)/(1<<20), float64(heap)/(1<<20), float64(reservation)/(1<<20))
	if limit := reservation / 32; allocated > limit {
		t.Errorf("%d bytes allocated while the requests ran; want at most %d (1/32 of a reservation for max_tokens)", allocated, limit)
	}
	cancel()
	for _, ch := range chans {
		for range ch {
		}
	}
}
