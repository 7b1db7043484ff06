package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/model/gguf"
)

// synthCmd writes a random-weight model of a real model's shape.
func synthCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("synth", stderr)
	shape := fs.String("shape", "", "model shape (see --list)")
	typ := fs.String("type", "Q4_0", "file type: "+fileTypeNames())
	expertType := fs.String("expert-type", "", "type of a mixture of experts' expert tensors, a ggml type name such as Q8_0 or F16 (default: --type's choice)")
	vocab := fs.String("vocab", "", "a GGUF file whose tokenizer (tokenizer.* keys) the model gets (required)")
	out := fs.String("o", "", "output GGUF file (required)")
	seed := fs.Uint64("seed", 1, "seed of the random weights")
	threads := fs.Int("t", runtime.NumCPU(), "threads that generate and quantize")
	list := fs.Bool("list", false, "list the shapes and exit")
	loraOf := fs.String("lora-of", "", "write a random LoRA adapter (llama.cpp's GGUF format) for this GGUF model to -o, instead of a model")
	rank := fs.Int("rank", 8, "the adapter's rank (--lora-of)")
	alpha := fs.Float64("alpha", 16, "the adapter's adapter.lora.alpha (--lora-of; 0: none)")
	projector := fs.String("projector", "", "write a random multimodal projector (mmproj) of this shape to -o, instead of a model: "+projectorShapeNames())
	textDim := fs.Int("text-dim", 0, "the projector's output width, the text model's embedding width (--projector; 0: the shape's)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *loraOf != "" {
		return synthLoRA(*loraOf, *out, *rank, float32(*alpha), *seed, stdout)
	}
	if *projector != "" {
		return synthProjector(*projector, *out, *textDim, *seed, stdout)
	}
	if *list {
		fmt.Fprintln(stdout, "| shape | arch | dim | layers | heads | kv heads | ffn | vocab | tied |")
		fmt.Fprintln(stdout, "|---|---|---:|---:|---:|---:|---:|---:|---|")
		for _, s := range synth.Shapes {
			fmt.Fprintf(stdout, "| %s | %s | %d | %d | %d | %d | %d | %d | %v |\n", s.Name, s.Arch, s.Dim, s.Layers, s.Heads, s.KVHeads, s.FFN, s.Vocab, s.Tied)
		}
		return nil
	}
	s, ok := synth.LookupShape(*shape)
	ft, okType := synth.LookupFileType(*typ)
	switch {
	case *shape == "":
		return usageError{"--shape is required (see --list)"}
	case !ok:
		return usageError{fmt.Sprintf("--shape %q: unknown (see --list)", *shape)}
	case !okType:
		return usageError{fmt.Sprintf("--type %q: want one of %s", *typ, fileTypeNames())}
	case *vocab == "":
		return usageError{"--vocab VOCAB.gguf is required"}
	case *out == "":
		return usageError{"-o FILE.gguf is required"}
	case *threads < 1:
		return usageError{"-t must be at least 1"}
	}
	vf, err := gguf.Open(*vocab)
	if err != nil {
		return fmt.Errorf("synth: --vocab: %w", err)
	}
	defer vf.Close()
	n, err := synth.WriteFile(*out, synth.Options{Shape: s, Type: ft, Vocab: vf, Seed: *seed, Workers: *threads, ExpertType: *expertType})
	if err != nil {
		return err
	}
	note := ""
	if n != s.Vocab {
		note = fmt.Sprintf(" (the real model has %d; this file has the vocabulary's %d)", s.Vocab, n)
	}
	fmt.Fprintf(stdout, "wrote %s: %s %s, vocab %d%s\n", *out, s.Name, ft.Name, n, note)
	return nil
}

// joinNames joins the names of synth's file types or projector shapes.
func joinNames[T any](list []T, name func(T) string) string {
	names := make([]string, len(list))
	for i, x := range list {
		names[i] = name(x)
	}
	return strings.Join(names, ", ")
}

func fileTypeNames() string {
	return joinNames(synth.FileTypes, func(f synth.FileType) string { return f.Name })
}

func projectorShapeNames() string {
	return joinNames(synth.ProjectorShapes, func(s synth.ProjectorShape) string { return s.Name })
}

// synthLoRA writes a random adapter for the model at base to out.
func synthLoRA(base, out string, rank int, alpha float32, seed uint64, stdout io.Writer) error {
	switch {
	case out == "":
		return usageError{"-o FILE.gguf is required"}
	case rank < 1:
		return usageError{fmt.Sprintf("--rank %d: want at least 1", rank)}
	}
	bf, err := gguf.Open(base)
	if err != nil {
		return fmt.Errorf("synth: --lora-of: %w", err)
	}
	defer bf.Close()
	n, err := synth.WriteLoRA(out, synth.LoRAOptions{Base: bf, Rank: rank, Alpha: alpha, Seed: seed})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: a rank-%d LoRA adapter of %d weights for %s\n", out, rank, n, base)
	return nil
}

// synthProjector writes a random projector of the named shape to out.
func synthProjector(shape, out string, textDim int, seed uint64, stdout io.Writer) error {
	s, ok := synth.LookupProjectorShape(shape)
	switch {
	case !ok:
		return usageError{fmt.Sprintf("--projector %q: want one of %s", shape, projectorShapeNames())}
	case out == "":
		return usageError{"-o FILE.gguf is required"}
	case textDim < 0:
		return usageError{fmt.Sprintf("--text-dim %d: want 0 or more", textDim)}
	}
	if err := synth.WriteProjector(out, synth.ProjectorOptions{Shape: s, TextDim: textDim, Seed: seed}); err != nil {
		return err
	}
	if textDim == 0 {
		textDim = s.ProjDim
	}
	fmt.Fprintf(stdout, "wrote %s: a random %s projector (%s) of output width %d\n", out, s.Name, s.Type, textDim)
	return nil
}
