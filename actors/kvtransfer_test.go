package actors_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

// generateIDs runs req on rt and returns each choice's token ids and the
// usage.
func generateIDs(t *testing.T, rt *actors.Runtime, req *messages.GenerateRequest) ([][]int32, *messages.Usage) {
	t.Helper()
	ids := make([][]int32, max(req.N, 1))
	usage, err := rt.Generate(context.Background(), req, func(c *messages.OutputChunk) error {
		if c.Err != "" {
			t.Errorf("choice %d: %s", c.Index, c.Err)
		}
		for _, tok := range c.Tokens {
			ids[c.Index] = append(ids[c.Index], tok.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, usage
}

// TestKVTransfer: a prompt computed on one runtime, its blocks exported and
// imported into another, gives there what that runtime gives computing
// the prompt itself, token for token (greedy and seeded), and the import
// shows as cached prompt tokens. Malformed imports are errors that leave
// the runtime serving.
func TestKVTransfer(t *testing.T) {
	m := openModel(t, "stories260K.gguf")
	prefill, decode, alone := start(t, m, actors.Config{}), start(t, m, actors.Config{}), start(t, m, actors.Config{})
	prompt, err := prefill.Tokenize(strings.Repeat("Lily and Tom went to the park to play. ", 8))
	if err != nil {
		t.Fatal(err)
	}
	bs := 16
	full := (len(prompt) - 1) / bs * bs
	if full < 2*bs {
		t.Fatalf("a prompt of %d tokens: too short", len(prompt))
	}
	generateIDs(t, prefill, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 1})

	// The decode side already has the first block: only the rest moves.
	generateIDs(t, decode, &messages.GenerateRequest{Prompt: prompt[:bs+1], MaxTokens: 1})
	have, err := decode.CachedTokens(prompt, timeout)
	if err != nil || have != bs {
		t.Fatalf("the decode side caches %d tokens (%v), want %d", have, err, bs)
	}
	exp, err := prefill.ExportKV(&messages.ExportKV{Tokens: prompt, From: have}, timeout)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Blocks != (full-have)/bs || exp.From != have {
		t.Fatalf("exported %d blocks from %d, want %d from %d", exp.Blocks, exp.From, (full-have)/bs, have)
	}

	bad := []struct {
		name string
		imp  messages.ImportKV
		want string
	}{
		{"shape", messages.ImportKV{Tokens: prompt, Shape: messages.KVShape{Type: "q8_0"}, From: exp.From, Blocks: exp.Blocks, Data: exp.Data}, "shape"},
		{"short data", messages.ImportKV{Tokens: prompt, Shape: exp.Shape, From: exp.From, Blocks: exp.Blocks, Data: exp.Data[1:]}, "bytes of K/V"},
		{"from", messages.ImportKV{Tokens: prompt, Shape: exp.Shape, From: 3, Blocks: exp.Blocks, Data: exp.Data}, "whole blocks"},
		{"past the prompt", messages.ImportKV{Tokens: prompt[:full], Shape: exp.Shape, From: exp.From, Blocks: exp.Blocks, Data: exp.Data}, "prompt"},
		{"negative", messages.ImportKV{Tokens: prompt, Shape: exp.Shape, From: exp.From, Blocks: -1}, "whole blocks"},
	}
	for _, c := range bad {
		if _, err := decode.ImportKV(&c.imp, timeout); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	// A gap (blocks from past what is cached) imports nothing.
	if exp.Blocks > 1 {
		n := exp.Shape.Layers * 2 * exp.Shape.BlockSize * exp.Shape.RowBytes
		got, err := decode.ImportKV(&messages.ImportKV{Tokens: prompt, Shape: exp.Shape, From: have + bs, Blocks: 1, Data: exp.Data[n : 2*n]}, timeout)
		if err != nil || got.Imported != 0 {
			t.Errorf("an import past a gap: %+v, %v; want nothing imported", got, err)
		}
	}

	got, err := decode.ImportKV(&messages.ImportKV{Tokens: prompt, Shape: exp.Shape, From: exp.From, Blocks: exp.Blocks, Data: exp.Data}, timeout)
	if err != nil || got.Imported != exp.Blocks || got.NumCachedTokens != have {
		t.Fatalf("import: %+v, %v; want %d blocks after %d cached", got, err, exp.Blocks, have)
	}
	for _, req := range []*messages.GenerateRequest{
		{Prompt: prompt, MaxTokens: 24},
		{Prompt: prompt, MaxTokens: 24, N: 2, Sampling: messages.SamplingParams{Temperature: 0.9, Seed: 7, HasSeed: true}},
	} {
		want, _ := generateIDs(t, alone, req)
		ids, usage := generateIDs(t, decode, req)
		if usage.CachedTokens != full {
			t.Errorf("the decode side found %d prompt tokens cached, want %d", usage.CachedTokens, full)
		}
		for c := range want {
			if !slices.Equal(ids[c], want[c]) {
				t.Errorf("choice %d: %v after the import, %v computed alone", c, ids[c], want[c])
			}
		}
	}
}
