package actors_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/messages"
)

// The structured-output acceptance runs (issue 18): each grammar-constrained
// request samples n choices at this temperature with at most maxTokens each.
const (
	corpusN           = 4
	corpusTemperature = 1.0
	corpusMaxTokens   = 320
	corpusParallel    = 8 // requests in flight at once
)

// corpusModels are the shared models the acceptance runs on.
var corpusModels = []string{"stories260K.gguf", "TinyStories-656K-Q8_0.gguf"}

// choiceOutcome is what came of one choice of a constrained request.
type choiceOutcome struct {
	text, finish, err string
}

// generateConstrained runs one request under g and returns its choices.
func generateConstrained(rt *actors.Runtime, prompt []int32, g *messages.Grammar, seed uint64) ([]choiceOutcome, error) {
	req := &messages.GenerateRequest{
		Prompt: prompt, N: corpusN, MaxTokens: corpusMaxTokens, Grammar: g,
		Sampling: messages.SamplingParams{Temperature: corpusTemperature, Seed: seed, HasSeed: true},
	}
	outs := make([]choiceOutcome, corpusN)
	var texts [corpusN]strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := rt.Generate(ctx, req, func(c *messages.OutputChunk) error {
		if c.Index < 0 || c.Index >= corpusN {
			return nil
		}
		texts[c.Index].WriteString(c.Text)
		if c.FinishReason != "" {
			outs[c.Index].finish, outs[c.Index].err = c.FinishReason, c.Err
		}
		return nil
	})
	for i := range outs {
		outs[i].text = texts[i].String()
	}
	return outs, err
}

// corpusJob is one grammar to run with a check of each finished output
// ("" when it is right).
type corpusJob struct {
	name  string
	g     *messages.Grammar
	check func(out string) string
	// open: a schema taken as it is from the JSON Schema Test Suite, often
	// unbounded ({"type": "array"}, any value), or one of the corpus's own
	// named open-*, which a tiny model at temperature 1 may not close
	// within max_tokens. The corpus's other grammars are bounded.
	open bool
}

// corpusCounts tallies the choices of a model's run.
type corpusCounts struct {
	jobs, inexpressible     int // grammars run; skipped as no walk of the vocabulary finishes them
	stop, length, dead, bad int // choices: finished; cut by max_tokens; at a dead end of the vocabulary; wrong
	openJobs, openLength    int // of which open grammars and their choices cut
	cut                     map[string]int
}

func (n corpusCounts) String() string {
	var cut []string
	for name, c := range n.cut {
		cut = append(cut, fmt.Sprintf("%s %d", name, c))
	}
	slices.Sort(cut)
	return fmt.Sprintf("%d grammars run (%d open; %d not expressible in the vocabulary), x %d choices: %d finished (stop), %d cut by max_tokens %d (%d of open grammars) [%s], %d at a dead end, %d wrong",
		n.jobs, n.openJobs, n.inexpressible, corpusN, n.stop, n.length, corpusMaxTokens, n.openLength, strings.Join(cut, ", "), n.dead, n.bad)
}

// expressible reports whether some uniformly random walk over v's tokens
// finishes g: a model whose vocabulary cannot spell a grammar's language
// (TinyStories-656K has no braces, brackets or byte tokens) can only end
// at a dead end.
func expressible(t *testing.T, g *messages.Grammar, v *grammar.Vocab, seed uint64) bool {
	t.Helper()
	cg, err := actors.CompileSource(g)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 656))
	for range 16 {
		if _, st := walk(t, cg, v, r, 3000); st == walkFinished {
			return true
		}
	}
	return false
}

