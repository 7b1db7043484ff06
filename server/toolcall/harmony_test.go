package toolcall

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/grammar"
)

// harmonyCases are gpt-oss outputs as the server's text holds them: the
// prompt ended with "<|start|>assistant"; <|return|> and <|call|> end the
// generation and are not in the text (but a text may still hold them).
var harmonyCases = []struct {
	name    string
	in      string
	noCalls bool
	want    Result
}{
	{"analysis then final",
		"<|channel|>analysis<|message|>Paris is in France.<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.",
		false, Result{Reasoning: "Paris is in France.", Content: "It is sunny."}},
	{"final ended by return",
		"<|channel|>final<|message|>Hi there.<|return|>",
		false, Result{Content: "Hi there."}},
	{"analysis then a call",
		`<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}`,
		false, Result{Reasoning: "Need the weather.", Calls: []Call{call("get_weather", `{"city": "Paris"}`)}}},
	{"a call ended by call",
		`<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>`,
		false, Result{Calls: []Call{call("get_weather", `{"city":"Paris"}`)}}},
	{"recipient in the role's header",
		`<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{"a": [1, {"b": null}]}`,
		false, Result{Reasoning: "x", Calls: []Call{call("f", `{"a": [1, {"b": null}]}`)}}},
	{"recipient first, at the output's start",
		` to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"city": "Oslo"}`,
		false, Result{Calls: []Call{call("get_weather", `{"city": "Oslo"}`)}}},
	{"constrain right after the name",
		`<|channel|>commentary to=functions.get_time<|constrain|>json<|message|>{}`,
		false, Result{Calls: []Call{call("get_time", `{}`)}}},
	{"no content type",
		`<|channel|>commentary to=functions.get_time<|message|>{}`,
		false, Result{Calls: []Call{call("get_time", `{}`)}}},
	{"analysis channel call",
		`<|channel|>analysis to=functions.lookup <|constrain|>json<|message|>{"q": "x"}`,
		false, Result{Calls: []Call{call("lookup", `{"q": "x"}`)}}},
	{"preamble then a call",
		`<|channel|>analysis<|message|>Check it.<|end|><|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}`,
		false, Result{Reasoning: "Check it.", Content: "Let me check.", Calls: []Call{call("get_weather", `{"city": "Paris"}`)}}},
	{"two calls",
		`<|channel|>commentary to=functions.a <|constrain|>json<|message|>{"x": 1}<|call|><|start|>assistant<|channel|>commentary to=functions.b <|constrain|>json<|message|>{}<|call|>`,
		false, Result{Calls: []Call{call("a", `{"x": 1}`), call("b", `{}`)}}},
	{"stray commentary before analysis",
		"<|channel|>commentary<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final<|message|>Done.",
		false, Result{Reasoning: "Hmm.", Content: "Done."}},
	{"stray to=assistant",
		"<|channel|>commentary to=assistant<|channel|>final<|message|>Done.",
		false, Result{Content: "Done."}},
	{"two analysis messages",
		"<|channel|>analysis<|message|>One.<|end|><|start|>assistant<|channel|>analysis<|message|> Two.<|end|><|start|>assistant<|channel|>final<|message|>Three.",
		false, Result{Reasoning: "One. Two.", Content: "Three."}},
	{"a built-in tool's message is dropped",
		`<|channel|>analysis<|message|>Search.<|end|><|start|>assistant<|channel|>analysis to=browser.search code<|message|>{"query": "x"}<|call|>`,
		false, Result{Reasoning: "Search."}},
	{"python is dropped, then text",
		"<|channel|>analysis to=python code<|message|>print(1)<|end|><|start|>assistant<|channel|>final<|message|>1",
		false, Result{Content: "1"}},
	{"a call without tools is dropped",
		`<|channel|>analysis<|message|>Call.<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}`,
		true, Result{Reasoning: "Call."}},
	{"reasoning without tools",
		"<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Say.",
		true, Result{Reasoning: "Think.", Content: "Say."}},
	{"plain text", "Hello there.", false, Result{Content: "Hello there."}},
	{"JSON content (a format's grammar)", `{"sunny": true}`, false, Result{Content: `{"sunny": true}`}},
	{"markers inside a final message's text",
		"<|channel|>final<|message|>Use a <b>tag</b> and a | pipe, <| not a marker.",
		false, Result{Content: "Use a <b>tag</b> and a | pipe, <| not a marker."}},
	{"args holding marker text",
		`<|channel|>commentary to=functions.echo <|constrain|>json<|message|>{"s": "<|end|> and <|call|>"}`,
		false, Result{Calls: []Call{call("echo", `{"s": "<|end|> and <|call|>"}`)}}},

	// Unfinished or malformed: content, never lost.
	{"cut in the analysis",
		"<|channel|>analysis<|message|>I am thin",
		false, Result{Reasoning: "I am thin"}},
	{"cut in a header",
		"<|channel|>analysis<|message|>T<|end|><|start|>assistant<|channel|>fin",
		false, Result{Reasoning: "T", Content: "<|start|>assistant<|channel|>fin"}},
	{"cut in the arguments",
		`<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": 1`,
		false, Result{Content: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": 1`}},
	{"arguments not JSON",
		`<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": }<|call|>`,
		false, Result{Content: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": }<|call|>`}},
	{"arguments not an object",
		`<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1, 2]<|end|><|start|>assistant<|channel|>final<|message|>ok`,
		false, Result{Content: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1, 2]<|end|>ok`}},
	{"text after the arguments",
		`<|channel|>commentary to=functions.f <|constrain|>json<|message|>{} and more`,
		false, Result{Content: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{} and more`}},
	{"no function name",
		`<|channel|>commentary to=functions. <|constrain|>json<|message|>{}`,
		false, Result{Content: `<|channel|>commentary to=functions. <|constrain|>json<|message|>{}`}},
	{"a header ended before its message",
		"<|channel|>analysis<|end|>then text",
		false, Result{Content: "<|channel|>analysisthen text"}},
	{"another role's header",
		"<|start|>user<|message|>hi",
		false, Result{Content: "<|start|>user<|message|>hi"}},
	{"a header on two lines",
		"<|channel|>final\nx<|message|>y",
		false, Result{Content: "<|channel|>final\nx<|message|>y"}},
	{"a long header", "<|channel|>" + strings.Repeat("a", maxHarmonyHeader) + "<|message|>z",
		false, Result{Content: "<|channel|>" + strings.Repeat("a", maxHarmonyHeader) + "<|message|>z"}},
	{"only markers", "<|start|><|channel|><|message|><|call|>", false, Result{Content: "<|start|><|channel|><|message|>"}},
	{"empty", "", false, Result{}},
}

// TestHarmony: each output parses to its reasoning, content and calls,
// whole and streamed in every split (two pieces cut at every byte, one
// byte at a time, random chunks), and a stream's deltas come in OpenAI's
// order.
func TestHarmony(t *testing.T) {
	for _, tc := range harmonyCases {
		t.Run(tc.name, func(t *testing.T) {
			parser := func() *Parser { return &Parser{Format: OpenAI, NoCalls: tc.noCalls, NewID: counter()} }
			got := parser().Parse(tc.in)
			checkResult(t, got, tc.want)
			sameResult(t, "whole", collect(t, parser(), []string{tc.in}), got)
			var bytes []string
			for i := range len(tc.in) {
				bytes = append(bytes, tc.in[i:i+1])
			}
			sameResult(t, "byte by byte", collect(t, parser(), bytes), got)
			for cut := 1; cut < len(tc.in); cut++ {
				sameResult(t, fmt.Sprintf("split at %d", cut), collect(t, parser(), []string{tc.in[:cut], tc.in[cut:]}), got)
			}
		})
	}
}

// TestHarmonyStreamOrder: streamed, the reasoning comes as it is written,
// then the content, then the call (its id and name, then its arguments);
// nothing of a header leaks into either.
func TestHarmonyStreamOrder(t *testing.T) {
	st := (&Parser{Format: OpenAI, NewID: counter()}).NewStream()
	var got []string
	for _, piece := range []string{"<|channel|>", "analysis", "<|message|>", "Need", " weather.", "<|end|>",
		"<|start|>", "assistant", "<|channel|>", "commentary", "<|message|>", "Checking.", "<|end|>",
		"<|start|>", "assistant", "<|channel|>", "commentary", " to", "=functions", ".get", "_weather", " ",
		"<|constrain|>", "json", "<|message|>", `{"`, `city`, `": "`, `Paris`, `"}`} {
		for _, d := range st.Write(piece) {
			got = append(got, deltaText(d))
		}
	}
	for _, d := range st.Close() {
		got = append(got, deltaText(d))
	}
	want := []string{"R:Need", "R: weather.", "C:Checking.", "call 0 call_1 get_weather", `args 0 {"city": "Paris"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("deltas\n%q\nwant\n%q", got, want)
	}
}

func deltaText(d Delta) string {
	switch {
	case d.Call != nil && d.Call.ID != "":
		return fmt.Sprintf("call %d %s %s", d.Call.Index, d.Call.ID, d.Call.Name)
	case d.Call != nil:
		return fmt.Sprintf("args %d %s", d.Call.Index, d.Call.Arguments)
	case d.Reasoning != "":
		return "R:" + d.Reasoning
	}
	return "C:" + d.Content
}

// TestAnswerGrammar: a constrained answer's grammar, for harmony, lets
// the model write analysis messages and the final channel's header before
// the answer; what it allows (written cases and random samples) parses to
// the reasoning and the answer as content. Other formats keep their answer
// bare.
func TestAnswerGrammar(t *testing.T) {
	inner := []byte(`{"type": "object", "properties": {"sunny": {"type": "boolean"}}, "required": ["sunny"]}`)
	src, ok, err := AnswerGrammar(OpenAI, inner, nil)
	if err != nil || !ok {
		t.Fatalf("AnswerGrammar: %v %v", ok, err)
	}
	g, err := grammar.Compile(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	v := byteVocab(t)
	accepts := func(out string) bool {
		m, err := g.NewMatcher(v)
		if err != nil {
			t.Fatal(err)
		}
		return m.AcceptBytes([]byte(out)) == nil && m.CanEnd()
	}
	p := &Parser{Format: OpenAI, NoCalls: true}
	for _, tc := range []struct {
		out  string
		ok   bool
		want Result
	}{
		{`<|channel|>final<|message|>{"sunny": true}`, true, Result{Content: `{"sunny": true}`}},
		{`<|channel|>analysis<|message|>Look outside.<|end|><|start|>assistant<|channel|>final <|constrain|>json<|message|>{"sunny": false}`, true,
			Result{Reasoning: "Look outside.", Content: `{"sunny": false}`}},
		{`<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|><|start|>assistant<|channel|>final json<|message|>{"sunny": true}`, true,
			Result{Reasoning: "ab", Content: `{"sunny": true}`}},
		{`{"sunny": true}`, false, Result{}},
		{`<|channel|>final<|message|>{"sunny": 1}`, false, Result{}},
		{`<|channel|>analysis<|message|>a <|call|><|end|><|start|>assistant<|channel|>final<|message|>{"sunny": true}`, false, Result{}},
		{`<|channel|>commentary<|message|>{"sunny": true}`, false, Result{}},
	} {
		if got := accepts(tc.out); got != tc.ok {
			t.Errorf("%q: accepted %v, want %v", tc.out, got, tc.ok)
			continue
		}
		if tc.ok {
			checkResult(t, p.Parse(tc.out), tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		out := sample(t, g, v, rng)
		r := p.Parse(out)
		var answer struct{ Sunny *bool }
		if err := json.Unmarshal([]byte(r.Content), &answer); err != nil || answer.Sunny == nil {
			t.Fatalf("%q parses to %+v: the content is not the answer", out, r)
		}
	}
	if _, ok, err := AnswerGrammar(Hermes, inner, nil); ok || err != nil {
		t.Errorf("hermes: %v %v; want the answer kept bare", ok, err)
	}
}
