package main

import (
	"fmt"
	"io"
	"os"
)

func perplexityCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("perplexity", stderr)
	path := fs.String("m", "", "model: a GGUF file or a safetensors directory (required)")
	file := fs.String("f", "", "text file to score (required)")
	nCtx := fs.Int("c", 512, "window size in tokens; the second half of each window is scored")
	threads := fs.Int("t", 2, "threads")
	kvType := kvCacheTypeFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" || *file == "" {
		return usageError{"-m MODEL and -f FILE are required"}
	}
	if *nCtx < 4 {
		return usageError{fmt.Sprintf("-c %d: the window must be at least 4 tokens", *nCtx)}
	}
	text, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	m, err := openModel(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	ids, err := m.Tokenizer.Encode(string(text), true, false)
	if err != nil {
		return err
	}
	bos := int32(-1)
	if m.Tokenizer.Vocab().AddBOS {
		bos = m.Tokenizer.Vocab().BOS
	}
	if len(ids) < 2**nCtx {
		return fmt.Errorf("perplexity needs at least %d tokens (2×context %d), %s has %d", 2**nCtx, *nCtx, *file, len(ids))
	}
	fmt.Fprintf(stderr, "%d tokens, %d windows of %d\n", len(ids), len(ids)/max(*nCtx, 1), *nCtx)
	ppl, err := m.Perplexity(ids, *nCtx, bos, *threads, *kvType, func(i int, p float64) {
		fmt.Fprintf(stdout, "[%d]%.4f,", i+1, p)
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "\nPPL = %.4f\n", ppl)
	return err
}
