package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/bench"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// benchSpec measures speculative decoding: tokens/s with and without it,
// the acceptance rate and the mean accepted length, per batch size and
// proposer (ngram-simple, and draft-simple with --model-draft).
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
	var draftPath string
	fs.StringVar(&draftPath, "model-draft", "", "draft model `FILE` (the model's vocabulary): adds draft-simple rows")
	fs.StringVar(&draftPath, "md", "", "draft model `FILE`: --model-draft")
	pMin := fs.Float64("draft-p-min", 0, "the draft model stops drafting below this probability (0: never)")
	temp := fs.Float64("temp", 0, "sampling temperature (0: greedy); sampled requests verify a draft model's drafts by rejection sampling")
	seed := fs.Uint64("seed", 1, "seed of the first sampled request (request i: seed+i)")
	profile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the runs (not the loads) to this file")
	repeat := fs.Int("repeat", 1, "run the modes this many times, alternating (off, n-gram, draft model, off, ...): pairs that cut a loaded machine's noise")
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
	case *temp < 0 || *temp > 100:
		return usageError{fmt.Sprintf("--temp %v: want a temperature in [0, 100]", *temp)}
	}
	if err := checkSpec(&spec, ""); err != nil {
		return usageError{err.Error()}
	}
	if *pMin < 0 || *pMin > 1 || (*pMin != 0 && draftPath == "") {
		return usageError{"--draft-p-min wants a probability in [0, 1], and --model-draft"}
	}
	m, err := model.Open(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	modes := []actors.SpecConfig{{}, spec}
	if draftPath != "" {
		ds := spec
		ds.Type, ds.DraftPMin = actors.SpecDraft, float32(*pMin)
		closeDraft, err := openDraft(&ds, draftPath, backend.DeviceCPU, model.RepackAuto)
		if err != nil {
			return err
		}
		defer closeDraft()
		modes = append(modes, ds)
	}
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
	stopProfile, err := startProfile(*profile)
	if err != nil {
		return err
	}
	defer stopProfile()
	run := specRun{m: m, ids: ids, modes: modes, n: *n, threads: *threads, repeat: *repeat, temp: *temp, seed: *seed}
	return run.table(ctx, stdout, pl)
}

// specRun is one bench spec invocation: the model, the prompt's ids and
// the modes (off, n-gram, draft model) to run alternately.
type specRun struct {
	m                  *model.Model
	ids                []int32
	modes              []actors.SpecConfig
	n, threads, repeat int
	temp               float64
	seed               uint64
}

// table writes the markdown table: a row per batch size and mode, each
// mode's speed beside the last plain run's.
func (sr specRun) table(ctx context.Context, stdout io.Writer, pl []int) error {
	fmt.Fprintf(stdout, "| B | speculation | tok/s | draft tokens | accepted | acceptance | mean accepted length | steps | CPU ms/token |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, b := range pl {
		prompts := make([][]int32, b)
		for i := range prompts {
			prompts[i] = sr.ids
		}
		var off float64
		for i := range max(sr.repeat, 1) * len(sr.modes) {
			mode := sr.modes[i%len(sr.modes)]
			o := bench.SpecOptions{Prompts: prompts, MaxTokens: sr.n, Workers: sr.threads, Spec: mode}
			if sr.temp > 0 {
				o.Sampling = &messages.SamplingParams{Temperature: float32(sr.temp), Seed: sr.seed}
			}
			name := "off"
			if mode.On() {
				name = mode.Type
			}
			r, err := bench.Speculative(ctx, sr.m, o)
			if err != nil {
				return err
			}
			speed := fmt.Sprintf("%.1f", r.TPS())
			if mode.On() {
				speed += fmt.Sprintf(" (%.2fx)", r.TPS()/off)
			} else {
				off = r.TPS()
			}
			fmt.Fprintf(stdout, "| %d | %s | %s | %d | %d | %.1f%% | %.2f | %d | %.3g |\n", b, name, strings.TrimSpace(speed),
				r.DraftTokens, r.Accepted, 100*r.AcceptanceRate(), r.MeanAcceptedLength(), r.Steps,
				float64(r.CPU.Microseconds())/1000/float64(max(r.Tokens, 1)))
		}
	}
	return nil
}
