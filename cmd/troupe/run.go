package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/sample"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

func runCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	path := fs.String("m", "", "model: a GGUF file or a safetensors directory (required)")
	prompt := fs.String("p", "", "prompt text (required)")
	n := fs.Int("n", 128, "tokens to generate at most (-1: until the context is full)")
	ctxLen := fs.Int("c", 0, "context length (0: the model's)")
	temp := fs.Float64("temp", 0.8, "temperature (0: greedy)")
	topK := fs.Int("top-k", 40, "top-k (0: off)")
	topP := fs.Float64("top-p", 0.95, "top-p (1: off)")
	minP := fs.Float64("min-p", 0.05, "min-p (0: off)")
	rep := fs.Float64("repeat-penalty", 1.0, "repetition penalty (1: off)")
	seed := fs.Int64("seed", -1, "random seed (-1: random)")
	threads := fs.Int("t", 2, "threads")
	output := fs.String("output", "text", "output: text (streamed) or json")
	noSpecial := fs.Bool("no-special", false, "do not add BOS/EOS or parse special tokens in the prompt")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *path == "":
		return usageError{"-m MODEL is required"}
	case *output != "text" && *output != "json":
		return usageError{fmt.Sprintf("--output %q: want text or json", *output)}
	case *threads < 1:
		return usageError{"-t must be at least 1"}
	}
	params := sample.Params{Temperature: float32(*temp), TopK: *topK, TopP: float32(*topP), MinP: float32(*minP),
		RepetitionPenalty: float32(*rep), PenaltyLastN: 64, HasSeed: *seed >= 0, Seed: uint64(*seed)}
	if err := params.Validate(); err != nil {
		return usageError{err.Error()}
	}
	m, err := openModel(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	ids, err := m.Tokenizer.Encode(*prompt, !*noSpecial, !*noSpecial)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := model.GenerateOptions{MaxTokens: *n, ContextLen: *ctxLen, Sampling: params, Workers: *threads}
	var out []int32
	var text strings.Builder
	dec := tokenizer.NewStreamDecoder(m.Tokenizer)
	err = m.Generate(ctx, ids, opts, func(t sample.Token) error {
		out = append(out, t.ID)
		piece := dec.Add(t.ID)
		if *output == "text" {
			_, err := io.WriteString(stdout, piece)
			return err
		}
		text.WriteString(piece)
		return nil
	})
	if err != nil {
		return err
	}
	if *output == "text" {
		_, err = fmt.Fprintln(stdout, dec.Flush())
		return err
	}
	return json.NewEncoder(stdout).Encode(struct {
		PromptIDs []int32 `json:"prompt_ids"`
		IDs       []int32 `json:"ids"`
		Text      string  `json:"text"`
	}{nonNil(ids), nonNil(out), text.String() + dec.Flush()})
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
