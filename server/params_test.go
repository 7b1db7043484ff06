package server

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
)

// TestParamsTable: every field of samplingFields is in the params table,
// or handled by the endpoints (named here), and every entry names a field.
func TestParamsTable(t *testing.T) {
	elsewhere := map[string]bool{"model": true, "max_tokens": true, "stream": true, "stream_options": true, "user": true,
		"timings_per_token": true}
	for _, c := range constraints { // applyConstraint, under response_format's name
		elsewhere[c.name] = true
	}
	fields := map[string]bool{}
	typ := reflect.TypeFor[samplingFields]()
	for _, sf := range reflect.VisibleFields(typ) {
		if sf.Anonymous || !sf.IsExported() {
			continue // an embedded struct's fields are listed too
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		fields[name] = true
	}
	inTable := map[string]bool{}
	for _, p := range allParams {
		if inTable[p.name] {
			t.Errorf("%s is in the table twice", p.name)
		}
		inTable[p.name] = true
		if !fields[p.name] {
			t.Errorf("the table's %s is no field of samplingFields", p.name)
		}
	}
	for f := range fields {
		if !inTable[f] && !elsewhere[f] {
			t.Errorf("field %s is neither in the params table nor handled by the endpoints", f)
		}
	}
}

// TestToRequest: each field lands in the request, and a value outside its
// range is a 400 about that field.
func TestToRequest(t *testing.T) {
	inf := float32(math.Inf(-1))
	for _, tc := range []struct {
		body     string
		logprobs int
		want     messages.GenerateRequest
		param    string // the error's, "" for none
	}{
		{`{}`, -1, messages.GenerateRequest{N: 1, Sampling: messages.SamplingParams{Temperature: 1, TopP: 1}}, ""},
		{`{"temperature": 0.5, "top_p": 0.9, "top_k": -1, "min_p": 0.1, "seed": 7, "n": 3}`, 2, messages.GenerateRequest{N: 3,
			Sampling: messages.SamplingParams{Temperature: 0.5, TopP: 0.9, MinP: 0.1, Seed: 7, HasSeed: true, WantLogprob: true, Logprobs: 2}}, ""},
		{`{"presence_penalty": 1, "repetition_penalty": 1.1, "logit_bias": {"5": -100, "7": 2.5}}`, -1, messages.GenerateRequest{N: 1,
			Sampling: messages.SamplingParams{Temperature: 1, TopP: 1, PresencePenalty: 1, RepetitionPenalty: 1.1, PenaltyLastN: 64,
				LogitBias: map[int32]float32{5: inf, 7: 2.5}}}, ""},
		{`{"stop": "x", "stop_token_ids": [2], "ignore_eos": true, "priority": -3}`, -1, messages.GenerateRequest{N: 1,
			Sampling: messages.SamplingParams{Temperature: 1, TopP: 1}, Stop: []string{"x"}, StopTokenIDs: []int32{2}, IgnoreEOS: true, Priority: -3}, ""},
		// response_format text is the default; null fields are not set.
		{`{"response_format": {"type": "text"}, "guided_json": null, "grammar": null}`, -1, messages.GenerateRequest{N: 1,
			Sampling: messages.SamplingParams{Temperature: 1, TopP: 1}}, ""},
		{`{"temperature": 2.01}`, -1, messages.GenerateRequest{}, "temperature"},
		{`{"top_p": 0}`, -1, messages.GenerateRequest{}, "top_p"},
		{`{"top_k": -2}`, -1, messages.GenerateRequest{}, "top_k"},
		{`{"min_p": 1.5}`, -1, messages.GenerateRequest{}, "min_p"},
		{`{"frequency_penalty": -2.5}`, -1, messages.GenerateRequest{}, "frequency_penalty"},
		{`{"repetition_penalty": 0}`, -1, messages.GenerateRequest{}, "repetition_penalty"},
		{`{"logit_bias": {"x": 1}}`, -1, messages.GenerateRequest{}, "logit_bias"},
		{`{"logit_bias": {"1": -101}}`, -1, messages.GenerateRequest{}, "logit_bias"},
		{`{"n": 0}`, -1, messages.GenerateRequest{}, "n"},
		{`{"n": 129}`, -1, messages.GenerateRequest{}, "n"},
		{`{"stop": ["a", "b", "c", "d", "e"]}`, -1, messages.GenerateRequest{N: 1, Sampling: messages.SamplingParams{Temperature: 1, TopP: 1},
			Stop: []string{"a", "b", "c", "d", "e"}}, ""},
		{`{"stop": [` + strings.Repeat(`"s",`, maxStops) + `"s"]}`, -1, messages.GenerateRequest{}, "stop"},
		// llama-server's and vLLM's fields.
		{`{"n_predict": 5, "min_tokens": 3, "include_stop_str_in_output": true, "typical_p": 0.5, "min_keep": 2}`, -1,
			messages.GenerateRequest{N: 1, MinTokens: 3, IncludeStopStr: true,
				Sampling: messages.SamplingParams{Temperature: 1, TopP: 1, TypicalP: 0.5, MinKeep: 2}}, ""},
		{`{"dry_multiplier": 0.8}`, -1, messages.GenerateRequest{N: 1, Sampling: messages.SamplingParams{Temperature: 1, TopP: 1,
			DryMultiplier: 0.8, DryBase: 1.75, DryAllowedLength: 2, DryPenaltyLastN: 64, DryBreakers: []string{"\n", ":", "\"", "*"}}}, ""},
		{`{"dry_multiplier": 0.8, "dry_base": 2, "dry_allowed_length": 3, "dry_penalty_last_n": -1, "dry_sequence_breakers": ["x"]}`, -1,
			messages.GenerateRequest{N: 1, Sampling: messages.SamplingParams{Temperature: 1, TopP: 1,
				DryMultiplier: 0.8, DryBase: 2, DryAllowedLength: 3, DryPenaltyLastN: -1, DryBreakers: []string{"x"}}}, ""},
		{`{"xtc_probability": 0.5}`, -1, messages.GenerateRequest{N: 1, Sampling: messages.SamplingParams{Temperature: 1, TopP: 1,
			XTCProbability: 0.5, XTCThreshold: 0.1}}, ""},
		{`{"xtc_probability": 0.5, "xtc_threshold": 0.2, "mirostat": 0, "mirostat_tau": 5, "best_of": 1, "use_beam_search": false}`, -1,
			messages.GenerateRequest{N: 1, Sampling: messages.SamplingParams{Temperature: 1, TopP: 1, XTCProbability: 0.5, XTCThreshold: 0.2}}, ""},
		{`{"n_predict": 0}`, -1, messages.GenerateRequest{}, "n_predict"},
		{`{"min_tokens": -1}`, -1, messages.GenerateRequest{}, "min_tokens"},
		{`{"typical_p": 0}`, -1, messages.GenerateRequest{}, "typical_p"},
		{`{"min_keep": -1}`, -1, messages.GenerateRequest{}, "min_keep"},
		{`{"xtc_probability": 1.5}`, -1, messages.GenerateRequest{}, "xtc_probability"},
		{`{"xtc_threshold": -0.1}`, -1, messages.GenerateRequest{}, "xtc_threshold"},
		{`{"dry_multiplier": -1}`, -1, messages.GenerateRequest{}, "dry_multiplier"},
		{`{"dry_base": -1}`, -1, messages.GenerateRequest{}, "dry_base"},
		{`{"dry_allowed_length": -1}`, -1, messages.GenerateRequest{}, "dry_allowed_length"},
		{`{"dry_penalty_last_n": -2}`, -1, messages.GenerateRequest{}, "dry_penalty_last_n"},
		{`{"dry_sequence_breakers": []}`, -1, messages.GenerateRequest{}, "dry_sequence_breakers"},
		{`{"best_of": 2}`, -1, messages.GenerateRequest{}, "best_of"},
		{`{"use_beam_search": true}`, -1, messages.GenerateRequest{}, "use_beam_search"},
		{`{"mirostat": 1}`, -1, messages.GenerateRequest{N: 1, Sampling: messages.SamplingParams{Temperature: 1, TopP: 1,
			Mirostat: 1, MirostatTau: 5, MirostatEta: 0.1}}, ""},
		{`{"mirostat": 2, "mirostat_tau": 3, "mirostat_eta": 0.2}`, -1, messages.GenerateRequest{N: 1, Sampling: messages.SamplingParams{Temperature: 1, TopP: 1,
			Mirostat: 2, MirostatTau: 3, MirostatEta: 0.2}}, ""},
		{`{"mirostat": 3}`, -1, messages.GenerateRequest{}, "mirostat"},
		{`{"mirostat": 2, "mirostat_eta": 2}`, -1, messages.GenerateRequest{}, "mirostat_eta"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			var f samplingFields
			if err := json.Unmarshal([]byte(tc.body), &f); err != nil {
				t.Fatal(err)
			}
			var got messages.GenerateRequest
			e := f.toRequest(&got, tc.logprobs)
			switch {
			case tc.param != "":
				if e == nil || e.Param == nil || *e.Param != tc.param || e.Status != 400 {
					t.Fatalf("got %+v, want a 400 about %s", e, tc.param)
				}
			case e != nil:
				t.Fatal(e)
			case !reflect.DeepEqual(got, tc.want):
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
