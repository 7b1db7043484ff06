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
