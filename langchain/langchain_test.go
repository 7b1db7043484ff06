package langchain_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/prompts"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"
	"github.com/tmc/langchaingo/vectorstores"

	"github.com/troupe-llm/troupe"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/tinytest"
	"github.com/troupe-llm/troupe/langchain"
	"github.com/troupe-llm/troupe/troupetest"
)

// open opens the tiny model (on script when not nil) for the test.
func open(t *testing.T, script *troupetest.Script) *troupe.Model {
	t.Helper()
	m, done, err := openTiny(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	return m
}

// openTiny writes the tiny model into a new folder and opens it, on script
// when not nil; done closes it and removes the folder. The tests and the
// examples share it.
func openTiny(script *troupetest.Script) (m *troupe.Model, done func(), err error) {
	var opts []troupe.Option
	if script != nil {
		opts = append(opts, troupe.WithBackend(script))
	}
	return tinytest.Open(func(path string) (*troupe.Model, error) { return troupe.Open(context.Background(), path, opts...) })
}

// scripted is an LLM whose model answers replies, in order.
func scripted(t *testing.T, replies ...string) (*langchain.LLM, *troupetest.Script) {
	t.Helper()
	s := troupetest.NewScript(troupetest.TinyVocabSize, troupetest.TinyEOS)
	m := open(t, s)
	for _, r := range replies {
		if err := s.PushText(m.Runtime(), r); err != nil {
			t.Fatal(err)
		}
	}
	return langchain.New(m), s
}

// TestChain: langchaingo's LLMChain renders its prompt template and gets
// the model's answer; the streaming function sees it piece by piece.
func TestChain(t *testing.T) {
	llm, _ := scripted(t, "Bonjour le monde", "Bonjour le monde")
	chain := chains.NewLLMChain(llm, prompts.NewPromptTemplate("Translate to French: {{.text}}", []string{"text"}))
	out, err := chains.Run(context.Background(), chain, "Hello world")
	if err != nil || out != "Bonjour le monde" {
		t.Fatalf("chain: %q, %v", out, err)
	}
	var streamed []string
	out, err = chains.Run(context.Background(), chain, "Hello world", chains.WithStreamingFunc(func(_ context.Context, b []byte) error {
		streamed = append(streamed, string(b))
		return nil
	}))
	if err != nil || out != "Bonjour le monde" || strings.Join(streamed, "") != out || len(streamed) < 2 {
		t.Errorf("streamed chain: %q (pieces %q), %v", out, streamed, err)
	}
}

// weather is a langchaingo tool that records its inputs.
type weather struct{ inputs []string }

func (w *weather) Name() string        { return "weather" }
func (w *weather) Description() string { return "Today's weather in a city" }
func (w *weather) Call(_ context.Context, input string) (string, error) {
	w.inputs = append(w.inputs, input)
	return "snow, -3 C", nil
}

// TestAgent: langchaingo's OpenAI-functions agent loop runs in process:
// the model's first answer is a tool call (in the model's own format,
// parsed by troupe), the executor runs the tool, the result goes back
// through the chat template, and the second answer ends the loop.
func TestAgent(t *testing.T) {
	llm, script := scripted(t,
		"<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"__arg1\": \"Oslo\"}}\n</tool_call>",
		"It is snowing in Oslo.")
	tool := &weather{}
	agent := agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{tool})
	executor := agents.NewExecutor(agent, agents.WithMaxIterations(3))
	out, err := chains.Run(context.Background(), executor, "What is the weather in Oslo?")
	if err != nil {
		t.Fatal(err)
	}
	if out != "It is snowing in Oslo." || !slices.Equal(tool.inputs, []string{"Oslo"}) || script.Started() != 2 {
		t.Errorf("agent: %q, tool inputs %q, %d model calls", out, tool.inputs, script.Started())
	}
}

// TestGenerateContent: messages with tool calls and responses, tools with
// a forced choice, and the response's calls.
func TestGenerateContent(t *testing.T) {
	llm, _ := scripted(t, "<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>")
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Find x."),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"q":"y"}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "lookup", Content: "nothing"}}},
	}
	fn := llms.FunctionDefinition{Name: "lookup", Description: "Look a thing up",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []string{"q"}}}
	resp, err := llm.GenerateContent(context.Background(), msgs, llms.WithTools([]llms.Tool{{Type: "function", Function: &fn}}),
		llms.WithToolChoice("required"))
	if err != nil {
		t.Fatal(err)
	}
	c := resp.Choices[0]
	if len(c.ToolCalls) != 1 || c.ToolCalls[0].FunctionCall.Name != "lookup" || c.ToolCalls[0].FunctionCall.Arguments != `{"q": "x"}` ||
		c.StopReason != "tool_calls" || c.FuncCall == nil {
		t.Errorf("choice %+v", c)
	}
	if c.GenerationInfo["PromptTokens"].(int) == 0 {
		t.Errorf("no usage: %v", c.GenerationInfo)
	}
}

