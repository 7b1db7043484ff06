package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/internal/cudaemu"
	"github.com/troupe-llm/troupe/messages"
)

// grammarModels are the shared models the grammar tests sample from.
// TinyStories-656K's 2048 tokens have no braces or brackets (and no byte
// tokens): its JSON schema asks for a string or a number.
var grammarModels = []struct {
	path, schema string
}{
	{"stories260K.gguf", `{"type": "object", "properties": {
		"name": {"type": "string", "maxLength": 12},
		"age": {"type": "integer", "minimum": 0, "maximum": 120},
		"tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
		"ok": {"type": "boolean"}},
		"required": ["name", "age", "tags", "ok"], "additionalProperties": false}`},
	{"TinyStories-656K-Q8_0.gguf", `{"anyOf": [{"type": "string", "maxLength": 16}, {"type": "integer", "minimum": -50, "maximum": 99}]}`},
}

// grammarCase is a grammar and a check that an output (finished with
// "stop") is in its language.
type grammarCase struct {
	name    string
	grammar messages.Grammar
	valid   func(t *testing.T, out string) error
}

func grammarCases(t *testing.T, schema string) []grammarCase {
	matches := func(re string) func(*testing.T, string) error {
		r := regexp.MustCompile(`^(?:` + re + `)$`)
		return func(_ *testing.T, out string) error {
			if !r.MatchString(out) {
				return fmt.Errorf("does not match %s", re)
			}
			return nil
		}
	}
	choices := []string{"yes", "no", "maybe so", "Once upon a time"}
	src, _ := json.Marshal(choices)
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	val, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return []grammarCase{
		{"regex", messages.Grammar{Kind: messages.GrammarRegex, Source: `[A-Z][a-z]{1,6}( [a-z]{1,6}){1,3}\.`},
			matches(`[A-Z][a-z]{1,6}( [a-z]{1,6}){1,3}\.`)},
		{"choice", messages.Grammar{Kind: messages.GrammarChoice, Source: string(src)},
			func(_ *testing.T, out string) error {
				if !slices.Contains(choices, out) {
					return fmt.Errorf("is none of %q", choices)
				}
				return nil
			}},
		{"json_schema", messages.Grammar{Kind: messages.GrammarJSONSchema, Source: schema},
			func(_ *testing.T, out string) error {
				inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
				if err != nil {
					return fmt.Errorf("does not parse: %v", err)
				}
				return val.Validate(inst)
			}},
		{"gbnf", messages.Grammar{Kind: messages.GrammarGBNF, Source: `root ::= "Tom " verb " " num "."
verb ::= "ran" | "saw" | "had"
num ::= [1-9] [0-9]?`},
			matches(`Tom (ran|saw|had) [1-9][0-9]?\.`)},
	}
}

// TestGrammarOutputs: at temperature 1.0 with n=4, every choice of every
// kind of grammar ends with "stop" (the grammar ended) and its text is in
// the grammar's language; the same request without the grammar is not.
func TestGrammarOutputs(t *testing.T) {
	noLeaks(t)
	for _, gm := range grammarModels {
		path := gm.path
		m := openModel(t, path)
		rt := start(t, m, actors.Config{})
		prompt, err := rt.Tokenize("Once upon a time")
		if err != nil {
			t.Fatal(err)
		}
		for _, gc := range grammarCases(t, gm.schema) {
			t.Run(path+"/"+gc.name, func(t *testing.T) {
				req := &messages.GenerateRequest{Prompt: prompt, MaxTokens: 200, N: 4, Grammar: &gc.grammar,
					Sampling: messages.SamplingParams{Temperature: 1, Seed: 7, HasSeed: true}}
				r := run(t, rt, req)
				for i := range 4 {
					if r.finish[i] != messages.FinishStop {
						t.Errorf("choice %d finished %q (%s) after %q", i, r.finish[i], r.errs[i], r.text[i])
						continue
					}
					if err := gc.valid(t, r.text[i]); err != nil {
						t.Errorf("choice %d: %q %v", i, r.text[i], err)
					}
				}
				t.Logf("%q", r.text)
				free := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 40,
					Sampling: messages.SamplingParams{Temperature: 1, Seed: 7, HasSeed: true}})
				if gc.valid(t, free.text[0]) == nil {
					t.Errorf("without the grammar, the output %q is valid too: the test cannot fail", free.text[0])
				}
			})
		}
		st := rt.GrammarStats()
		t.Logf("%s: %+v", path, st)
		if st.Masks == 0 || st.MaskHits == 0 {
			t.Errorf("grammar stats %+v: want masks and cache hits", st)
		}
	}
}

