package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func client(f *fixture, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(f.url + "/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0)}, opts...)...)
}

// TestOpenAICompletions drives /v1/completions with the official Go client:
// greedy outputs equal llama.cpp's, streamed or not, with usage.
func TestOpenAICompletions(t *testing.T) {
	f := newFixture(t, options{})
	c := client(f)
	ctx := context.Background()
	for i, rc := range loadCases(t) {
		want := f.text(rc.GreedyIDs)
		params := openai.CompletionNewParams{Model: modelName, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(rc.Prompt)},
			MaxTokens: openai.Int(int64(len(rc.GreedyIDs))), Temperature: openai.Float(0)}
		res, err := c.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Choices[0].Text; got != want {
			t.Errorf("case %d: text %q, want %q", i, got, want)
		}
		if res.Usage.PromptTokens != int64(len(rc.PromptIDs)) || res.Usage.CompletionTokens != int64(len(rc.GreedyIDs)) {
			t.Errorf("case %d: usage %+v, want %d prompt and %d completion tokens", i, res.Usage, len(rc.PromptIDs), len(rc.GreedyIDs))
		}
		if res.Choices[0].FinishReason != "length" || res.Object != "text_completion" {
			t.Errorf("case %d: finish %q object %q", i, res.Choices[0].FinishReason, res.Object)
		}

		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		stream := c.Completions.NewStreaming(ctx, params)
		var text strings.Builder
		finish, usageChunks := "", 0
		for stream.Next() {
			ch := stream.Current()
			if ch.JSON.Usage.Valid() && len(ch.Choices) == 0 {
				usageChunks++
				if ch.Usage.CompletionTokens != int64(len(rc.GreedyIDs)) {
					t.Errorf("case %d: streamed usage %+v", i, ch.Usage)
				}
				continue
			}
			for _, chc := range ch.Choices {
				text.WriteString(chc.Text)
				if chc.FinishReason != "" {
					finish = string(chc.FinishReason)
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if text.String() != want || finish != "length" || usageChunks != 1 {
			t.Errorf("case %d: streamed %q finish %q usage chunks %d; want %q, length, 1", i, text.String(), finish, usageChunks, want)
		}
	}
}

// TestOpenAIChat drives /v1/chat/completions: streaming (role delta first,
// then content, finish_reason, a usage chunk with no choices), n > 1 with a
// seed, stop strings that never leak, logprobs.
func TestOpenAIChat(t *testing.T) {
	f := newFixture(t, options{})
	c := client(f)
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You tell stories."), openai.UserMessage("Once upon a time")}
	base := openai.ChatCompletionNewParams{Model: modelName, Messages: msgs, MaxTokens: openai.Int(40), Temperature: openai.Float(0)}

	res, err := c.Chat.Completions.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	full := res.Choices[0].Message.Content
	if full == "" || res.Choices[0].Message.Role != "assistant" || res.Usage.CompletionTokens == 0 {
		t.Fatalf("chat response %+v", res)
	}

	checkChatStream(t, c, base, res)
	checkChatStop(t, c, base, full)
	checkChatSeededN(t, c, base)
	checkChatLogprobs(t, c, base)
}

// checkChatStream: streaming gives res's text, the role first, a finish
// reason and a usage chunk.
func checkChatStream(t *testing.T, c openai.Client, base openai.ChatCompletionNewParams, res *openai.ChatCompletion) {
	t.Helper()
	ctx := context.Background()
	full := res.Choices[0].Message.Content
	// Streaming gives the same text.
	p := base
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, p)
	var text strings.Builder
	first, finish, usage := true, "", int64(0)
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) == 0 {
			usage = ch.Usage.CompletionTokens
			continue
		}
		d := ch.Choices[0]
		if first && d.Delta.Role != "assistant" {
			t.Errorf("first chunk has role %q, want assistant", d.Delta.Role)
		}
		first = false
		text.WriteString(d.Delta.Content)
		if d.FinishReason != "" {
			finish = d.FinishReason
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != full || finish == "" || usage != res.Usage.CompletionTokens {
		t.Errorf("streamed %q (finish %q, usage %d), want %q (usage %d)", text.String(), finish, usage, full, res.Usage.CompletionTokens)
	}
}

// checkChatStop: a stop string from the middle of full ends the text just
// before it, whole and streamed.
func checkChatStop(t *testing.T, c openai.Client, base openai.ChatCompletionNewParams, full string) {
	t.Helper()
	ctx := context.Background()
	// A stop string taken from the middle of the text ends it just before.
	words := strings.Fields(full)
	stop := words[len(words)/2]
	cut := full[:strings.Index(full, stop)]
	for _, streaming := range []bool{false, true} {
		p := base
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"zzz-never", stop}}
		got, reason := "", ""
		if streaming {
			s := c.Chat.Completions.NewStreaming(ctx, p)
			for s.Next() {
				if ch := s.Current(); len(ch.Choices) > 0 {
					got += ch.Choices[0].Delta.Content
					if ch.Choices[0].FinishReason != "" {
						reason = ch.Choices[0].FinishReason
					}
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			r, err := c.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			got, reason = r.Choices[0].Message.Content, r.Choices[0].FinishReason
		}
		if got != cut || reason != "stop" {
			t.Errorf("stop %q (streaming %v): got %q (%s), want %q (stop)", stop, streaming, got, reason, cut)
		}
	}
}

// checkChatSeededN: n = 2 sampled with a seed gives two different choices,
// the same twice.
func checkChatSeededN(t *testing.T, c openai.Client, base openai.ChatCompletionNewParams) {
	t.Helper()
	ctx := context.Background()
	// n = 2 sampled with a seed: two choices, reproducible.
	p := base
	p.N, p.Seed, p.Temperature = openai.Int(2), openai.Int(42), openai.Float(1)
	r1, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Choices) != 2 || r1.Choices[0].Message.Content == r1.Choices[1].Message.Content {
		t.Errorf("n=2: %d choices, %q and %q should differ", len(r1.Choices), r1.Choices[0].Message.Content, r1.Choices[len(r1.Choices)-1].Message.Content)
	}
	for i := range r1.Choices {
		if r1.Choices[i].Message.Content != r2.Choices[i].Message.Content {
			t.Errorf("seeded choice %d differs between runs", i)
		}
	}
}

// checkChatLogprobs: logprobs with top_logprobs under greedy decoding.
func checkChatLogprobs(t *testing.T, c openai.Client, base openai.ChatCompletionNewParams) {
	t.Helper()
	ctx := context.Background()
	// Logprobs: one entry per token, top_logprobs alternatives, the chosen
	// token first among them under greedy decoding.
	p := base
	p.Logprobs, p.TopLogprobs = openai.Bool(true), openai.Int(3)
	r, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	lp := r.Choices[0].Logprobs.Content
	if int64(len(lp)) != r.Usage.CompletionTokens {
		t.Fatalf("%d logprob entries for %d tokens", len(lp), r.Usage.CompletionTokens)
	}
	for i, e := range lp {
		if len(e.TopLogprobs) != 3 || e.TopLogprobs[0].Token != e.Token || e.Logprob > 0 || e.Logprob != e.TopLogprobs[0].Logprob {
			t.Fatalf("logprobs entry %d: %+v", i, e)
		}
	}
}

// TestOpenAICompletionOptions: logprobs, echo, n and a prompt of token ids
// through the completions API.
func TestOpenAICompletionOptions(t *testing.T) {
	f := newFixture(t, options{})
	c := client(f)
	ctx := context.Background()
	rc := loadCases(t)[0]
	want := f.text(rc.GreedyIDs[:8])

	res, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: modelName,
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: toInt64(rc.PromptIDs)}, MaxTokens: openai.Int(8),
		Temperature: openai.Float(0), Logprobs: openai.Int(2), N: openai.Int(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 2 {
		t.Fatalf("%d choices", len(res.Choices))
	}
	for _, ch := range res.Choices {
		lp := ch.Logprobs
		if ch.Text != want || len(lp.Tokens) != 8 || len(lp.TokenLogprobs) != 8 || len(lp.TopLogprobs) != 8 || len(lp.TextOffset) != 8 {
			t.Fatalf("choice %d: %q with logprobs %+v", ch.Index, ch.Text, lp)
		}
		if strings.Join(lp.Tokens, "") != want || lp.TextOffset[0] != 0 || len(lp.TopLogprobs[0]) != 2 {
			t.Errorf("choice %d: tokens %q offsets %v top %v", ch.Index, lp.Tokens, lp.TextOffset, lp.TopLogprobs[0])
		}
	}

	res, err = c.Completions.New(ctx, openai.CompletionNewParams{Model: modelName,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(rc.Prompt)}, MaxTokens: openai.Int(8),
		Temperature: openai.Float(0), Echo: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Text; got != rc.Prompt+want {
		t.Errorf("echo: %q, want %q", got, rc.Prompt+want)
	}
}

// TestStopAcrossTokens: a stop string that begins inside one token and ends
// inside the next is cut exactly, and none of it leaks, streamed or not.
func TestStopAcrossTokens(t *testing.T) {
	f := newFixture(t, options{})
	c := client(f)
	rc := loadCases(t)[0]
	full := f.text(rc.GreedyIDs)
	var stop string
	for i := 10; i+1 < len(rc.GreedyIDs) && stop == ""; i++ {
		a := f.text(rc.GreedyIDs[:i+1])[len(f.text(rc.GreedyIDs[:i])):]
		b := f.text(rc.GreedyIDs[:i+2])[len(f.text(rc.GreedyIDs[:i+1])):]
		if len(a) >= 2 && len(b) >= 2 {
			stop = a[len(a)-2:] + b[:2]
		}
	}
	if stop == "" {
		t.Fatal("no pair of tokens to split a stop string over")
	}
	cut := full[:strings.Index(full, stop)]
	params := openai.CompletionNewParams{Model: modelName, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(rc.Prompt)},
		MaxTokens: openai.Int(int64(len(rc.GreedyIDs))), Temperature: openai.Float(0),
		Stop: openai.CompletionNewParamsStopUnion{OfString: openai.String(stop)}}
	res, err := c.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Text != cut || res.Choices[0].FinishReason != "stop" {
		t.Errorf("stop %q: %q (%s), want %q", stop, res.Choices[0].Text, res.Choices[0].FinishReason, cut)
	}
	stream := c.Completions.NewStreaming(context.Background(), params)
	var got strings.Builder
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			got.WriteString(ch.Text)
		}
	}
	if err := stream.Err(); err != nil || got.String() != cut {
		t.Errorf("streamed with stop %q: %q (%v), want %q", stop, got.String(), err, cut)
	}
}

func toInt64(ids []int32) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

// weatherParams is a chat request with one user message and a get_weather
// tool taking a city, as the tool-call tests send it through openai-go.
func weatherParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: modelName, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather",
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})}}
}

// accumulate streams params through oc and returns what openai-go's
// accumulator made of the chunks.
func accumulate(t *testing.T, oc openai.Client, params openai.ChatCompletionNewParams) openai.ChatCompletionAccumulator {
	t.Helper()
	stream := oc.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return acc
}
