package bench

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// ModelOptions configures a llama-bench run: the forward pass alone, no
// actors, no sampling.
type ModelOptions struct {
	Prompt  int          // pp test: tokens processed as one batch from an empty cache (0: none)
	Gen     int          // tg test: tokens decoded one at a time from an empty cache (0: none)
	Reps    int          // repetitions of each test, after one warm-up run
	Workers int          // threads of the forward pass
	Seed    uint64       // token ids are random, as llama-bench's are
	KVCache kv.CacheType // element type of the KV cache (-ctk/-ctv); the zero value is F16
}

// Validate reports an impossible option.
func (o ModelOptions) Validate() error {
	switch {
	case o.Prompt < 0 || o.Gen < 0:
		return fmt.Errorf("bench: -p %d, -n %d: want ≥ 0", o.Prompt, o.Gen)
	case o.Prompt == 0 && o.Gen == 0:
		return fmt.Errorf("bench: nothing to run: -p and -n are both 0")
	case o.Reps < 1:
		return fmt.Errorf("bench: -r %d: want at least 1", o.Reps)
	case o.Workers < 1:
		return fmt.Errorf("bench: -t %d: want at least 1", o.Workers)
	}
	return nil
}

// ModelResult is one test: "pp512" or "tg128", with the tokens per second
// of each repetition.
type ModelResult struct {
	Test   string
	Tokens int
	TPS    []float64
}

// Mean is the average tokens per second over the repetitions.
func (r ModelResult) Mean() float64 {
	var s float64
	for _, v := range r.TPS {
		s += v
	}
	return s / float64(len(r.TPS))
}

// Std is the sample standard deviation of the tokens per second (0 for one
// repetition), as llama-bench reports it.
func (r ModelResult) Std() float64 {
	if len(r.TPS) < 2 {
		return 0
	}
	m := r.Mean()
	var s float64
	for _, v := range r.TPS {
		s += float64((v - m) * (v - m)) // explicit conversion: no fused multiply-add, as amd64 computes it
	}
	return math.Sqrt(s / float64(len(r.TPS)-1))
}

// Model runs llama-bench's tests on m: pp (the prompt as one batch, logits
// for its last token) and tg (one token at a time, logits every step),
// each from an empty cache, a warm-up run first.
func Model(m *model.Model, o ModelOptions) ([]ModelResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c := &m.Config
	n := max(o.Prompt, o.Gen)
	cache, err := kv.NewCache(modelCache(c, o))
	if err != nil {
		return nil, err
	}
	table, err := kv.NewPool(cache.NumBlocks).Grow(nil, n, cache.BlockSize)
	if err != nil {
		return nil, err
	}
	r := &modelRun{m: m, st: model.NewState(c, o.Workers), cache: cache, table: table,
		batch: &model.Batch{}, logits: make([]float32, c.VocabSize),
		rng: rand.New(rand.NewPCG(o.Seed, 0x6c6c616d61))} // "llama"
	var out []ModelResult
	for _, t := range []struct {
		name string
		n    int
		run  func(int) error
	}{{"pp", o.Prompt, r.prompt}, {"tg", o.Gen, r.gen}} {
		if t.n == 0 {
			continue
		}
		res := ModelResult{Test: fmt.Sprintf("%s%d", t.name, t.n), Tokens: t.n}
		if err := t.run(t.n); err != nil { // warm-up
			return nil, err
		}
		for range o.Reps {
			start := time.Now()
			if err := t.run(t.n); err != nil {
				return nil, err
			}
			res.TPS = append(res.TPS, float64(t.n)/time.Since(start).Seconds())
		}
		out = append(out, res)
	}
	return out, nil
}

// modelCache is the KV cache Model runs on: max(pp, tg) tokens.
func modelCache(c *model.Config, o ModelOptions) kv.CacheConfig {
	n := max(o.Prompt, o.Gen)
	return kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), BlockSize: kv.DefaultBlockSize,
		NumBlocks: (n + kv.DefaultBlockSize - 1) / kv.DefaultBlockSize, Type: o.KVCache}
}

// ModelKVBytes is the memory of the KV cache Model(m, o) runs on.
func ModelKVBytes(m *model.Model, o ModelOptions) int64 {
	cc := modelCache(&m.Config, o)
	return cc.Bytes()
}

// modelRun is the state of one Model call.
type modelRun struct {
	m      *model.Model
	st     *model.State
	cache  *kv.Cache
	table  []int32
	batch  *model.Batch
	logits []float32
	rng    *rand.Rand
}

func (r *modelRun) reset() {
	r.batch.Reset()
	r.batch.BlockTables = append(r.batch.BlockTables, r.table)
}

// prompt processes n random tokens as one batch from position 0.
func (r *modelRun) prompt(n int) error {
	r.reset()
	for i := range n {
		r.batch.Add(int32(r.rng.IntN(r.m.Config.VocabSize)), int32(i), 0, i == n-1)
	}
	return r.m.Forward(r.st, r.batch, r.cache, r.logits)
}

// gen decodes n random tokens one at a time from position 0.
func (r *modelRun) gen(n int) error {
	for i := range n {
		r.reset()
		r.batch.Add(int32(r.rng.IntN(r.m.Config.VocabSize)), int32(i), 0, true)
		if err := r.m.Forward(r.st, r.batch, r.cache, r.logits); err != nil {
			return err
		}
	}
	return nil
}

// ModelInfo describes a model the way llama-bench's first columns do.
type ModelInfo struct {
	Name   string // "llama 1.1B Q4_0"
	Bytes  int64  // size of the weight matrices as stored (norms left out)
	Params int64
}

// DescribeModel returns m's llama-bench description: architecture, size
// class, and the type of its layer matrices (the most common one, with
// "mix" where several occur, as in Q4_K_M files).
func DescribeModel(m *model.Model) ModelInfo {
	w := m.Weights
	var info ModelInfo
	count := map[compute.DType]int64{}
	add := func(t *compute.Tensor, layer bool) {
		if t == nil {
			return
		}
		rb := int64(t.RowBytes()) * int64(t.Rows())
		info.Bytes += rb
		info.Params += int64(t.Elems())
		if layer {
			count[t.Type] += int64(t.Elems())
		}
	}
	add(w.TokEmbd, false)
	if w.Output != w.TokEmbd {
		add(w.Output, false)
	}
	for i := range w.Layers {
		l := &w.Layers[i]
		for _, t := range []*compute.Tensor{l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down} {
			add(t, true)
		}
		for _, t := range l.MoE.Matrices() { // the experts and routers of a mixture of experts
			add(t, true)
		}
	}
	var top compute.DType
	for t, n := range count {
		if n > count[top] || (n == count[top] && t < top) {
			top = t
		}
	}
	typ := top.String()
	if len(count) > 1 {
		typ += " mix"
	}
	info.Name = fmt.Sprintf("%s %s %s", m.Config.Arch, sizeClass(info.Params), typ)
	return info
}

// sizeClass names a parameter count: "1.1B", "135M", "292K".
func sizeClass(p int64) string {
	switch {
	case p >= 1e9:
		return strconv.FormatFloat(math.Round(float64(p)/1e8)/10, 'f', -1, 64) + "B"
	case p >= 1e6:
		return fmt.Sprintf("%dM", (p+5e5)/1e6)
	}
	return fmt.Sprintf("%dK", (p+500)/1000)
}

// PeakRSS returns the process's peak resident set size (VmHWM) in bytes,
// or 0 where /proc is not available.
func PeakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