// TestGrammarStop: a grammar that ends finishes the choice with "stop" at
// once, with the grammar's text and no more tokens, and its batcher entry
// and blocks are freed (start's cleanup checks them).
func TestGrammarStop(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	rt := start(t, m, actors.Config{})
	prompt, _ := rt.Tokenize("Once")
	r := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 100, Grammar: &messages.Grammar{Kind: messages.GrammarRegex, Source: "upon a time"}})
	if r.finish[0] != messages.FinishStop || r.text[0] != "upon a time" {
		t.Fatalf("got %q finish %q (%s), want %q and stop", r.text[0], r.finish[0], r.errs[0], "upon a time")
	}
	if r.usage.CompletionTokens != len(r.ids[0]) || len(r.ids[0]) > len("upon a time") {
		t.Errorf("%d tokens %v, usage %+v", len(r.ids[0]), r.ids[0], r.usage)
	}
	checkIdle(t, rt)
}

// TestGrammarCompileError: a grammar that does not compile ends every
// choice with an error naming the problem; CompileGrammar reports it as an
// invalid request; the runtime serves the next request.
func TestGrammarCompileError(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	rt := start(t, m, actors.Config{})
	prompt, _ := rt.Tokenize("Once")
	for _, g := range []messages.Grammar{
		{Kind: messages.GrammarGBNF, Source: `root ::= undefined-rule`},
		{Kind: messages.GrammarJSONSchema, Source: `{"type": "sound"}`},
		{Kind: messages.GrammarChoice, Source: `not json`},
		{Kind: "yaml", Source: `a: b`},
	} {
		r := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 10, N: 2, Grammar: &g})
		for i := range 2 {
			if r.finish[i] != messages.FinishError || !strings.Contains(r.errs[i], g.Kind) || len(r.ids[i]) != 0 {
				t.Errorf("%s %q: choice %d finished %q (%q) with %v", g.Kind, g.Source, i, r.finish[i], r.errs[i], r.ids[i])
			}
		}
		if err := rt.CompileGrammar(&g); !errors.Is(err, actors.ErrInvalidRequest) {
			t.Errorf("%s %q: CompileGrammar: %v, want an invalid request", g.Kind, g.Source, err)
		}
	}
	if err := rt.CompileGrammar(&messages.Grammar{Kind: messages.GrammarJSONObject}); err != nil {
		t.Errorf("json_object: %v", err)
	}
	if r := run(t, rt, greedy(prompt, 5)); r.finish[0] != messages.FinishLength {
		t.Errorf("after the errors: finish %q %s", r.finish[0], r.errs[0])
	}
}

