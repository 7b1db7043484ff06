package ollama

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
)

// TestOllamaOptions: each of Ollama's options maps to the runtime request's
// field (over Ollama's defaults), unknown ones are ignored and reported,
// values of the wrong type are 400s naming the option.
func TestOllamaOptions(t *testing.T) {
	def := messages.SamplingParams{Temperature: 0.8, TopK: 40, TopP: 0.9, PenaltyLastN: 64}
	with := func(f func(*messages.SamplingParams)) messages.SamplingParams {
		s := def
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name, opts string
		want       messages.SamplingParams
		stop       []string
		limits     ollamaLimits
		ignored    []string
		err        string // part of the 400's message
	}{
		{name: "defaults", opts: `{}`, want: def},
		{name: "temperature", opts: `{"temperature": 0}`, want: with(func(s *messages.SamplingParams) { s.Temperature = 0 })},
		{name: "top_k", opts: `{"top_k": 5}`, want: with(func(s *messages.SamplingParams) { s.TopK = 5 })},
		{name: "top_k off", opts: `{"top_k": -1}`, want: with(func(s *messages.SamplingParams) { s.TopK = 0 })},
		{name: "top_p", opts: `{"top_p": 0.5}`, want: with(func(s *messages.SamplingParams) { s.TopP = 0.5 })},
		{name: "min_p", opts: `{"min_p": 0.05}`, want: with(func(s *messages.SamplingParams) { s.MinP = 0.05 })},
		{name: "seed", opts: `{"seed": 42}`, want: with(func(s *messages.SamplingParams) { s.Seed, s.HasSeed = 42, true })},
		{name: "seed random", opts: `{"seed": -1}`, want: def},
		{name: "seed large", opts: `{"seed": 1234567890123}`, want: with(func(s *messages.SamplingParams) { s.Seed, s.HasSeed = 1234567890123, true })},
		{name: "stop string", opts: `{"stop": "\n"}`, want: def, stop: []string{"\n"}},
		{name: "stop list", opts: `{"stop": ["user:", "a", "b", "c", "d"]}`, want: def, stop: []string{"user:", "a", "b", "c", "d"}},
		{name: "repeat_penalty", opts: `{"repeat_penalty": 1.1}`, want: with(func(s *messages.SamplingParams) { s.RepetitionPenalty = 1.1 })},
		{name: "presence_penalty", opts: `{"presence_penalty": 1.5}`, want: with(func(s *messages.SamplingParams) { s.PresencePenalty = 1.5 })},
		{name: "frequency_penalty", opts: `{"frequency_penalty": -0.5}`, want: with(func(s *messages.SamplingParams) { s.FrequencyPenalty = -0.5 })},
		{name: "repeat_last_n", opts: `{"repeat_last_n": 33, "repeat_penalty": 1.2}`,
			want: with(func(s *messages.SamplingParams) { s.PenaltyLastN, s.RepetitionPenalty = 33, 1.2 })},
		{name: "repeat_last_n context", opts: `{"repeat_last_n": -1}`, want: with(func(s *messages.SamplingParams) { s.PenaltyLastN = 0 })},
		{name: "repeat_last_n off", opts: `{"repeat_last_n": 0, "repeat_penalty": 1.2, "presence_penalty": 1, "frequency_penalty": 1}`,
			want: with(func(s *messages.SamplingParams) { s.PenaltyLastN = 0 })},
		{name: "num_predict", opts: `{"num_predict": 100}`, want: def, limits: ollamaLimits{numPredict: 100}},
		{name: "num_predict truncated", opts: `{"num_predict": 7.9}`, want: def, limits: ollamaLimits{numPredict: 7}},
		{name: "num_predict infinite", opts: `{"num_predict": -1}`, want: def},
		{name: "num_predict fill", opts: `{"num_predict": -2}`, want: def},
		{name: "num_ctx", opts: `{"num_ctx": 1024}`, want: def, limits: ollamaLimits{numCtx: 1024}},
		{name: "typical_p off", opts: `{"typical_p": 1}`, want: with(func(s *messages.SamplingParams) { s.TypicalP = 1 })},
		{name: "null", opts: `{"temperature": null}`, want: def},
		{name: "ignored", opts: `{"num_gpu": 1, "num_thread": 8, "temperature": 0.5}`,
			want: with(func(s *messages.SamplingParams) { s.Temperature = 0.5 }), ignored: []string{"num_gpu", "num_thread"}},
		{name: "typical_p", opts: `{"typical_p": 0.7}`, want: with(func(s *messages.SamplingParams) { s.TypicalP = 0.7 })},
		{name: "mirostat off", opts: `{"mirostat": 0, "mirostat_tau": 5, "mirostat_eta": 0.1}`, want: def},
		{name: "mirostat", opts: `{"mirostat": 2}`, want: with(func(s *messages.SamplingParams) { s.Mirostat, s.MirostatTau, s.MirostatEta = 2, 5, 0.1 })},
		{name: "mirostat tau", opts: `{"mirostat": 1, "mirostat_tau": 3, "mirostat_eta": 0.2}`,
			want: with(func(s *messages.SamplingParams) { s.Mirostat, s.MirostatTau, s.MirostatEta = 1, 3, 0.2 })},
		{name: "mirostat bad", opts: `{"mirostat": 3}`, err: `option "mirostat" 3: want 0 (off), 1 or 2`},
		{name: "temperature type", opts: `{"temperature": "hot"}`, err: `option "temperature" must be of type float32`},
		{name: "temperature negative", opts: `{"temperature": -3}`, err: `option "temperature" -3 must not be negative`},
		{name: "top_k type", opts: `{"top_k": true}`, err: `option "top_k" must be of type integer`},
		{name: "seed huge", opts: `{"seed": 1e300}`, err: `option "seed"`},
		{name: "float huge", opts: `{"top_p": 1e300}`, err: `option "top_p"`},
		{name: "stop type", opts: `{"stop": 3}`, err: `option "stop" must be a string or an array of strings`},
		{name: "stop too long", opts: `{"stop": "` + strings.Repeat("x", maxStopBytes+1) + `"}`, err: "stop string of"},
		{name: "num_ctx negative", opts: `{"num_ctx": -5}`, err: "num_ctx"},
		{name: "repeat_last_n negative", opts: `{"repeat_last_n": -3}`, err: "repeat_last_n"},
		{name: "typical_p type", opts: `{"typical_p": "x"}`, err: "typical_p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.opts), &opts); err != nil {
				t.Fatal(err)
			}
			g := &messages.GenerateRequest{}
			limits, ignored, e := applyOllamaOptions(opts, g)
			if tc.err != "" {
				if e == nil || e.Status() != 400 || !strings.Contains(e.Message, tc.err) {
					t.Fatalf("error %v, want a 400 with %q", e, tc.err)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			if !reflect.DeepEqual(g.Sampling, tc.want) {
				t.Errorf("sampling %+v, want %+v", g.Sampling, tc.want)
			}
			if !slices.Equal(g.Stop, tc.stop) || limits != tc.limits || !slices.Equal(ignored, tc.ignored) {
				t.Errorf("stop %q, limits %+v, ignored %q; want %q, %+v, %q", g.Stop, limits, ignored, tc.stop, tc.limits, tc.ignored)
			}
		})
	}
}

