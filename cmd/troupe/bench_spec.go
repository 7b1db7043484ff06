package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/bench"
	"github.com/troupe-llm/troupe/model"
)

// benchSpec measures speculative decoding: tokens/s with and without it,
// the acceptance rate and the mean accepted length, per batch size.
func benchSpec(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench spec", stderr)
	path := fs.String("m", "", "model: a GGUF file or a safetensors directory (required)")
	prompt := fs.String("p", "", "prompt text (required); with --quote, the prompt is followed by itself again, so the output quotes it back")
	quote := fs.Bool("quote", true, "repeat the prompt once (text that quotes back: where the n-gram proposer is right)")
	n := fs.Int("n", 128, "tokens to generate per sequence")
	npl := fs.String("npl", "1,16", "batch sizes, comma-separated")
	threads := fs.Int("t", 2, "threads of the forward pass")
	spec := actors.SpecConfig{Type: actors.SpecNGram}
	fs.IntVar(&spec.DraftMax, "draft-max", 0, "most draft tokens per step (0: 8)")
	fs.IntVar(&spec.MaxSeqs, "spec-max-seqs", 0, "drafts only while at most this many sequences run (0: 4; -1: always)")
	if err := parse(fs, args); err != nil {
		return err
	}
	pl, err := parseSizes(*npl)
	switch {
	case *path == "" || *prompt == "":
		return usageError{"-m MODEL and -p PROMPT are required"}
	case err != nil:
		return usageError{fmt.Sprintf("--npl %q: %v", *npl, err)}
	case *n < 1 || *threads < 1:
		return usageError{"-n and -t must be at least 1"}
	}
	if err := checkSpec(&spec); err != nil {
		return usageError{err.Error()}
	}
	m, err := model.Open(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	text := *prompt
	if *quote {
		text += " " + *prompt
	}
	ids, err := m.Tokenizer.Encode(text, true, false)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(stdout, "| B | speculation | tok/s | draft tokens | accepted | acceptance | mean accepted length | steps |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, b := range pl {
		prompts := make([][]int32, b)
		for i := range prompts {
			prompts[i] = ids
		}
		var off float64
		for _, on := range []bool{false, true} {
			o := bench.SpecOptions{Prompts: prompts, MaxTokens: *n, Workers: *threads}
			name := "off"
			if on {
				o.Spec, name = spec, "ngram-simple"
			}
			r, err := bench.Speculative(ctx, m, o)
			if err != nil {
				return err
			}
			speed := fmt.Sprintf("%.1f", r.TPS())
			if on {
				speed += fmt.Sprintf(" (%.2fx)", r.TPS()/off)
			}
			off = r.TPS()
			fmt.Fprintf(stdout, "| %d | %s | %s | %d | %d | %.1f%% | %.2f | %d |\n", b, name, strings.TrimSpace(speed),
				r.DraftTokens, r.Accepted, 100*r.AcceptanceRate(), r.MeanAcceptedLength(), r.Steps)
		}
	}
	return nil
}