// TestGrammarSlowCompile: while a grammar compiles (held until the test
// says), its request waits and others run: a plain request and a request
// under another grammar complete; CompileGrammar of the same grammar waits
// for the same compile. Then the held request completes too.
func TestGrammarSlowCompile(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	rt := start(t, m, actors.Config{})
	gate := make(chan struct{})
	entered := make(chan struct{}, 4)
	actors.SetGrammarCompiler(rt, func(g *messages.Grammar) (*grammar.Grammar, error) {
		if g.Source == "slow" {
			entered <- struct{}{}
			<-gate
			return grammar.FromRegex("slow and steady")
		}
		return actors.CompileSource(g)
	})
	prompt, _ := rt.Tokenize("Once")
	slow, err := rt.Stream(context.Background(), &messages.GenerateRequest{Prompt: prompt, MaxTokens: 50, N: 2,
		Grammar: &messages.Grammar{Kind: messages.GrammarRegex, Source: "slow"}})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	compiled := make(chan error, 1)
	go func() { compiled <- rt.CompileGrammar(&messages.Grammar{Kind: messages.GrammarRegex, Source: "slow"}) }()

	if r := run(t, rt, greedy(prompt, 20)); r.finish[0] != messages.FinishLength || len(r.ids[0]) != 20 {
		t.Errorf("plain request: finish %q %s, %d tokens", r.finish[0], r.errs[0], len(r.ids[0]))
	}
	r := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 50, Grammar: &messages.Grammar{Kind: messages.GrammarRegex, Source: "fast"}})
	if r.finish[0] != messages.FinishStop || r.text[0] != "fast" {
		t.Errorf("another grammar: %q finish %q %s", r.text[0], r.finish[0], r.errs[0])
	}
	select {
	case c := <-slow:
		t.Fatalf("the slow grammar's request gave %+v before its compile ended", c)
	case err := <-compiled:
		t.Fatalf("CompileGrammar returned %v before the compile ended", err)
	default:
	}
	if st, _ := rt.Stats(timeout); st.Running+st.Waiting != 0 {
		t.Errorf("the waiting sequences are in the schedule: %+v", st)
	}
	close(gate)
	if err := <-compiled; err != nil {
		t.Error(err)
	}
	res := collect(t, slow, 2)
	for i := range 2 {
		if res.finish[i] != messages.FinishStop || res.text[i] != "slow and steady" {
			t.Errorf("choice %d: %q finish %q %s", i, res.text[i], res.finish[i], res.errs[i])
		}
	}
	if len(entered) != 0 {
		t.Error("the slow grammar compiled more than once")
	}
}

// TestGrammarInvariance: a seeded request under a grammar gives the same
// tokens alone, among 5 other requests (some under the same grammar), and
// with a KV pool so small that it is preempted by recompute or by swap.
func TestGrammarInvariance(t *testing.T) {
	noLeaks(t)
	m, cases := stories(t)
	g := &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: `{"type": "array", "items": {"type": "string", "maxLength": 10}, "minItems": 2, "maxItems": 4}`}
	var reqs []*messages.GenerateRequest
	for i := range 6 {
		c := cases[i%len(cases)]
		req := &messages.GenerateRequest{Prompt: slices.Clone(c.PromptIDs), MaxTokens: 120, N: 1,
			Sampling: messages.SamplingParams{Temperature: 1, Seed: uint64(i), HasSeed: true}}
		if i%3 != 2 {
			req.Grammar = g
		}
		reqs = append(reqs, req)
	}
	alone := start(t, m, actors.Config{})
	var want []*result
	for _, req := range reqs {
		want = append(want, run(t, alone, copyReq(req)))
	}
	for i, w := range want {
		if reqs[i].Grammar != nil && (w.finish[0] != messages.FinishStop || !json.Valid([]byte(w.text[0]))) {
			t.Errorf("request %d alone: %q finish %q %s", i, w.text[0], w.finish[0], w.errs[0])
		}
	}
	for _, cfg := range []struct {
		name string
		cfg  actors.Config
	}{
		{"batch", actors.Config{MaxNumBatchedTokens: 24}},
		{"recompute", actors.Config{NumBlocks: 10, Preemption: sched.Recompute}},
		{"swap", actors.Config{NumBlocks: 10, NumHostBlocks: 16, Preemption: sched.Swap}},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			rt, got := startQueued(t, m, cfg.cfg, reqs) // every request queued before the first step
			for i, r := range got {
				if !slices.Equal(r.ids[0], want[i].ids[0]) || r.text[0] != want[i].text[0] || r.finish[0] != want[i].finish[0] {
					t.Errorf("request %d: %q %s, alone %q %s", i, r.text[0], r.finish[0], want[i].text[0], want[i].finish[0])
				}
			}
			st := stats(t, rt)
			t.Logf("preemptions %d, swap-outs %d, steps %d", st.Preemptions, st.SwapOuts, st.Steps)
			if cfg.name != "batch" && st.Preemptions == 0 {
				t.Error("no preemption: the pool is not small enough for the test to mean anything")
			}
			if cfg.name == "swap" && st.SwapOuts == 0 {
				t.Error("no swap-out")
			}
		})
	}
}