// TestOllamaFormat: format maps to the grammar the runtime compiles.
func TestOllamaFormat(t *testing.T) {
	schema := `{"type": "object", "properties": {"age": {"type": "integer"}}}`
	for _, tc := range []struct {
		format string
		want   *messages.Grammar
		err    string
	}{
		{``, nil, ""},
		{`null`, nil, ""},
		{`""`, nil, ""},
		{`"json"`, &messages.Grammar{Kind: messages.GrammarJSONObject}, ""},
		{schema, &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: schema}, ""},
		{`"yaml"`, nil, `format "yaml"`},
		{`[1]`, nil, "format must be"},
		{`true`, nil, "format must be"},
	} {
		g, e := ollamaFormat(json.RawMessage(tc.format))
		switch {
		case tc.err != "" && (e == nil || !strings.Contains(e.Message, tc.err)):
			t.Errorf("%s: error %v, want %q", tc.format, e, tc.err)
		case tc.err == "" && (e != nil || !reflect.DeepEqual(g, tc.want)):
			t.Errorf("%s: %+v, %v; want %+v", tc.format, g, e, tc.want)
		}
	}
}

// TestOllamaThink: think's values.
func TestOllamaThink(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want string // "nil", "true", "false", "true LEVEL" or "error"
	}{{``, "nil"}, {`null`, "nil"}, {`false`, "false"}, {`true`, "true"}, {`"low"`, "true low"}, {`"medium"`, "true medium"},
		{`"high"`, "true high"}, {`"max"`, "true max"}, {`"ultra"`, "error"}, {`"High"`, "error"}, {`1`, "error"}} {
		b, level, e := ollamaThink(json.RawMessage(tc.v))
		got := "nil"
		switch {
		case e != nil:
			got = "error"
		case b != nil && *b:
			got = strings.TrimSpace("true " + level)
		case b != nil:
			got = "false"
		}
		if got != tc.want {
			t.Errorf("think %s: %s, want %s", tc.v, got, tc.want)
		}
	}
}
