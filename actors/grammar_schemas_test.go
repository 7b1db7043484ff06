package actors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/grammar"
)

// The structured-output acceptance runs (issue 18): each grammar-constrained
// request samples n choices at this temperature with at most maxTokens each.
const (
	corpusN           = 4
	corpusTemperature = 1.0
	corpusMaxTokens   = 320
	corpusParallel    = 8 // requests in flight at once
)

// grammarModels are the shared models the acceptance runs on.
var grammarModels = []string{"stories260K.gguf", "TinyStories-656K-Q8_0.gguf"}

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
}

// corpusCounts tallies the choices of a model's run.
type corpusCounts struct {
	stop, length, bad int
}

// runCorpus runs every job on rt, corpusParallel at a time, and reports each
// finished output that fails its check. Choices cut by max_tokens are
// counted apart: they are unfinished, not wrong.
func runCorpus(t *testing.T, rt *actors.Runtime, jobs []corpusJob) corpusCounts {
	t.Helper()
	prompt, err := rt.Tokenize("Once upon a time, ")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		outs []choiceOutcome
		err  error
	}
	results := make([]result, len(jobs))
	sem := make(chan struct{}, corpusParallel)
	var wg sync.WaitGroup
	for i, j := range jobs {
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
	var n corpusCounts
	for i, j := range jobs {
		r := results[i]
		if r.err != nil {
			t.Errorf("%s: %v", j.name, r.err)
			continue
		}
		for c, o := range r.outs {
			switch o.finish {
			case messages.FinishLength:
				n.length++
				continue
			case messages.FinishStop:
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
	if len(corpus) < 50 && len(suite) > 0 {
		t.Fatalf("%d schemas in the corpus, want at least 50", len(corpus))
	}
	t.Logf("JSON Schema Test Suite (draft 6, 7): %d schemas, %d compiled, %d unsupported, %d too complex, %d other errors; %d sampled",
		rep.total, rep.compiled, rep.unsupported, rep.tooComplex, len(rep.other), len(suite))
	for _, o := range rep.other {
		t.Logf("  refused: %s", o)
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
			func(out string) string { return validate(val, out) }})
	}
	t.Logf("%d schemas: compile time median %.3f ms (target under 50 ms)", len(corpus), float64(median(compile))/1000)

	for _, rel := range grammarModels {
		t.Run(strings.TrimSuffix(rel, ".gguf"), func(t *testing.T) {
			rt := start(t, openModel(t, rel), actors.Config{})
			began := time.Now()
			n := runCorpus(t, rt, jobs)
			total := len(jobs) * corpusN
			t.Logf("%d schemas x %d: %d finished (stop), %d cut by max_tokens %d, %d wrong; %v",
				len(jobs), corpusN, n.stop, n.length, corpusMaxTokens, n.bad, time.Since(began).Round(time.Millisecond))
			if n.length*20 > total { // "nearly all finish": at most 5% cut
				t.Errorf("%d of %d choices cut by max_tokens %d", n.length, total, corpusMaxTokens)
			}
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
