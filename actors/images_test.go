package actors_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/vision"
)

// fakeEncoder stands in for a projector: an image file is any bytes; it
// gives rows rows of dim values, a deterministic function of the bytes'
// hash. Files starting with "bad" are not images, with "huge" too large.
type fakeEncoder struct {
	dim, rows int
	tiles     int // > 1: that many runs of rows, with a marker text between them
	encodes   atomic.Int64
}

func (f *fakeEncoder) Dim() int { return f.dim }

func (f *fakeEncoder) Prepare(data []byte) (*vision.Prepared, error) {
	switch {
	case bytes.HasPrefix(data, []byte("bad")):
		return nil, vision.ErrFormat
	case bytes.HasPrefix(data, []byte("huge")):
		return nil, vision.ErrTooLarge
	}
	chunks := []vision.Chunk{{Text: "<img>"}, {Embeds: f.rows}, {Text: "</img>"}}
	for range f.tiles - 1 {
		chunks = append(chunks, vision.Chunk{Embeds: f.rows + 1}, vision.Chunk{Text: "</img>"})
	}
	return &vision.Prepared{Chunks: chunks, Hash: sha256.Sum256(data), Width: 4, Height: 4}, nil
}

func (f *fakeEncoder) Encode(mm *compute.MatMuler, p *vision.Prepared) ([]float32, error) {
	f.encodes.Add(1)
	out := make([]float32, p.Rows()*f.dim)
	seed := float64(p.Hash[0]) + float64(p.Hash[1])/256
	for i := range out {
		out[i] = float32(0.3 * math.Sin(seed+float64(i)*0.37))
	}
	return out, nil
}

