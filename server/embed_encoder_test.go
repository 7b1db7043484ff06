package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/server"
)

// encoderServer serves a synthesized bert-tiny (seed 1, F16, the bge
// vocabulary: scripts/embed-ref.sh's) and returns its URL.
func encoderServer(t *testing.T) string {
	return synthServer(t, "bert-tiny", "vocab/ggml-vocab-bert-bge.gguf", "bge")
}

// synthServer serves shape, synthesized with seed 1 in F16 with the
// tokenizer of vocab (a file under the test models), as name, and returns
// its URL.
func synthServer(t *testing.T, shape, vocab, name string) string {
	t.Helper()
	path := synthtest.Write(t, shape, "F16", vocab, 1)
	return newFixture(t, options{model: path, noTmpl: true, srv: server.Config{ModelName: name}}).url
}

// TestEncoderServe: a BERT model serves embeddings (equal to llama.cpp's,
// its own cls pooling) and answers the generation routes 400.
func TestEncoderServe(t *testing.T) {
	url := encoderServer(t)
	cases := reftest.EmbedInputs(t, "bert-tiny-F16-cls")
	var texts []string
	for _, in := range cases {
		texts = append(texts, in.Text)
	}
	body, _ := json.Marshal(map[string]any{"input": texts})
	resp, b := post(t, url+"/v1/embeddings", string(body))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r embeddingsResp
	if err := json.Unmarshal(b, &r); err != nil || len(r.Data) != len(texts) {
		t.Fatalf("%d embeddings (%v): %s", len(r.Data), err, b)
	}
	for i, d := range r.Data {
		if c := reftest.Cosine(vector(t, d.Embedding), cases[i].Embedding); !(c >= 0.9999) {
			t.Errorf("input %d: cosine %.6f with llama-embedding", i, c)
		}
	}
	for _, route := range []string{"/v1/completions", "/v1/chat/completions"} {
		resp, b := post(t, url+route, `{"prompt":"hi","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "embeddings only") {
			t.Errorf("%s: status %d: %s; want 400 saying embeddings only", route, resp.StatusCode, b)
		}
	}
	resp, b = post(t, url+"/api/embed", fmt.Sprintf(`{"model":"bge","input":%q}`, texts[0]))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/api/embed: status %d: %s", resp.StatusCode, b)
	}
}
