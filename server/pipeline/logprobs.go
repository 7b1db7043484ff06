package pipeline

import "math"

// TokenLogprobJSON is a token with its log-probability and alternatives
// as OpenAI's chat logprobs (logprobs.content) hold them; Ollama's
// logprobs have the same shape.
type TokenLogprobJSON struct {
	Token       string           `json:"token"`
	Logprob     float64          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []TopLogprobJSON `json:"top_logprobs"`
}

// TopLogprobJSON is an alternative of a TokenLogprobJSON.
type TopLogprobJSON struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// AppendLogprobs appends a Chunk event's logprobs to out in that shape.
func AppendLogprobs(out []TokenLogprobJSON, toks []TokenLogprob) []TokenLogprobJSON {
	for _, t := range toks {
		e := TokenLogprobJSON{Token: t.Text, Logprob: FiniteLogprob(t.Logprob), Bytes: byteInts(t.Bytes), TopLogprobs: []TopLogprobJSON{}}
		for _, a := range t.Top {
			e.TopLogprobs = append(e.TopLogprobs, TopLogprobJSON{Token: a.Text, Logprob: FiniteLogprob(a.Logprob), Bytes: byteInts(a.Bytes)})
		}
		out = append(out, e)
	}
	return out
}

// minLogprob stands for -Inf, which JSON cannot carry (OpenAI uses -9999).
const minLogprob = -9999.0

// FiniteLogprob is x, or -9999 for -Inf (and NaN).
func FiniteLogprob(x float32) float64 {
	if math.IsInf(float64(x), -1) || math.IsNaN(float64(x)) {
		return minLogprob
	}
	return float64(x)
}

func byteInts(b []byte) []int {
	ints := make([]int, len(b))
	for i, x := range b {
		ints[i] = int(x)
	}
	return ints
}
