package sample

import (
	"errors"
	"math"
	"testing"
)

func TestValidate(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name string
		p    Params
		ok   bool
	}{
		{"zero value (greedy)", Params{}, true},
		{"typical", Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepetitionPenalty: 1.1,
			PresencePenalty: 0.5, FrequencyPenalty: -0.5, PenaltyLastN: 64, Logprobs: 5, WantLogprob: true}, true},
		{"negative temperature is greedy", Params{Temperature: -1}, true},
		{"temperature above 2", Params{Temperature: 5}, true},
		{"negative top_k is disabled", Params{TopK: -3}, true},
		{"top_p 1", Params{TopP: 1}, true},
		{"min_p 1", Params{MinP: 1}, true},
		{"repetition_penalty 0 is disabled", Params{RepetitionPenalty: 0}, true},
		{"repetition_penalty below 1", Params{RepetitionPenalty: 0.5}, true},
		{"logprobs 20", Params{Logprobs: MaxLogprobs}, true},
		{"bias ban", Params{LogitBias: map[int32]float32{3: float32(math.Inf(-1)), 0: -100}}, true},

		{"temperature NaN", Params{Temperature: nan}, false},
		{"temperature Inf", Params{Temperature: inf}, false},
		{"top_p NaN", Params{TopP: nan}, false},
		{"top_p negative", Params{TopP: -0.1}, false},
		{"top_p above 1", Params{TopP: 1.01}, false},
		{"min_p negative", Params{MinP: -0.1}, false},
		{"min_p above 1", Params{MinP: 2}, false},
		{"min_p NaN", Params{MinP: nan}, false},
		{"repetition_penalty negative", Params{RepetitionPenalty: -1}, false},
		{"repetition_penalty Inf", Params{RepetitionPenalty: inf}, false},
		{"presence_penalty NaN", Params{PresencePenalty: nan}, false},
		{"frequency_penalty -Inf", Params{FrequencyPenalty: -inf}, false},
		{"penalty_last_n negative", Params{PenaltyLastN: -1}, false},
		{"logprobs negative", Params{Logprobs: -1}, false},
		{"logprobs above 20", Params{Logprobs: MaxLogprobs + 1}, false},
		{"bias negative token", Params{LogitBias: map[int32]float32{-1: 1}}, false},
		{"bias NaN", Params{LogitBias: map[int32]float32{7: nan}}, false},
		{"bias +Inf", Params{LogitBias: map[int32]float32{7: inf}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("Validate() = %v, want ErrInvalidParams", err)
			}
			if _, nerr := New(tt.p); (nerr == nil) != (err == nil) {
				t.Fatalf("New error %v disagrees with Validate error %v", nerr, err)
			}
		})
	}
}

func TestValidateReportsLowestBadToken(t *testing.T) {
	p := Params{LogitBias: map[int32]float32{}}
	for id := int32(100); id < 200; id++ {
		p.LogitBias[id] = float32(math.NaN())
	}
	want := p.Validate().Error()
	for range 20 {
		if got := p.Validate().Error(); got != want {
			t.Fatalf("Validate() = %q, then %q", want, got)
		}
	}
	if want != "sample: invalid params: logit bias for token 100 is NaN" {
		t.Fatalf("Validate() = %q", want)
	}
}
