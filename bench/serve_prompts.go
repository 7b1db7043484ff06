package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
)

// promptWords are common English words that stories260K's 512-token
// vocabulary encodes as one token each (as do the far larger vocabularies
// of Llama, Qwen or GPT), so a prompt of n words is about n tokens on any
// server.
var promptWords = strings.Fields(`a and be big but day do for friend had happy he her his in it
	little mom named of on play said saw she so that the there they time to up upon very want was we with you`)

// serveRequest is one request of a run.
type serveRequest struct {
	prompt    string
	inputLen  int // words in the prompt: the input tokens when the server reports no usage
	outputLen int // max_tokens
}

// requests makes the run's requests: random prompts, or o.Prompts in
// order, and lengths uniform in [len*(1-r), len*(1+r)], all from o.Seed.
func (o ServeOptions) requests() []serveRequest {
	rng := rand.New(rand.NewPCG(o.Seed, 1))
	reqs := make([]serveRequest, o.NumPrompts)
	for i := range reqs {
		r := &reqs[i]
		if len(o.Prompts) > 0 {
			r.prompt = o.Prompts[i%len(o.Prompts)]
			r.inputLen = len(strings.Fields(r.prompt))
		} else {
			r.inputLen = sampleLen(rng, o.InputLen, o.RangeRatio)
			words := make([]string, r.inputLen)
			for j := range words {
				words[j] = promptWords[rng.IntN(len(promptWords))]
			}
			r.prompt = strings.Join(words, " ")
		}
		r.outputLen = sampleLen(rng, o.OutputLen, o.RangeRatio)
	}
	return reqs
}

// sampleLen draws a length uniform in [floor(n*(1-r)), ceil(n*(1+r))], at
// least 1, as vLLM's random dataset does.
func sampleLen(rng *rand.Rand, n int, r float64) int {
	if r == 0 {
		return n
	}
	lo := max(int(math.Floor(float64(n)*(1-r))), 1)
	hi := max(int(math.Ceil(float64(n)*(1+r))), lo)
	return lo + rng.IntN(hi-lo+1)
}

// ReadPrompts reads a dataset of prompts, one per line; blank lines are
// skipped.
func ReadPrompts(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var prompts []string
	for sc.Scan() {
		if line := strings.TrimRight(sc.Text(), "\r"); strings.TrimSpace(line) != "" {
			prompts = append(prompts, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: reading prompts: %w", err)
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("bench: no prompt in the dataset")
	}
	return prompts, nil
}