// TestJSONMode: under JSONMode a scripted answer that is not JSON gives
// way to what the grammar allows, and one that is JSON passes unchanged.
func TestJSONMode(t *testing.T) {
	llm, _ := scripted(t, "not JSON at all", `{"a": [1, 2]}`)
	ctx := context.Background()
	out, err := llm.Call(ctx, "JSON please", llms.WithJSONMode(), llms.WithMaxTokens(24))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("under JSON mode the answer is %q", out)
	}
	out, err = llm.Call(ctx, "JSON please", llms.WithJSONMode())
	if err != nil || out != `{"a": [1, 2]}` {
		t.Errorf("a JSON answer under JSON mode: %q, %v", out, err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Error(err)
	}
}

// TestUnsupportedOptions: an option troupe cannot honour is an error
// naming it.
func TestUnsupportedOptions(t *testing.T) {
	llm, _ := scripted(t)
	for name, opt := range map[string]llms.CallOption{
		"CandidateCount":    llms.WithCandidateCount(2),
		"RepetitionPenalty": llms.WithRepetitionPenalty(1.1),
		"FrequencyPenalty":  llms.WithFrequencyPenalty(0.5),
		"MinLength":         llms.WithMinLength(3),
	} {
		if _, err := llm.Call(context.Background(), "x", opt); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	img := []llms.MessageContent{{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{llms.ImageURLContent{URL: "http://x/y.png"}}}}
	if _, err := llm.GenerateContent(context.Background(), img); err == nil || !strings.Contains(err.Error(), "ImageURLContent") {
		t.Errorf("an image part: %v", err)
	}
}

// memStore is a vector store in memory over an embedder: cosine
// similarity, brute force. langchaingo has no in-memory store of its own.
type memStore struct {
	e    embeddings.Embedder
	docs []schema.Document
	vecs [][]float32
}

func (s *memStore) AddDocuments(ctx context.Context, docs []schema.Document, _ ...vectorstores.Option) ([]string, error) {
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.PageContent
	}
	vecs, err := s.e.EmbedDocuments(ctx, texts)
	if err != nil {
		return nil, err
	}
	s.docs, s.vecs = append(s.docs, docs...), append(s.vecs, vecs...)
	return texts, nil
}

func (s *memStore) SimilaritySearch(ctx context.Context, query string, n int, _ ...vectorstores.Option) ([]schema.Document, error) {
	q, err := s.e.EmbedQuery(ctx, query)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(s.docs)
	for i := range out {
		out[i].Score = float32(reftest.Cosine(q, s.vecs[i]))
	}
	slices.SortFunc(out, func(a, b schema.Document) int {
		if a.Score > b.Score {
			return -1
		} else if a.Score < b.Score {
			return 1
		}
		return 0
	})
	return out[:min(n, len(out))], nil
}

// TestVectorStore: documents embedded in process are found again by
// similarity search (a document's own text is its nearest neighbour, at
// cosine 1), and a retrieval QA chain answers over the store.
func TestVectorStore(t *testing.T) {
	m := open(t, nil)
	store := &memStore{e: langchain.NewEmbedder(m)}
	docs := []schema.Document{{PageContent: "the cat sat on the mat"}, {PageContent: "stock prices fell sharply"},
		{PageContent: "a recipe for rye bread"}, {PageContent: "rain is expected tomorrow"}}
	ctx := context.Background()
	if _, err := store.AddDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		got, err := store.SimilaritySearch(ctx, d.PageContent, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].PageContent != d.PageContent || got[0].Score < 0.9999 || got[1].Score >= got[0].Score {
			t.Errorf("query %q: found %+v", d.PageContent, got)
		}
	}

	llm, _ := scripted(t, "It fell.")
	qa := chains.NewRetrievalQAFromLLM(llm, vectorstores.ToRetriever(store, 1))
	out, err := chains.Run(ctx, qa, "stock prices fell sharply")
	if err != nil || out != "It fell." {
		t.Errorf("retrieval QA: %q, %v", out, err)
	}
}
