package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

type rerankResp struct {
	ID     string `json:"id"`
	Model  string `json:"model"`
	Object string `json:"object"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Results []struct {
		Index          int              `json:"index"`
		RelevanceScore float32          `json:"relevance_score"`
		Document       *json.RawMessage `json:"document"`
	} `json:"results"`
}

// rerankRefPairs are model/testdata/rerank/SHAPE-F16.json's pairs
// (scripts/rerank-ref.sh: llama.cpp's tokens and scores), grouped by query
// in file order.
func rerankRefPairs(t *testing.T, shape string) (queries []string, docs map[string][]string, scores map[string][]float32, tokens map[string]int) {
	t.Helper()
	raw, err := os.ReadFile("../model/testdata/rerank/" + shape + "-F16.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Pairs []struct {
			Query, Document string
			Tokens          []int32
			Scores          []float32
		}
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	docs, scores, tokens = map[string][]string{}, map[string][]float32{}, map[string]int{}
	for _, p := range ref.Pairs {
		if docs[p.Query] == nil {
			queries = append(queries, p.Query)
		}
		docs[p.Query] = append(docs[p.Query], p.Document)
		scores[p.Query] = append(scores[p.Query], p.Scores[0])
		tokens[p.Query] += len(p.Tokens)
	}
	return queries, docs, scores, tokens
}

// rerankPost posts body to url+path and decodes a 200's answer.
func rerankPost(t *testing.T, url, body string) rerankResp {
	t.Helper()
	resp, b := post(t, url+"/v1/rerank", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r rerankResp
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return r
}

// TestRerankServe: each reranker shape's /v1/rerank scores equal
// llama.cpp's (within model's TestRerankParity bound), sorted best first,
// with the documents and the usage.
func TestRerankServe(t *testing.T) {
	for _, c := range []struct{ shape, vocab string }{
		{"bge-reranker-tiny", "vocab/ggml-vocab-bert-bge.gguf"},
		{"qwen3-reranker-tiny", "stories260K.gguf"},
	} {
		t.Run(c.shape, func(t *testing.T) {
			url := synthServer(t, c.shape, c.vocab, "rr")
			queries, docs, scores, tokens := rerankRefPairs(t, c.shape)
			for _, q := range queries {
				body, _ := json.Marshal(map[string]any{"model": "rr", "query": q, "documents": docs[q]})
				r := rerankPost(t, url, string(body))
				if r.Object != "list" || r.Model != "rr" || !strings.HasPrefix(r.ID, "rerank-") {
					t.Errorf("head: object %q model %q id %q", r.Object, r.Model, r.ID)
				}
				if r.Usage.PromptTokens != tokens[q] || r.Usage.TotalTokens != tokens[q] {
					t.Errorf("usage %+v, want %d tokens (llama.cpp's sequences)", r.Usage, tokens[q])
				}
				if len(r.Results) != len(docs[q]) {
					t.Fatalf("%d results for %d documents", len(r.Results), len(docs[q]))
				}
				var seen []int
				for k, res := range r.Results {
					seen = append(seen, res.Index)
					want := scores[q][res.Index]
					if d := math.Abs(float64(res.RelevanceScore - want)); !(d <= 1e-3*max(1, math.Abs(float64(want)))) {
						t.Errorf("document %d: score %.7f, llama.cpp %.7f", res.Index, res.RelevanceScore, want)
					}
					if k > 0 && res.RelevanceScore > r.Results[k-1].RelevanceScore {
						t.Errorf("results not sorted by score: %v", r.Results)
					}
					var doc struct{ Text string }
					if res.Document == nil || json.Unmarshal(*res.Document, &doc) != nil || doc.Text != docs[q][res.Index] {
						t.Errorf("document %d: %v, want its text", res.Index, res.Document)
					}
				}
				slices.Sort(seen)
				for i, idx := range seen {
					if idx != i {
						t.Errorf("indices %v: want each document once", seen)
						break
					}
				}
			}
		})
	}
}

// TestRerankOptions: top_n, return_documents, document objects and the
// route's other names.
func TestRerankOptions(t *testing.T) {
	url := synthServer(t, "bge-reranker-tiny", "vocab/ggml-vocab-bert-bge.gguf", "rr")
	docs := `["Paris is the capital of France.", {"text": "The dog ran."}, "Lily", "Berlin is in Germany."]`
	all := rerankPost(t, url, `{"query": "capital of France", "documents": `+docs+`}`)
	if len(all.Results) != 4 {
		t.Fatalf("%d results, want 4", len(all.Results))
	}
	top := rerankPost(t, url, `{"query": "capital of France", "documents": `+docs+`, "top_n": 2, "return_documents": false}`)
	if len(top.Results) != 2 {
		t.Fatalf("top_n 2: %d results", len(top.Results))
	}
	for k, res := range top.Results {
		if res.Index != all.Results[k].Index || res.RelevanceScore != all.Results[k].RelevanceScore {
			t.Errorf("top_n 2, result %d: %+v, want the full list's %+v", k, res, all.Results[k])
		}
		if res.Document != nil {
			t.Errorf("return_documents false: result %d has a document", k)
		}
	}
	if top.Usage != all.Usage {
		t.Errorf("top_n changed the usage: %+v, %+v", top.Usage, all.Usage)
	}
	if r := rerankPost(t, url, `{"query": "capital of France", "documents": `+docs+`, "top_n": 10}`); len(r.Results) != 4 {
		t.Errorf("top_n 10 of 4 documents: %d results", len(r.Results))
	}
	for _, path := range []string{"/rerank", "/v1/reranking", "/reranking"} {
		resp, b := post(t, url+path, `{"query": "q", "documents": ["d"]}`)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d: %s", path, resp.StatusCode, b)
		}
	}
}

// TestRerankBadInput: malformed requests are 400s in OpenAI's error shape
// naming the field.
func TestRerankBadInput(t *testing.T) {
	url := synthServer(t, "bge-reranker-tiny", "vocab/ggml-vocab-bert-bge.gguf", "rr")
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprint("doc ", i)
	}
	manyJSON, _ := json.Marshal(many)
	long := strings.Repeat("word ", 200) // past bge-reranker-tiny's 128 positions
	for _, c := range []struct{ name, body, param, msg string }{
		{"no query", `{"documents": ["a"]}`, "query", "required"},
		{"query not a string", `{"query": 3, "documents": ["a"]}`, "query", "string"},
		{"no documents", `{"query": "q"}`, "documents", "required"},
		{"empty documents", `{"query": "q", "documents": []}`, "documents", "empty"},
		{"documents not a list", `{"query": "q", "documents": "a"}`, "documents", "list"},
		{"document not text", `{"query": "q", "documents": [3]}`, "documents", "document 0"},
		{"document object without text", `{"query": "q", "documents": [{"title": "a"}]}`, "documents", "document 0"},
		{"document object with more", `{"query": "q", "documents": [{"text": "a", "title": "b"}]}`, "documents", "title"},
		{"too many documents", `{"query": "q", "documents": ` + string(manyJSON) + `}`, "documents", "at most 1000"},
		{"negative top_n", `{"query": "q", "documents": ["a"], "top_n": -1}`, "top_n", "top_n"},
		{"unknown field", `{"query": "q", "documents": ["a"], "rank_fields": ["text"]}`, "rank_fields", "not supported"},
		{"TEI texts", `{"query": "q", "texts": ["a"]}`, "texts", "not supported"},
		{"over the context", `{"query": "q", "documents": ["a", "` + long + `"]}`, "documents", "document 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := post(t, url+"/v1/rerank", c.body)
			checkAPIError(t, resp, b, http.StatusBadRequest, c.param, c.msg)
		})
	}
	resp, b := post(t, url+"/v1/rerank", `{"model": "other", "query": "q", "documents": ["a"]}`)
	checkAPIError(t, resp, b, http.StatusNotFound, "", "other")
	resp, b = post(t, url+"/v1/embeddings", `{"input": "a"}`)
	checkAPIError(t, resp, b, http.StatusBadRequest, "", "reranker")
	resp, b = post(t, url+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`)
	checkAPIError(t, resp, b, http.StatusBadRequest, "model", "/v1/rerank")
}

// TestRerankNotReranker: a model that is not a reranker answers /v1/rerank
// 400, saying why.
func TestRerankNotReranker(t *testing.T) {
	f := newFixture(t, options{})
	resp, b := post(t, f.url+"/v1/rerank", `{"query": "q", "documents": ["a"]}`)
	checkAPIError(t, resp, b, http.StatusBadRequest, "model", "not a reranker")
}

// checkAPIError checks an error answer: status, OpenAI's shape, the param
// (when not "") and a message containing msg.
func checkAPIError(t *testing.T, resp *http.Response, b []byte, status int, param, msg string) {
	t.Helper()
	var e struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if resp.StatusCode != status || json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Type == "" {
		t.Fatalf("status %d, body %s; want %d in OpenAI's error shape", resp.StatusCode, b, status)
	}
	if param != "" && (e.Error.Param == nil || *e.Error.Param != param) {
		t.Errorf("param %v, want %q (%s)", e.Error.Param, param, b)
	}
	if !strings.Contains(e.Error.Message, msg) {
		t.Errorf("message %q does not mention %q", e.Error.Message, msg)
	}
}
