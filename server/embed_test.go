package server_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/internal/reftest"
)

type embeddingsResp struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// vector reads an embedding as floats or base64.
func vector(t *testing.T, raw json.RawMessage) []float32 {
	t.Helper()
	var v []float32
	if json.Unmarshal(raw, &v) == nil {
		return v
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("embedding %s is neither floats nor a string", raw)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("embedding %q: bad base64 (%v)", s, err)
	}
	for i := 0; i < len(b); i += 4 {
		v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	return v
}

// The embedding tests compare with model/testdata/embed/stories260K-mean.json
// (llama-embedding, scripts/embed-ref.sh); stories260K has no pooling of its
// own, so the server pools by mean.
func TestEmbeddingsOpenAI(t *testing.T) {
	f := newFixture(t, options{rt: actors.Config{MaxModelLen: 256}})
	cases := reftest.EmbedInputs(t, "stories260K-mean")
	jsonOf := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	var texts []string
	var ids [][]int32
	for _, c := range cases {
		texts, ids = append(texts, c.Text), append(ids, c.Tokens)
	}
	for _, tc := range []struct {
		name, input, format string
		want                []int // cases expected, in order
	}{
		{"string", jsonOf(cases[0].Text), "", []int{0}},
		{"strings", jsonOf(texts), "float", []int{0, 1, 2, 3}},
		{"tokens", jsonOf(cases[1].Tokens), "", []int{1}},
		{"token lists", jsonOf(ids), "base64", []int{0, 1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"model":%q,"input":%s`, modelName, tc.input)
			if tc.format != "" {
				body += fmt.Sprintf(`,"encoding_format":%q`, tc.format)
			}
			resp, b := post(t, f.url+"/v1/embeddings", body+"}")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var r embeddingsResp
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if r.Object != "list" || r.Model != modelName || len(r.Data) != len(tc.want) {
				t.Fatalf("object %q model %q, %d embeddings; want list, %q, %d", r.Object, r.Model, len(r.Data), modelName, len(tc.want))
			}
			tokens := 0
			for i, d := range r.Data {
				c := cases[tc.want[i]]
				tokens += len(c.Tokens)
				v := vector(t, d.Embedding)
				if d.Object != "embedding" || d.Index != i || len(v) != 64 {
					t.Errorf("data %d: object %q index %d, %d values", i, d.Object, d.Index, len(v))
				}
				if cos := reftest.Cosine(v, c.Embedding); !(cos >= 0.9999) {
					t.Errorf("data %d (%q): cosine %.6f with llama-embedding", i, c.Text, cos)
				}
			}
			if r.Usage.PromptTokens != tokens || r.Usage.TotalTokens != tokens {
				t.Errorf("usage %+v, want %d tokens", r.Usage, tokens)
			}
		})
	}

	for _, tc := range []struct{ name, body, param string }{
		{"no input", `{"model":"stories"}`, "input"},
		{"empty string", `{"input":""}`, "input"},
		{"empty list", `{"input":[]}`, "input"},
		{"bad format", `{"input":"a","encoding_format":"int8"}`, "encoding_format"},
		{"dimensions", `{"input":"a","dimensions":32}`, "dimensions"},
		{"token outside the vocabulary", `{"input":[1,100000]}`, "input"},
		{"too long", `{"input":[` + strings.Repeat("1,", 300) + `1]}`, "input"},
	} {
		resp, b := post(t, f.url+"/v1/embeddings", tc.body)
		var e struct {
			Error struct {
				Param *string `json:"param"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("%s: status %d, body %s; want 400 about %s", tc.name, resp.StatusCode, b, tc.param)
		}
	}
	if resp, b := post(t, f.url+"/v1/embeddings", `{"input":"a","dimensions":64}`); resp.StatusCode != http.StatusOK {
		t.Errorf("dimensions equal to the model's: status %d: %s", resp.StatusCode, b)
	}
	f.waitIdle(t)
}

// TestEmbeddingsOpenAIClient drives /v1/embeddings with the official Go client.
func TestEmbeddingsOpenAIClient(t *testing.T) {
	f := newFixture(t, options{})
	cases := reftest.EmbedInputs(t, "stories260K-mean")
	c := client(f)
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{"", openai.EmbeddingNewParamsEncodingFormatFloat} {
		res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: modelName, EncodingFormat: format,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{cases[0].Text, cases[3].Text}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != 2 || res.Usage.PromptTokens != int64(len(cases[0].Tokens)+len(cases[3].Tokens)) {
			t.Fatalf("%d embeddings, usage %+v", len(res.Data), res.Usage)
		}
		for i, want := range []reftest.EmbedInput{cases[0], cases[3]} {
			w := make([]float64, len(want.Embedding))
			for j, x := range want.Embedding {
				w[j] = float64(x)
			}
			if cos := reftest.Cosine(res.Data[i].Embedding, w); !(cos >= 0.9999) {
				t.Errorf("format %q, input %d: cosine %.6f", format, i, cos)
			}
		}
	}
}

// TestEmbedOllama checks /api/embed and /api/embeddings field by field
// against Ollama's API documentation.
func TestEmbedOllama(t *testing.T) {
	f := newFixture(t, options{rt: actors.Config{MaxModelLen: 256}})
	cases := reftest.EmbedInputs(t, "stories260K-mean")
	resp, b := post(t, f.url+"/api/embed", fmt.Sprintf(`{"model":"stories:latest","input":[%q,%q]}`, cases[0].Text, cases[2].Text))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for name, kind := range map[string]string{"model": "string", "embeddings": "array", "total_duration": "number",
		"load_duration": "number", "prompt_eval_count": "number"} {
		raw, ok := fields[name]
		if !ok || jsonKind(raw) != kind {
			t.Errorf("field %s: %s, want a %s", name, raw, kind)
		}
	}
	var r struct {
		Model           string      `json:"model"`
		Embeddings      [][]float32 `json:"embeddings"`
		TotalDuration   int64       `json:"total_duration"`
		PromptEvalCount int         `json:"prompt_eval_count"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Model != "stories:latest" || len(r.Embeddings) != 2 || r.TotalDuration <= 0 || r.PromptEvalCount != len(cases[0].Tokens)+len(cases[2].Tokens) {
		t.Errorf("model %q, %d embeddings, total_duration %d, prompt_eval_count %d", r.Model, len(r.Embeddings), r.TotalDuration, r.PromptEvalCount)
	}
	for i, c := range []reftest.EmbedInput{cases[0], cases[2]} {
		if cos := reftest.Cosine(r.Embeddings[i], c.Embedding); !(cos >= 0.9999) {
			t.Errorf("input %d: cosine %.6f", i, cos)
		}
	}

	// The older route: one prompt, the vector not normalized.
	resp, b = post(t, f.url+"/api/embeddings", fmt.Sprintf(`{"model":"stories","prompt":%q}`, cases[0].Text))
	var old struct {
		Embedding []float32 `json:"embedding"`
	}
	if err := json.Unmarshal(b, &old); resp.StatusCode != http.StatusOK || err != nil || len(old.Embedding) != 64 {
		t.Fatalf("/api/embeddings: status %d: %s", resp.StatusCode, b)
	}
	if cos := reftest.Cosine(old.Embedding, cases[0].Embedding); !(cos >= 0.9999) {
		t.Errorf("/api/embeddings: cosine %.6f", cos)
	}
	var ss float64
	for _, x := range old.Embedding {
		ss += float64(x) * float64(x)
	}
	if norm := math.Sqrt(ss); math.Abs(norm-1) < 1e-3 {
		t.Errorf("/api/embeddings: norm %.6f; Ollama's older route does not normalize", norm)
	}

	long := strings.Repeat("the dog ran. ", 200)
	for _, tc := range []struct {
		route, body string
		status      int
	}{
		{"/api/embed", fmt.Sprintf(`{"model":"stories","input":%q}`, long), http.StatusOK}, // truncated by default
		{"/api/embed", fmt.Sprintf(`{"model":"stories","input":%q,"truncate":false}`, long), http.StatusBadRequest},
		{"/api/embed", `{"model":"stories","input":[]}`, http.StatusOK},
		{"/api/embed", `{"input":"a"}`, http.StatusBadRequest}, // model is required, as Ollama's
		{"/api/embed", `{"model":"other","input":"a"}`, http.StatusNotFound},
		{"/api/embed", `{"input":3}`, http.StatusBadRequest},
		{"/api/embed", `{"input":"a","dimensions":8}`, http.StatusBadRequest},
		{"/api/embeddings", `{"model":"stories","prompt":""}`, http.StatusOK},
	} {
		resp, b := post(t, f.url+tc.route, tc.body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %.60s: status %d, want %d: %s", tc.route, tc.body, resp.StatusCode, tc.status, b)
			continue
		}
		if tc.status != http.StatusOK {
			var e map[string]json.RawMessage
			if err := json.Unmarshal(b, &e); err != nil || jsonKind(e["error"]) != "string" || len(e) != 1 {
				t.Errorf("%s %.60s: error body %s, want {\"error\": \"...\"}", tc.route, tc.body, b)
			}
		}
	}
	f.waitIdle(t)
}

// jsonKind names the JSON type of raw.
func jsonKind(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "":
		return "missing"
	case s[0] == '"':
		return "string"
	case s[0] == '[':
		return "array"
	case s[0] == '{':
		return "object"
	case s == "true" || s == "false":
		return "boolean"
	case s == "null":
		return "null"
	}
	return "number"
}