// imageReq is a greedy request: before, an image of rows placeholder
// tokens (id 1), after; the image prepared from data by rt.
func imageReq(t *testing.T, rt *actors.Runtime, before, after []int32, data string, maxTokens int) *messages.GenerateRequest {
	t.Helper()
	pi, err := rt.PrepareImage([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	rows := pi.Chunks[1].Rows
	prompt := slices.Concat(before, slices.Repeat([]int32{1}, rows), after)
	req := greedy(prompt, maxTokens)
	req.Sampling.WantLogprob = true
	req.Images = []messages.ImageInput{{Pos: len(before), Rows: rows, Hash: pi.Hash, Image: pi}}
	return req
}

func firstLogprob(t *testing.T, rt *actors.Runtime, req *messages.GenerateRequest) (float32, *result) {
	t.Helper()
	ch, err := rt.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var lp float32
	got := false
	r := &result{ids: [][]int32{nil}, text: []string{""}, finish: []string{""}, errs: []string{""}, preempted: []int{0}}
	for c := range ch {
		if c.Done {
			r.usage = c.Usage
			continue
		}
		for _, tok := range c.Tokens {
			if !got {
				lp, got = tok.Logprob, true
			}
			r.ids[0] = append(r.ids[0], tok.ID)
		}
		if c.FinishReason != "" {
			r.finish[0], r.errs[0] = c.FinishReason, c.Err
		}
	}
	return lp, r
}

// TestImageInvariance: a request with an image gives the same tokens alone,
// beside text requests, with its prefill chunked across the image, and
// under recompute preemption; the image's rows are used (another image
// gives another first logprob).
func TestImageInvariance(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	enc := &fakeEncoder{dim: m.Config.Dim, rows: 11}
	c := loadCases(t, "stories260K")[0]
	before, after := c.PromptIDs, c.GreedyIDs[:9]

	alone := start(t, m, actors.Config{Encoder: enc, NoPrefixCaching: true})
	lpA, wantA := firstLogprob(t, alone, imageReq(t, alone, before, after, "image A", 16))
	lpB, _ := firstLogprob(t, alone, imageReq(t, alone, before, after, "image B", 16))
	if wantA.finish[0] == messages.FinishError {
		t.Fatalf("image request failed: %s", wantA.errs[0])
	}
	if lpA == lpB {
		t.Errorf("two images give the same first logprob %v: the rows are not used", lpA)
	}
	texts := []*messages.GenerateRequest{greedy(c.PromptIDs, 20), greedy(c.GreedyIDs[:12], 20), greedy(c.GreedyIDs[3:30], 20)}
	for _, tc := range []struct {
		name string
		cfg  actors.Config
	}{
		{"mixed", actors.Config{Encoder: enc}},
		{"chunked", actors.Config{Encoder: enc, MaxNumBatchedTokens: 7, NoPrefixCaching: true}},
		{"recompute", actors.Config{Encoder: enc, NumBlocks: 12, BlockSize: 4, MaxNumBatchedTokens: 16}},
		{"swap", actors.Config{Encoder: enc, NumBlocks: 12, BlockSize: 4, MaxNumBatchedTokens: 16, NumHostBlocks: 24, Preemption: sched.Swap}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, release := holdDevices(m, tc.cfg) // every request queued before the first step
			rt := start(t, m, cfg)
			besideText(t, rt, release, before, after, texts, wantA.ids[0])
			if tc.cfg.NumBlocks > 0 {
				st := stats(t, rt)
				if st.Preemptions == 0 {
					t.Error("no preemption: the pool is not small enough for the case to mean anything")
				}
				if tc.cfg.Preemption == sched.Swap && st.SwapIns == 0 {
					t.Error("no swap-in: the case does not swap")
				}
			}
		})
	}
}

// TestImagePrefixCache: the same image in a later request hits the prefix
// cache over its rows and is not encoded again; another image behind the
// same placeholder ids does not hit past the text before it.
func TestImagePrefixCache(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	enc := &fakeEncoder{dim: m.Config.Dim, rows: 20}
	c := loadCases(t, "stories260K")[0]
	before := c.GreedyIDs[:12] // the image spans positions 12..31
	after := c.GreedyIDs[12:30]
	rt := start(t, m, actors.Config{Encoder: enc, BlockSize: 8})

	_, first := firstLogprob(t, rt, imageReq(t, rt, before, after, "image A", 4))
	_, again := firstLogprob(t, rt, imageReq(t, rt, before, after, "image A", 4))
	_, other := firstLogprob(t, rt, imageReq(t, rt, before, after, "image B", 4))
	if first.usage.CachedTokens != 0 {
		t.Errorf("first request: %d cached tokens", first.usage.CachedTokens)
	}
	if got, want := again.usage.CachedTokens, 48; got != want { // 6 full blocks of 8, past the image
		t.Errorf("same image again: %d cached tokens, want %d", got, want)
	}
	if got, want := other.usage.CachedTokens, 8; got != want { // the block before the image only
		t.Errorf("another image: %d cached tokens, want %d", got, want)
	}
	if n := enc.encodes.Load(); n != 2 {
		t.Errorf("%d encodes for two distinct images", n)
	}
	if !slices.Equal(first.ids[0], again.ids[0]) {
		t.Errorf("the cached request's tokens differ: %v, first %v", again.ids[0], first.ids[0])
	}
}

// TestImageRefused: images on a runtime without an encoder, bad files,
// and malformed spans are refused with ErrInvalidRequest-style errors.
func TestImageRefused(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	plain := start(t, m, actors.Config{})
	if _, err := plain.PrepareImage([]byte("image")); !errors.Is(err, actors.ErrNoImageEncoder) {
		t.Errorf("PrepareImage without an encoder: %v", err)
	}
	req := greedy([]int32{5, 6, 7, 8}, 2)
	req.Images = []messages.ImageInput{{Pos: 1, Rows: 2, Embeds: make([]float32, 2*m.Config.Dim)}}
	if err := plain.Check(req); !errors.Is(err, actors.ErrInvalidRequest) {
		t.Errorf("an image without an encoder: %v", err)
	}
	enc := &fakeEncoder{dim: m.Config.Dim, rows: 3}
	rt := start(t, m, actors.Config{Encoder: enc})
	for _, data := range []string{"bad file", "huge file"} {
		if _, err := rt.PrepareImage([]byte(data)); err == nil {
			t.Errorf("PrepareImage(%q) accepted", data)
		}
	}
	for name, im := range map[string]messages.ImageInput{
		"past the prompt": {Pos: 3, Rows: 2, Embeds: make([]float32, 2*m.Config.Dim)},
		"wrong width":     {Pos: 0, Rows: 2, Embeds: make([]float32, 2*m.Config.Dim-1)},
		"nothing":         {Pos: 0, Rows: 2},
	} {
		req := greedy([]int32{5, 6, 7, 8}, 2)
		req.Images = []messages.ImageInput{im}
		if err := rt.Check(req); !errors.Is(err, actors.ErrInvalidRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Embeddings given directly (no encoding) run.
	req = greedy([]int32{5, 6, 7, 8}, 2)
	req.Images = []messages.ImageInput{{Pos: 1, Rows: 2, Embeds: make([]float32, 2*m.Config.Dim)}}
	if r := run(t, rt, req); r.finish[0] == messages.FinishError {
		t.Errorf("given embeddings: %s", r.errs[0])
	}
}

// blockingEncoder is a fakeEncoder whose encodes wait for release.
type blockingEncoder struct {
	fakeEncoder
	started chan struct{}
	release chan struct{}
}

func (b *blockingEncoder) Encode(mm *compute.MatMuler, p *vision.Prepared) ([]float32, error) {
	b.started <- struct{}{}
	<-b.release
	return b.fakeEncoder.Encode(mm, p)
}

// TestImageCancelWhileEncoding: a request cancelled while its images are
// encoded ends with cancelled choices and its Done chunk, its queued
// encodes are dropped, and nothing leaks.
func TestImageCancelWhileEncoding(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	enc := &blockingEncoder{fakeEncoder: fakeEncoder{dim: m.Config.Dim, rows: 3}, started: make(chan struct{}, 8), release: make(chan struct{})}
	rt := start(t, m, actors.Config{Encoder: enc})
	var images []messages.ImageInput
	var prompt []int32
	for i := range 4 { // more than encode at once: some stay queued
		pi, err := rt.PrepareImage([]byte(fmt.Sprintf("image %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		prompt = append(prompt, 5)
		images = append(images, messages.ImageInput{Pos: len(prompt), Rows: 3, Hash: pi.Hash, Image: pi})
		prompt = append(prompt, 1, 1, 1)
	}
	req := greedy(append(prompt, 6), 4)
	req.N, req.Images = 2, images
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := rt.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	<-enc.started // an encode runs
	cancel()
	r := collect(t, ch, 2)
	for i, f := range r.finish {
		if f != messages.FinishCancelled {
			t.Errorf("choice %d finished %q (%s)", i, f, r.errs[i])
		}
	}
	close(enc.release)
	// The encoder answers its running encodes; the queued ones were
	// dropped: a new request's image is encoded next, after at most the
	// ones that were running.
	next := imageReq(t, rt, []int32{5}, []int32{6}, "image next", 2)
	if res := run(t, rt, next); res.finish[0] == messages.FinishError {
		t.Fatalf("the next request failed: %s", res.errs[0])
	}
	if n := enc.encodes.Load(); n >= 5 {
		t.Errorf("%d encodes: the cancelled request's queued images were encoded", n)
	}
}

// TestImageTiles: an image whose rows come in several runs (tiles with
// markers between them) is one span per run, encoded once, each span
// taking its own rows: the same tokens as the rows given directly.
func TestImageTiles(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	enc := &fakeEncoder{dim: m.Config.Dim, rows: 3, tiles: 3}
	rt := start(t, m, actors.Config{Encoder: enc, NoPrefixCaching: true})
	pi, err := rt.PrepareImage([]byte("tiled"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := enc.Prepare([]byte("tiled"))
	rows, _ := enc.Encode(nil, p)
	var prompt []int32
	var spans, given []messages.ImageInput
	row := 0
	for _, c := range pi.Chunks {
		if c.Rows == 0 {
			prompt = append(prompt, 7) // a marker token
			continue
		}
		spans = append(spans, messages.ImageInput{Pos: len(prompt), Rows: c.Rows, Hash: pi.Hash, Row: row, Image: pi})
		given = append(given, messages.ImageInput{Pos: len(prompt), Rows: c.Rows, Hash: pi.Hash, Row: row,
			Embeds: rows[row*m.Config.Dim : (row+c.Rows)*m.Config.Dim]})
		prompt = append(prompt, slices.Repeat([]int32{1}, c.Rows)...)
		row += c.Rows
	}
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	a := greedy(append(prompt, 9), 12)
	a.Images = spans
	b := greedy(append(slices.Clone(prompt), 9), 12)
	b.Images = given
	a.Sampling.WantLogprob, b.Sampling.WantLogprob = true, true
	lpA, ra := firstLogprob(t, rt, a)
	lpB, rb := firstLogprob(t, rt, b)
	if ra.finish[0] == messages.FinishError || !slices.Equal(ra.ids[0], rb.ids[0]) || lpA != lpB {
		t.Errorf("tiled spans: %v (%s, %v); rows given: %v (%v)", ra.ids[0], ra.errs[0], lpA, rb.ids[0], lpB)
	}
	if n := enc.encodes.Load(); n != 2 { // the test's own call and the request's one
		t.Errorf("%d encodes, want 2", n)
	}
}

// bidiEncoder is fakeEncoder whose image rows attend to one another both
// ways (as Gemma 3's projector's do: vision.Projector.Bidirectional).
type bidiEncoder struct{ *fakeEncoder }

func (bidiEncoder) Bidirectional() bool { return true }

// TestImageBidirectional: an encoder's Bidirectional reaches the model
// (the first logprob moves from the causal one), and the scheduler keeps
// the image in one step: with a token budget that would cut the prefill
// inside the image, alone or beside text requests, the output is the
// unchunked one bit for bit.
func TestImageBidirectional(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	enc := bidiEncoder{&fakeEncoder{dim: m.Config.Dim, rows: 11}}
	c := loadCases(t, "stories260K")[0]
	before, after := c.PromptIDs, c.GreedyIDs[:9]

	causal := start(t, m, actors.Config{Encoder: enc.fakeEncoder, NoPrefixCaching: true})
	lpCausal, _ := firstLogprob(t, causal, imageReq(t, causal, before, after, "image A", 16))
	alone := start(t, m, actors.Config{Encoder: enc, NoPrefixCaching: true})
	lp, want := firstLogprob(t, alone, imageReq(t, alone, before, after, "image A", 16))
	if want.finish[0] == messages.FinishError {
		t.Fatalf("image request failed: %s", want.errs[0])
	}
	if lp == lpCausal {
		t.Errorf("bidirectional and causal image rows give the same first logprob %v", lp)
	}
	const budget = 12 // holds the image's 11 rows, not with the text before them
	if len(before) == 0 || len(before)+11 <= budget {
		t.Fatalf("a prompt of %d tokens before the image: a budget of %d does not cut the image", len(before), budget)
	}
	chunked := start(t, m, actors.Config{Encoder: enc, MaxNumBatchedTokens: budget, NoPrefixCaching: true})
	if lpC, got := firstLogprob(t, chunked, imageReq(t, chunked, before, after, "image A", 16)); lpC != lp || !slices.Equal(got.ids[0], want.ids[0]) {
		t.Errorf("chunked: first logprob %v, ids %v; unchunked %v, %v", lpC, got.ids[0], lp, want.ids[0])
	}
	texts := []*messages.GenerateRequest{greedy(c.PromptIDs, 20), greedy(c.GreedyIDs[:12], 20), greedy(c.GreedyIDs[3:30], 20)}
	besideText(t, chunked, nil, before, after, texts, want.ids[0])
}

// besideText runs an image request ("image A" between before and after)
// beside each of texts, all at once, and checks each image request's ids
// are want (its output alone). With release (rt's devices held by
// holdDevices) every request is queued before the first step.
func besideText(t *testing.T, rt *actors.Runtime, release func(), before, after []int32, texts []*messages.GenerateRequest, want []int32) {
	t.Helper()
	var reqs []*messages.GenerateRequest
	for _, text := range texts {
		reqs = append(reqs, imageReq(t, rt, before, after, "image A", 16), copyReq(text))
	}
	var res []*result
	if release != nil {
		res = runQueued(t, rt, reqs, release)
	} else {
		res = concurrently(t, rt, reqs)
	}
	for i := 0; i < len(res); i += 2 {
		if res[i].finish[0] == messages.FinishError || !slices.Equal(res[i].ids[0], want) {
			t.Errorf("image request %d beside text: %v (%s), alone %v", i/2, res[i].ids[0], res[i].errs[0], want)
		}
	}
}
