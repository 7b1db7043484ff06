package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// visionRep is one repetition of bench vision, in milliseconds.
type visionRep struct {
	PrepareMS float64 `json:"prepare_ms"` // decode and preprocess (Projector.Prepare)
	EncodeMS  float64 `json:"encode_ms"`  // the encoder and projector (Projector.Encode), as mtmd_batch_encode
	TTFTMS    float64 `json:"ttft_ms"`    // the image file's bytes to the first token, through the runtime
	// The process's CPU time (user and system, all threads) over the
	// encode and over the time to first token: steadier than wall time on
	// a shared machine.
	EncodeCPUMS float64 `json:"encode_cpu_ms"`
	TTFTCPUMS   float64 `json:"ttft_cpu_ms"`
}

// benchVision measures an image's encoding time and the time to the first
// token of a prompt with it, as llama-mtmd-cli does one image
// (bench/vision.sh sets the two side by side): each repetition prepares
// and encodes the image on its own (the encode timed as mtmd times
// mtmd_batch_encode), then starts a fresh runtime (no embedding or prefix
// cache to hit) and times a greedy request from reading the image file
// (decode, preprocess, encode, prefill) to its first token.
func benchVision(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench vision", stderr)
	path := fs.String("m", "", "model: a GGUF file (required)")
	var mmproj string
	mmprojVar(fs, &mmproj)
	image := fs.String("image", "", "an image `FILE` (required)")
	prompt := fs.String("p", "<__media__>Describe this image.", "the prompt; the image goes where <__media__> stands (else first); special tokens parsed")
	reps := fs.Int("r", 3, "repetitions")
	ttft := fs.Bool("ttft", true, "time the first token too (false: the encode alone, for a projector whose encode takes minutes)")
	threads := fs.Int("t", 2, "threads of the encoder and the forward pass")
	output := outputFlag(fs, "text or json (one object: the repetitions and their means)")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *path == "" || mmproj == "" || *image == "":
		return usageError{"-m MODEL, --mmproj FILE and --image FILE are required"}
	case *reps < 1 || *threads < 1:
		return usageError{"-r and -t must be at least 1"}
	case *output != "text" && *output != "json":
		return usageError{fmt.Sprintf("--output %q: want text or json", *output)}
	}
	data, err := os.ReadFile(*image)
	if err != nil {
		return err
	}
	// Read the files through once, so that the first encode does not wait
	// on the disk for the weights it maps (llama.cpp reads them at load,
	// which bench/vision.sh does not count).
	for _, f := range []string{*path, mmproj} {
		if err := readThrough(f); err != nil {
			return err
		}
	}
	m, err := openModel(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	enc, closeProjector, err := openProjector(mmproj, m)
	if err != nil {
		return err
	}
	defer closeProjector()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	system := newActorSystem()
	defer system.Shutdown()

	mm := compute.NewMatMuler(*threads)
	var out struct {
		Rows          int         `json:"image_rows"`
		PromptTokens  int         `json:"prompt_tokens"`
		Reps          []visionRep `json:"reps"`
		MeanPrepareMS float64     `json:"mean_prepare_ms"`
		MeanEncodeMS  float64     `json:"mean_encode_ms"`
		MeanTTFTMS    float64     `json:"mean_ttft_ms"`
		MeanEncodeCPU float64     `json:"mean_encode_cpu_ms"`
		MeanTTFTCPU   float64     `json:"mean_ttft_cpu_ms"`
	}
	for range *reps {
		var r visionRep
		start := time.Now()
		p, err := enc.Prepare(data)
		if err != nil {
			return fmt.Errorf("--image %s: %w", *image, err)
		}
		r.PrepareMS = ms(time.Since(start))
		start, cpu := time.Now(), cpuTime()
		if _, err := enc.Encode(mm, p); err != nil {
			return err
		}
		r.EncodeMS, r.EncodeCPUMS = ms(time.Since(start)), ms(cpuTime()-cpu)
		out.Rows = p.Rows()
		if *ttft {
			if out.PromptTokens, err = timeFirstToken(ctx, system, m, enc, *threads, *prompt, *image, &r); err != nil {
				return err
			}
		}
		out.Reps = append(out.Reps, r)
		out.MeanPrepareMS += r.PrepareMS / float64(*reps)
		out.MeanEncodeMS += r.EncodeMS / float64(*reps)
		out.MeanTTFTMS += r.TTFTMS / float64(*reps)
		out.MeanEncodeCPU += r.EncodeCPUMS / float64(*reps)
		out.MeanTTFTCPU += r.TTFTCPUMS / float64(*reps)
		if *output == "text" {
			fmt.Fprintf(stdout, "prepare %8.1f ms  encode %8.1f ms (%.1f CPU-ms)  ttft %8.1f ms (%.1f CPU-ms)  (%d image rows, %d prompt tokens)\n",
				r.PrepareMS, r.EncodeMS, r.EncodeCPUMS, r.TTFTMS, r.TTFTCPUMS, out.Rows, out.PromptTokens)
		}
	}
	if *output == "json" {
		return json.NewEncoder(stdout).Encode(out)
	}
	_, err = fmt.Fprintf(stdout, "mean    %8.1f ms         %8.1f ms       %8.1f ms\n", out.MeanPrepareMS, out.MeanEncodeMS, out.MeanTTFTMS)
	return err
}

// timeFirstToken starts a fresh runtime (no embedding or prefix cache to
// hit) and times a greedy request from reading the image file (decode,
// preprocess, encode, prefill) to its first token into r; it returns the
// prompt's tokens.
func timeFirstToken(ctx context.Context, system *actor.ActorSystem, m *model.Model, enc actors.ImageEncoder, threads int, prompt, image string, r *visionRep) (int, error) {
	rt, err := actors.Start(system, m, actors.Config{Workers: threads, Encoder: enc, NoPrefixCaching: true, MaxNumSeqs: 1,
		NumBlocks: (m.Config.ContextLen + kv.DefaultBlockSize - 1) / kv.DefaultBlockSize, MaxModelLen: m.Config.ContextLen,
		NewBackend: backend.For(m, backend.DeviceCPU)})
	if err != nil {
		return 0, err
	}
	start, cpu := time.Now(), cpuTime()
	ids, spans, err := imagePrompt(rt, prompt, []string{image}, true)
	if err != nil {
		rt.Stop(time.Second)
		return 0, err
	}
	r.TTFTMS, err = firstToken(ctx, rt, &messages.GenerateRequest{Prompt: ids, Images: spans, MaxTokens: 1}, start)
	r.TTFTCPUMS = ms(cpuTime() - cpu)
	if err := rt.Stop(5 * time.Second); err != nil && r.TTFTMS > 0 {
		return 0, err
	}
	return len(ids), err
}

// firstToken streams req on rt and returns the milliseconds from start to
// its first token, then reads the stream to its end.
func firstToken(ctx context.Context, rt *actors.Runtime, req *messages.GenerateRequest, start time.Time) (float64, error) {
	ch, err := rt.Stream(ctx, req)
	if err != nil {
		return 0, err
	}
	var ttft float64
	var failure error
	for c := range ch {
		if len(c.Tokens) > 0 && ttft == 0 {
			ttft = ms(time.Since(start))
		}
		if c.FinishReason == messages.FinishError {
			failure = fmt.Errorf("bench vision: %s", c.Err)
		}
	}
	if failure == nil && ttft == 0 {
		failure = fmt.Errorf("bench vision: no token came back")
	}
	return ttft, failure
}

// readThrough reads the file at path to its end (into the page cache).
func readThrough(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

// cpuTime is the process's user and system CPU time so far (0 where the
// system does not say).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