// TestGrammarCancelWaiting: a request cancelled while its grammar compiles
// ends at once, and the compile's late answer is ignored.
func TestGrammarCancelWaiting(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	rt := start(t, m, actors.Config{})
	gate, compiling := make(chan struct{}), make(chan struct{}, 1)
	actors.SetGrammarCompiler(rt, func(g *messages.Grammar) (*grammar.Grammar, error) {
		select {
		case compiling <- struct{}{}:
		default:
		}
		<-gate
		return actors.CompileSource(g)
	})
	prompt, _ := rt.Tokenize("Once")
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := rt.Stream(ctx, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 10, Grammar: &messages.Grammar{Kind: messages.GrammarRegex, Source: "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	select { // the request waits for its compile
	case <-compiling:
	case <-time.After(gateWait):
		t.Fatal("the grammar never started compiling")
	}
	cancel()
	r := collect(t, ch, 1)
	if r.finish[0] != messages.FinishCancelled {
		t.Errorf("finish %q %s", r.finish[0], r.errs[0])
	}
	close(gate)
	if err := rt.CompileGrammar(&messages.Grammar{Kind: messages.GrammarRegex, Source: "abc"}); err != nil {
		t.Error(err)
	}
}

// TestGrammarVocabulary: control tokens are allowed only when their text
// is output (SpecialText), a grammar no token can follow ends the choice
// with an error (TinyStories-656K has no "{"), and end-of-generation
// tokens are allowed only where the grammar may end.
func TestGrammarVocabulary(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "TinyStories-656K-Q8_0.gguf")
	rt := start(t, m, actors.Config{})
	prompt, _ := rt.Tokenize("Once upon a time")
	const control = 1 // <|start_story|>
	if got := string(rt.TokenBytes(control)); got != "<|start_story|>" {
		t.Fatalf("token %d is %q", control, got)
	}
	g := &messages.Grammar{Kind: messages.GrammarGBNF, Source: `root ::= "<|start_story|>" [a-z ]{1,12} "."`}
	for _, special := range []bool{false, true} {
		sawControl := false
		for seed := range uint64(4) {
			r := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 60, Grammar: g, SpecialText: special,
				Sampling: messages.SamplingParams{Temperature: 1, Seed: seed, HasSeed: true, LogitBias: map[int32]float32{control: 20}}})
			if r.finish[0] != messages.FinishStop || !regexp.MustCompile(`^<\|start_story\|>[a-z ]{1,12}\.$`).MatchString(r.text[0]) {
				t.Errorf("special %v: %q finish %q %s", special, r.text[0], r.finish[0], r.errs[0])
			}
			sawControl = sawControl || slices.Contains(r.ids[0], control)
		}
		if sawControl != special {
			t.Errorf("special %v: the control token was sampled: %v (with a logit bias of 20)", special, sawControl)
		}
	}
	r := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 10, Grammar: &messages.Grammar{Kind: messages.GrammarJSONObject}})
	if r.finish[0] != messages.FinishError || !strings.Contains(r.errs[0], "no token") {
		t.Errorf("json_object without braces in the vocabulary: %q finish %q %s", r.text[0], r.finish[0], r.errs[0])
	}
	// Stuck after some output: the choice ends with what it had, even text
	// held back for a stop string.
	r = run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 10, Stop: []string{"ab"},
		Grammar: &messages.Grammar{Kind: messages.GrammarRegex, Source: `a\{`}})
	if r.finish[0] != messages.FinishError || !strings.Contains(r.errs[0], "no token") || r.text[0] != "a" {
		t.Errorf("no brace after a: %q finish %q %s", r.text[0], r.finish[0], r.errs[0])
	}
	// With the end of generation pushed hard: letters must come first
	// (EOS is masked off before the third one), then EOS ends the output
	// at the first token where the grammar may end.
	eos := map[int32]float32{}
	for id := range int32(rt.VocabSize()) {
		if string(rt.TokenBytes(id)) == "<|end_story|>" {
			eos[id] = 30
		}
	}
	for seed := range uint64(4) {
		r := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 20, Grammar: &messages.Grammar{Kind: messages.GrammarRegex, Source: `[a-z]{3}[a-z]*`},
			Sampling: messages.SamplingParams{Temperature: 1, Seed: seed, HasSeed: true, LogitBias: eos}})
		ids := r.ids[0]
		if r.finish[0] != messages.FinishStop || len(r.text[0]) < 3 || len(ids) == 0 {
			t.Errorf("EOS pushed: %q finish %q %s", r.text[0], r.finish[0], r.errs[0])
			continue
		}
		if before := len(r.text[0]) - len(rt.TokenBytes(ids[len(ids)-1])); before >= 3 {
			t.Errorf("EOS pushed: %q (%v) did not end at the first token that could end it", r.text[0], ids)
		}
	}
	// Under IgnoreEOS the end of generation is never allowed: the output
	// goes on to max_tokens.
	r = run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 12, IgnoreEOS: true, Grammar: &messages.Grammar{Kind: messages.GrammarRegex, Source: `[a-z]{3}[a-z]*`},
		Sampling: messages.SamplingParams{Temperature: 1, Seed: 1, HasSeed: true, LogitBias: eos}})
	if r.finish[0] != messages.FinishLength || len(r.ids[0]) != 12 || !regexp.MustCompile(`^[a-z]{3,}$`).MatchString(r.text[0]) {
		t.Errorf("EOS pushed, ignored: %q (%d tokens) finish %q %s", r.text[0], len(r.ids[0]), r.finish[0], r.errs[0])
	}
}

