package server

import (
	"math"

	"github.com/troupe-llm/troupe/messages"
)

// minLogprob stands for -Inf, which JSON cannot carry (OpenAI uses -9999).
const minLogprob = -9999.0

func finiteLogprob(x float32) float64 {
	if math.IsInf(float64(x), -1) || math.IsNaN(float64(x)) {
		return minLogprob
	}
	return float64(x)
}

// chatLogprobs is the chat API's logprobs object.
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     float64          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

func (s *Server) tokenText(id int32) (string, []int) {
	b := s.rt.TokenBytes(id)
	ints := make([]int, len(b))
	for i, x := range b {
		ints[i] = int(x)
	}
	return string(b), ints
}

func (s *Server) addChat(lp *chatLogprobs, toks []messages.Token) {
	for _, t := range toks {
		text, b := s.tokenText(t.ID)
		e := chatTokenLogprob{Token: text, Logprob: finiteLogprob(t.Logprob), Bytes: b, TopLogprobs: []chatTopLogprob{}}
		for _, a := range t.Top {
			at, ab := s.tokenText(a.ID)
			e.TopLogprobs = append(e.TopLogprobs, chatTopLogprob{Token: at, Logprob: finiteLogprob(a.Logprob), Bytes: ab})
		}
		lp.Content = append(lp.Content, e)
	}
}