// runCorpus runs every job that rt's vocabulary can express, corpusParallel
// at a time, and reports each finished output that fails its check.
// Choices cut by max_tokens are counted apart: they are unfinished, not
// wrong; so are the rare choices that reach a state no token of the
// vocabulary continues (finish "error" with the runtime's dead-end error).
func runCorpus(t *testing.T, rt *actors.Runtime, jobs []corpusJob) corpusCounts {
	t.Helper()
	prompt, err := rt.Tokenize("Once upon a time, ")
	if err != nil {
		t.Fatal(err)
	}
	n := corpusCounts{cut: map[string]int{}}
	v := modelVocab(t, rt.Model().Tokenizer)
	var run []corpusJob
	for i, j := range jobs {
		if raceEnabled && i%4 != 0 {
			continue
		}
		if !expressible(t, j.g, v, uint64(i)) {
			n.inexpressible++
			t.Logf("%s: not expressible in the vocabulary, skipped", j.name)
			continue
		}
		run = append(run, j)
	}
	n.jobs = len(run)
	for _, j := range run {
		if j.open {
			n.openJobs++
		}
	}
	type result struct {
		outs []choiceOutcome
		err  error
	}
	results := make([]result, len(run))
	sem := make(chan struct{}, corpusParallel)
	var wg sync.WaitGroup
	for i, j := range run {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outs, err := generateConstrained(rt, prompt, j.g, uint64(1000+i))
			results[i] = result{outs, err}
		}()
	}
	wg.Wait()
	for i, j := range run {
		r := results[i]
		if r.err != nil {
			t.Errorf("%s: %v", j.name, r.err)
			continue
		}
		for c, o := range r.outs {
			switch {
			case o.finish == messages.FinishLength:
				n.length++
				n.cut[j.name]++
				if j.open {
					n.openLength++
				}
				continue
			case o.finish == messages.FinishError && strings.Contains(o.err, "no token of the vocabulary"):
				n.dead++
				t.Logf("%s choice %d: dead end after %q", j.name, c, o.text)
				continue
			case o.finish == messages.FinishStop:
				n.stop++
			default:
				t.Errorf("%s choice %d: finish %q (%s), output %q", j.name, c, o.finish, o.err, o.text)
				n.bad++
				continue
			}
			if why := j.check(o.text); why != "" {
				t.Errorf("%s choice %d: output %q %s", j.name, c, o.text, why)
				n.bad++
			}
		}
	}
	return n
}

// checkCounts fails a run where more than 5% of the choices of bounded
// grammars were cut by max_tokens ("nearly all finish"), where more than a
// quarter of the open grammars' choices were cut, where less than three
// quarters of all choices finished (cut or at a dead end), or where a
// model's vocabulary expressed less than a third of the grammars.
func checkCounts(t *testing.T, n corpusCounts, total int) {
	t.Helper()
	t.Log(n)
	bounded, cut := (n.jobs-n.openJobs)*corpusN, n.length-n.openLength
	if cut*20 > bounded {
		t.Errorf("%d of %d choices of bounded grammars cut by max_tokens %d", cut, bounded, corpusMaxTokens)
	}
	if n.stop*4 < n.jobs*corpusN*3 {
		t.Errorf("%d of %d choices finished", n.stop, n.jobs*corpusN)
	}
	if open := n.openJobs * corpusN; n.openLength*4 > open {
		t.Errorf("%d of %d choices of open schemas cut by max_tokens %d", n.openLength, open, corpusMaxTokens)
	}
	if raceEnabled {
		total /= 4
	}
	if n.jobs*3 < total {
		t.Errorf("only %d of %d grammars expressible in the vocabulary", n.jobs, total)
	}
}