// TestGrammarGreedyOnGPU: greedy requests under a grammar on the CUDA
// device (or its emulator) follow the grammar: a masked row is never
// argmaxed on the device, where the mask would not be applied.
func TestGrammarGreedyOnGPU(t *testing.T) {
	cudaemu.Require(t) // a device or the emulator: under CI=true, a failure without
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	rt := start(t, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCUDA)})
	prompt, _ := rt.Tokenize("Once upon a time")
	for _, gc := range grammarCases(t, grammarModels[0].schema) {
		if gc.name == "json_schema" && cudaemu.Active() {
			continue // long on the emulator; the others show the path
		}
		r := run(t, rt, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 120, N: 2, Grammar: &gc.grammar})
		for i := range 2 {
			if r.finish[i] != messages.FinishStop {
				t.Errorf("%s: choice %d finished %q (%s) after %q", gc.name, i, r.finish[i], r.errs[i], r.text[i])
			} else if err := gc.valid(t, r.text[i]); err != nil {
				t.Errorf("%s: choice %d: %q %v", gc.name, i, r.text[i], err)
			}
		}
	}
}

// TestCompileGrammarStopped: after Stop, CompileGrammar says so.
func TestCompileGrammarStopped(t *testing.T) {
	noLeaks(t)
	m := openModel(t, "stories260K.gguf")
	rt, err := actors.Start(newSystem(t), m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU)})
	if err != nil {
		t.Fatal(err)
	}
	g := &messages.Grammar{Kind: messages.GrammarRegex, Source: "a+"}
	if err := rt.CompileGrammar(g); err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(timeout); err != nil {
		t.Fatal(err)
	}
	if err := rt.CompileGrammar(g); !errors.Is(err, actors.ErrStopped) {
		t.Errorf("after Stop: %v, want ErrStopped", err)
	}
}
