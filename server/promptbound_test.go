package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/server"
)

// floodBody is a /tokenize body of about size bytes, {"prompt": "aaa…"},
// made as it is read (the client holds none of it).
func floodBody(size int) (io.Reader, int64) {
	head, tail := `{"prompt": "`, `"}`
	n := size - len(head) - len(tail)
	return io.MultiReader(strings.NewReader(head), io.LimitReader(repeatByte('a'), int64(n)), strings.NewReader(tail)), int64(size)
}

type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// heapInuse is the heap's in-use bytes now.
func heapInuse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestTokenizeFloodMemory replays the audit's attack: 8 concurrent 8 MB
// /tokenize bodies. Each is refused (400 context_length_exceeded: no text
// of that many bytes fits stories260K's 512 tokens) before it is tokenized,
// and the body budget lets one body in at a time (MaxBodyBytesInFlight set
// to one body), so the heap in use stays within twice its idle size plus
// 6 x the budget (the body and its decoded string, and the garbage of the
// one before it that the collector has not yet taken). Before the fix the
// same attack took the server from 39 MB to 3.48 GB.
func TestTokenizeFloodMemory(t *testing.T) {
	const size = 8<<20 - 64
	f := newFixture(t, options{srv: server.Config{MaxBodyBytesInFlight: 8 << 20}})
	runtime.GC()
	idle := heapInuse()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), heapInuse()))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	parallel(8, func(i int) {
		body, n := floodBody(size)
		req, err := http.NewRequest(http.MethodPost, f.url+"/tokenize", body)
		if err != nil {
			t.Error(err)
			return
		}
		req.ContentLength = n
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("request %d: %v", i, err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || errorCode(b) != "context_length_exceeded" {
			t.Errorf("request %d: status %d %s, want 400 context_length_exceeded", i, resp.StatusCode, b)
		}
	})
	close(stop)
	<-sampled
	limit := 2*idle + 6*(8<<20)
	t.Logf("heap in use: idle %.1f MiB, peak %.1f MiB (limit %.1f MiB)", mib(idle), mib(peak.Load()), mib(limit))
	if peak.Load() > limit {
		t.Errorf("heap in use peaked at %.1f MiB under the flood, over 2 x idle (%.1f MiB) + 48 MiB", mib(peak.Load()), mib(idle))
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// TestTokenizerRoutesKeyed: under --api-key /tokenize and /detokenize need
// the key, as the generation routes do.
func TestTokenizerRoutesKeyed(t *testing.T) {
	f := newFixture(t, options{srv: server.Config{APIKey: "k"}})
	for _, tc := range []struct{ path, body string }{
		{"/tokenize", `{"prompt": "Once upon a time"}`},
		{"/detokenize", `{"tokens": [1, 2, 3]}`},
	} {
		if resp, b := post(t, f.url+tc.path, tc.body); resp.StatusCode != 401 || errorCode(b) != "invalid_api_key" {
			t.Errorf("%s without the key: status %d %s, want 401 invalid_api_key", tc.path, resp.StatusCode, b)
		}
		if resp, b := post(t, f.url+tc.path, tc.body, "Authorization", "Bearer k"); resp.StatusCode != 200 {
			t.Errorf("%s with the key: status %d %s, want 200", tc.path, resp.StatusCode, b)
		}
	}
}

// TestPromptBoundNeverRefusesAFit: the byte bound refuses only texts whose
// tokens cannot fit: for texts around the context's size (runs of one
// character, whitespace, special-token text, random bytes of the
// vocabulary's pieces), a text the server refuses as too long tokenizes to
// more than the context, and one it tokenizes is what the runtime makes of
// it.
func TestPromptBoundNeverRefusesAFit(t *testing.T) {
	f := newFixture(t, options{})
	ctx := f.rt.MaxModelLen()
	rng := rand.New(rand.NewPCG(1, 2))
	var texts []string
	for _, unit := range []string{"a", " ", "\n", "the ", "Once upon a time ", "<s>", "</s>", "é", "\x00", "   x"} {
		for _, reps := range []int{ctx / 4, ctx, 4 * ctx, 16 * ctx, 64 * ctx} {
			texts = append(texts, strings.Repeat(unit, reps/len(unit)+1))
		}
	}
	for range 40 {
		var b bytes.Buffer
		for b.Len() < ctx*rng.IntN(64) {
			b.Write(f.m.Tokenizer.TokenPiece(int32(rng.IntN(f.rt.VocabSize())), true))
		}
		texts = append(texts, strings.ToValidUTF8(b.String(), "?"))
	}
	refused := 0
	for i, text := range texts {
		ids, err := f.rt.TokenizeText(text, false, true)
		if err != nil {
			t.Fatal(err)
		}
		prompt, _ := json.Marshal(text)
		resp, b := post(t, f.url+"/tokenize", fmt.Sprintf(`{"prompt": %s, "add_special_tokens": false}`, prompt))
		switch {
		case resp.StatusCode == 400 && errorCode(b) == "context_length_exceeded":
			refused++
			if len(ids) <= ctx {
				t.Errorf("text %d (%d bytes, %d tokens) refused as too long for %d: %s", i, len(text), len(ids), ctx, b)
			}
		case resp.StatusCode != 200:
			t.Errorf("text %d: status %d %s", i, resp.StatusCode, b)
		}
	}
	if refused == 0 {
		t.Error("no text was refused by the bound: the test checks nothing")
	}
	t.Logf("%d of %d texts refused before tokenizing (a token is at most %d bytes)", refused, len(texts), f.rt.MaxTokenBytes())
}
