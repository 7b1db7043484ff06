package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// Rerank: POST /v1/rerank (also /rerank, /v1/reranking and /reranking, as
// llama-server serves it) in the Jina/Cohere shape llama-server and vLLM
// accept. Each document is scored with the query by the served reranker
// (actors.Runtime.Rerank); the results come sorted by score, best first.

// maxRerankDocuments bounds the documents of one rerank request (Cohere's
// recommended limit).
const maxRerankDocuments = 1000

// rerankFields are the request fields rerank reads; any other is a 400
// naming it.
var rerankFields = []string{"model", "query", "documents", "top_n", "return_documents"}

// rerankDocs is the documents field: a list of strings or of objects with a
// "text" string (Cohere's and vLLM's), the two mixed as Cohere allows.
type rerankDocs struct {
	texts []string
	set   bool
}

func (d *rerankDocs) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return &fieldError{"documents", "expected a list of strings or of {\"text\": string} objects"}
	}
	d.texts, d.set = make([]string, len(raw)), true
	for i, r := range raw {
		if json.Unmarshal(r, &d.texts[i]) == nil {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(r, &obj) != nil || obj["text"] == nil || json.Unmarshal(obj["text"], &d.texts[i]) != nil {
			return &fieldError{"documents", fmt.Sprintf("document %d: expected a string or an object with a \"text\" string", i)}
		}
		for k := range obj {
			if k != "text" {
				return &fieldError{"documents", fmt.Sprintf("document %d: field %q is not supported (only \"text\")", i, k)}
			}
		}
	}
	return nil
}

type rerankRequest struct {
	Model           string     `json:"model"`
	Query           *string    `json:"query"`
	Documents       rerankDocs `json:"documents"`
	TopN            *int       `json:"top_n"`
	ReturnDocuments *bool      `json:"return_documents"`
}

func (r *rerankRequest) model() string { return r.Model }

// UnmarshalJSON decodes a rerank request, refusing a field rerank does not
// read (vLLM's truncate_prompt_tokens, Cohere's rank_fields, TEI's texts...)
// with a 400 naming it.
func (r *rerankRequest) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	keys := slices.Sorted(maps.Keys(fields))
	for _, k := range keys {
		if !slices.Contains(rerankFields, k) {
			return &fieldError{k, fmt.Sprintf("not supported on /v1/rerank (the fields are %s)", strings.Join(rerankFields, ", "))}
		}
	}
	type plain rerankRequest // without this method
	return json.Unmarshal(b, (*plain)(r))
}

type rerankDocument struct {
	Text string `json:"text"`
}

type rerankResult struct {
	Index          int             `json:"index"`
	RelevanceScore float32         `json:"relevance_score"`
	Document       *rerankDocument `json:"document,omitempty"`
}

// embeddingsUsage is the usage object of OpenAI's embeddings, which
// rerank answers with too.
type embeddingsUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type rerankResponse struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Object  string          `json:"object"`
	Usage   embeddingsUsage `json:"usage"`
	Results []rerankResult  `json:"results"`
}

// rerankRoutes registers rerank under its names (each also without /v1).
func (s *Server) rerankRoutes() {
	h := s.auth(s.admitted(s.rerank))
	s.mux.HandleFunc("POST /v1/rerank", h)
	s.mux.HandleFunc("POST /v1/reranking", h)
}

// rerank serves POST /v1/rerank.
func (s *Server) rerank(w http.ResponseWriter, r *http.Request) {
	var req rerankRequest
	if !s.read(w, r, &req) {
		return
	}
	if e := checkRerank(&req); e != nil {
		writeError(w, e)
		return
	}
	if err := s.rt.Reranker(); err != nil {
		writeError(w, badRequest("model", "the served model %q cannot rerank: %v", s.cfg.ModelName, err))
		return
	}
	inputs := make([][]int32, len(req.Documents.texts))
	for i, doc := range req.Documents.texts {
		toks, err := s.rt.RankTokens(*req.Query, doc)
		if err != nil {
			writeError(w, badRequest("documents", "tokenizing document %d with the query: %v", i, err))
			return
		}
		inputs[i] = toks
	}
	scores, tokens, e := s.rerankScores(r.Context(), inputs)
	if e != nil {
		writeError(w, e)
		return
	}
	resp := rerankResponse{ID: newID("rerank-"), Model: s.cfg.ModelName, Object: "list",
		Usage: embeddingsUsage{PromptTokens: tokens, TotalTokens: tokens}}
	for i, sc := range scores {
		res := rerankResult{Index: i, RelevanceScore: sc}
		if req.ReturnDocuments == nil || *req.ReturnDocuments {
			res.Document = &rerankDocument{Text: req.Documents.texts[i]}
		}
		resp.Results = append(resp.Results, res)
	}
	sort.SliceStable(resp.Results, func(a, b int) bool { return resp.Results[a].RelevanceScore > resp.Results[b].RelevanceScore })
	if n := *req.TopN; n > 0 && n < len(resp.Results) {
		resp.Results = resp.Results[:n]
	}
	writeJSON(w, http.StatusOK, resp)
}

// checkRerank checks a decoded rerank request, and fills TopN's default
// (0: every document).
func checkRerank(req *rerankRequest) *apiError {
	switch n := len(req.Documents.texts); {
	case req.Query == nil:
		return badRequest("query", "query is required")
	case !req.Documents.set:
		return badRequest("documents", "documents is required")
	case n == 0:
		return badRequest("documents", "documents is empty; send at least one")
	case n > maxRerankDocuments:
		return badRequest("documents", "at most %d documents per request (got %d)", maxRerankDocuments, n)
	case req.TopN != nil && *req.TopN < 0:
		return badRequest("top_n", "top_n is %d; want 0 (every document) or more", *req.TopN)
	}
	if req.TopN == nil {
		req.TopN = new(int)
	}
	return nil
}

// rerankScores runs the inputs through the runtime within the request
// timeout and returns their scores and the tokens they took.
func (s *Server) rerankScores(ctx context.Context, inputs [][]int32) ([]float32, int, *apiError) {
	if s.cfg.RequestTimeout > 0 {
		var stop func() bool
		ctx, stop = withDeadline(ctx, s.cfg.RequestTimeout)
		defer stop()
	}
	start := time.Now()
	scores, usage, err := s.rt.Rerank(ctx, inputs, 0)
	if err != nil {
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return nil, 0, &apiError{Status: http.StatusRequestTimeout, Type: "timeout_error", Code: strp("request_timeout"),
				Message: fmt.Sprintf("the request ran past the server's limit of %v (--request-timeout)", s.cfg.RequestTimeout)}
		}
		return nil, 0, userError(err)
	}
	s.metrics.promptTokens.Add(float64(usage.PromptTokens))
	s.metrics.e2e.Observe(time.Since(start).Seconds())
	return scores, usage.PromptTokens, nil
}
