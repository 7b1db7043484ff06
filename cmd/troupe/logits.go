package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// logitsCmd writes the logits of every row of --ids, as float32 rows, to
// compare with llama.cpp's.
func logitsCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("logits", stderr)
	path := fs.String("m", "", "model: a GGUF file or a safetensors directory (required)")
	idList := fs.String("ids", "", "comma-separated token ids (required)")
	outPath := fs.String("o", "", "output file: float32 little-endian rows of vocabulary size (required)")
	threads := fs.Int("t", 2, "threads")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" || *idList == "" || *outPath == "" {
		return usageError{"-m MODEL, --ids IDS and -o FILE are required"}
	}
	var ids []int32
	for _, f := range strings.Split(*idList, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return usageError{fmt.Sprintf("--ids: %q is not a token id", f)}
		}
		ids = append(ids, int32(v))
	}
	m, err := openModel(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	c := &m.Config
	for _, id := range ids {
		if id < 0 || int(id) >= c.VocabSize {
			return usageError{fmt.Sprintf("--ids: token %d outside the vocabulary (0..%d)", id, c.VocabSize-1)}
		}
	}
	b, cache, err := oneSequence(c, ids, true)
	if err != nil {
		return err
	}
	logits := make([]float32, len(ids)*c.VocabSize)
	if err := m.Forward(model.NewState(c, *threads), b, cache, logits); err != nil {
		return err
	}
	f, err := os.Create(*outPath)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var buf [4]byte
	for _, v := range logits {
		binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
		w.Write(buf[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d rows of %d logits to %s\n", len(ids), c.VocabSize, *outPath)
	return nil
}

// perplexityCmd is llama-perplexity: the perplexity of a text file, scored
// in windows.
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

// oneSequence is a batch of ids, one sequence from position 0, and a KV
// cache of its own for it; it keeps every row's logits with allRows, else
// the last row's.
func oneSequence(c *model.Config, ids []int32, allRows bool) (*model.Batch, *kv.Cache, error) {
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(),
		NumBlocks: (len(ids) + kv.DefaultBlockSize - 1) / kv.DefaultBlockSize})
	if err != nil {
		return nil, nil, err
	}
	table, err := kv.NewPool(cache.NumBlocks).Grow(nil, len(ids), cache.BlockSize)
	if err != nil {
		return nil, nil, err
	}
	b := &model.Batch{BlockTables: [][]int32{table}}
	for i, id := range ids {
		b.Add(id, int32(i), 0, allRows || i == len(ids)-1)
	}
	return b, cache, nil
}

// openModel opens a model with its tokenizer.
func openModel(path string) (*model.Model, error) { return model.Open(path) }