// TestSchemaCorpus is issue 18's schema acceptance: every schema of the
// corpus (testdata/schemas and a sample of the JSON Schema Test Suite) on
// each shared model at temperature 1.0 with n=4; every output that
// finishes parses and validates (santhosh-tekuri/jsonschema, formats
// asserted). Outputs cut by max_tokens are counted and logged apart; the
// budget lets nearly all finish. It logs each schema's compile time and
// the median.
func TestSchemaCorpus(t *testing.T) {
	own := ownSchemas(t)
	suite, rep := suiteSchemas(t)
	corpus := append(own, suite...)
	if len(corpus) < 50 {
		t.Fatalf("%d schemas in the corpus, want at least 50", len(corpus))
	}
	t.Logf("JSON Schema Test Suite (draft 6, 7): %d schemas, %d compiled, %d unsupported, %d too complex, %d other errors; %d sampled",
		rep.total, rep.compiled, rep.unsupported, rep.tooComplex, len(rep.other), len(suite))
	// A valid schema refused without an UnsupportedError naming what is
	// missing is a bug of the compiler.
	for name, err := range rep.other {
		t.Errorf("%s: refused without naming an unsupported feature: %s", name, err)
	}

	var jobs []corpusJob
	var compile []int64
	for _, sc := range corpus {
		start := time.Now()
		_, err := grammar.FromJSONSchema([]byte(sc.source))
		d := time.Since(start)
		compile = append(compile, d.Microseconds())
		if err != nil {
			t.Errorf("%s: %v", sc.name, err)
			continue
		}
		t.Logf("compile %-48s %8.3f ms", sc.name, float64(d.Microseconds())/1000)
		val := schemaValidator(t, sc)
		jobs = append(jobs, corpusJob{sc.name, &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: sc.source},
			func(out string) string { return validate(val, out) }, strings.HasPrefix(sc.name, "suite/") || strings.HasPrefix(sc.name, "open-")})
	}
	t.Logf("%d schemas: compile time median %.3f ms (target under 50 ms)", len(corpus), float64(median(compile))/1000)

	for _, rel := range corpusModels {
		t.Run(strings.TrimSuffix(rel, ".gguf"), func(t *testing.T) {
			rt := start(t, openModel(t, rel), actors.Config{})
			began := time.Now()
			n := runCorpus(t, rt, jobs)
			t.Logf("%v", time.Since(began).Round(time.Millisecond))
			checkCounts(t, n, len(jobs))
		})
	}
}

// TestSchemaUnsupportedNamed: a schema outside the subset gets an
// UnsupportedError naming the feature from the compiler, and the runtime's
// CompileGrammar (the front's 400) wraps ErrInvalidRequest with the name.
func TestSchemaUnsupportedNamed(t *testing.T) {
	rt := start(t, openModel(t, "stories260K.gguf"), actors.Config{})
	for _, tt := range []struct{ schema, feature string }{
		{`{"type": "object", "properties": {"a": {"not": {"type": "null"}}}}`, `"not"`},
		{`{"type": "object", "patternProperties": {"^x": {"type": "string"}}}`, `"patternProperties"`},
		{`{"type": "array", "items": {"type": "integer"}, "uniqueItems": true}`, `"uniqueItems"`},
		{`{"type": "object", "minProperties": 2}`, `"minProperties"`},
		{`{"type": "string", "format": "ipv6"}`, `"ipv6"`},
		{`{"if": {"type": "string"}, "then": {"maxLength": 2}}`, `"if"`},
		{`{"type": "integer", "multipleOf": 3}`, `"multipleOf"`},
		{`{"type": "array", "contains": {"type": "integer"}}`, `"contains"`},
		{`{"type": "object", "propertyNames": {"maxLength": 3}}`, `"propertyNames"`},
		{`{"$ref": "https://example.com/remote.json"}`, "remote $ref"},
		{`{"type": "sound"}`, `"sound"`},
	} {
		_, err := grammar.FromJSONSchema([]byte(tt.schema))
		var ue *grammar.UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.feature) {
			t.Errorf("%s: compiler error %v, want an UnsupportedError naming %s", tt.schema, err, tt.feature)
		}
		err = rt.CompileGrammar(&messages.Grammar{Kind: messages.GrammarJSONSchema, Source: tt.schema})
		if !errors.Is(err, actors.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.feature) {
			t.Errorf("%s: CompileGrammar error %v, want ErrInvalidRequest naming %s", tt.schema, err, tt.feature)
		}
	}
}

// BenchmarkSchemaCompile compiles each schema of the corpus once per
// iteration and reports the median compile time.
func BenchmarkSchemaCompile(b *testing.B) {
	own := ownSchemas(b)
	suite, _ := suiteSchemas(b)
	corpus := append(own, suite...)
	per := make([][]int64, len(corpus))
	for b.Loop() {
		for i, sc := range corpus {
			start := time.Now()
			if _, err := grammar.FromJSONSchema([]byte(sc.source)); err != nil {
				b.Fatal(fmt.Errorf("%s: %w", sc.name, err))
			}
			per[i] = append(per[i], time.Since(start).Nanoseconds())
		}
	}
	meds := make([]float64, len(corpus))
	for i := range per {
		meds[i] = float64(median(per[i])) / 1e6
	}
	b.ReportMetric(median(meds), "median-ms/schema")
	b.ReportMetric(float64(len(corpus)), "schemas")
}
