package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model/gguf"
)

// Stage is a pipeline stage's share of a decoder: the transformer layers
// [Lo, Hi). The first stage (Lo 0) also embeds the tokens; the last (Hi the
// model's layer count) also applies the final norm and the output head.
// The zero value is the whole model.
//
// A model loaded with LoadOptions.Stage holds only its stage's tensors
// (Weights.Stage says which): the other layers' pages of the mapped file
// are never touched, so they never become resident.
type Stage struct {
	Lo, Hi int
}

// of resolves the zero value to every layer of c.
func (st Stage) of(c *Config) Stage {
	if st == (Stage{}) {
		return Stage{0, c.Layers}
	}
	return st
}

// First reports whether the stage embeds the tokens.
func (st Stage) First() bool { return st.Lo == 0 }

// Last reports whether the stage ends in c's output head.
func (st Stage) Last(c *Config) bool { return st.Hi == c.Layers }

func (st Stage) String() string { return fmt.Sprintf("layers [%d, %d)", st.Lo, st.Hi) }

// Check reports a stage that is not a non-empty range of c's layers.
func (st Stage) Check(c *Config) error {
	if st == (Stage{}) {
		return nil
	}
	if st.Lo < 0 || st.Hi <= st.Lo || st.Hi > c.Layers {
		return fmt.Errorf("model: stage %s: the model has %d layers", st, c.Layers)
	}
	return nil
}

// ErrStage is returned by Forward on a model loaded as a pipeline stage:
// only ForwardStage runs one.
var ErrStage = errors.New("model: a pipeline stage's model runs only through ForwardStage")

// NewStageCache returns a KV cache for the model's stage: numBlocks blocks
// of blockSize tokens for its own layers only.
func (m *Model) NewStageCache(t kv.CacheType, numBlocks, blockSize int) (*kv.Cache, error) {
	c := &m.Config
	st := m.Weights.Stage.of(c)
	return kv.NewStageCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), BlockSize: blockSize, NumBlocks: numBlocks, Type: t}, st.Lo, st.Hi)
}

// ForwardStage runs the batch through the model's stage (Weights.Stage).
// The first stage embeds b's tokens; the others start from in, (n_tokens,
// dim), the rows the stage before stored into its out. A stage that is not
// the last stores its residual rows after its last layer into out,
// (n_tokens, dim); the last stores the logits of the rows with Logits set
// into logits, (NumLogits, VocabSize), as Forward does. Keys and values
// are written for the stage's layers only. Run stage after stage, the
// logits are Forward's bit for bit: the arithmetic is the same, only cut
// between layers, and the rows cross as float32, unrounded.
func (m *Model) ForwardStage(s *State, b *Batch, cache *kv.Cache, in, out, logits []float32) error {
	if m.bert != nil {
		return errors.New("model: an encoder does not run as pipeline stages")
	}
	c := &m.Config
	st := m.Weights.Stage.of(c)
	for l := st.Lo; l < st.Hi; l++ {
		if !cache.HasLayer(l) {
			return fmt.Errorf("model: stage %s: the cache lacks layer %d", st, l)
		}
	}
	n, err := m.prepare(s, b, cache, logits, st.Last(c))
	if err != nil || n == 0 {
		return err
	}
	rows := n * c.Dim
	if !st.First() && len(in) < rows {
		return fmt.Errorf("model: stage %s: %d input values for %d tokens of dim %d", st, len(in), n, c.Dim)
	}
	if !st.Last(c) && len(out) < rows {
		return fmt.Errorf("model: stage %s: output buffer holds %d values, need %d×%d", st, len(out), n, c.Dim)
	}
	if st.First() {
		if err := m.embed(s, b); err != nil {
			return err
		}
	} else {
		copy(s.x[:rows], in[:rows])
	}
	if err := m.layers(s, b, cache, st.Lo, st.Hi, n); err != nil {
		return err
	}
	if !st.Last(c) {
		copy(out[:rows], s.x[:rows])
		return nil
	}
	m.storeHidden(s, b)
	return m.head(s, b, logits)
}

// SplitStages cuts a model's layers into n contiguous stages balanced by
// bytes: layerBytes[l] is layer l's tensors, first the embedding's (read by
// the first stage) and last the output head's (the last stage's). Each
// stage gets at least one layer; the cuts minimize the largest stage
// (greedy over a binary search of the bound).
func SplitStages(layerBytes []int64, first, last int64, n int) ([]Stage, error) {
	L := len(layerBytes)
	if n < 1 || n > L {
		return nil, fmt.Errorf("model: %d pipeline stages for a model of %d layers: want 1 to %d", n, L, L)
	}
	// cost of stage [lo, hi)
	cost := func(lo, hi int) int64 {
		var b int64
		for l := lo; l < hi; l++ {
			b += layerBytes[l]
		}
		if lo == 0 {
			b += first
		}
		if hi == L {
			b += last
		}
		return b
	}
	// fits cuts greedily under bound, leaving one layer per stage to come.
	fits := func(bound int64) []Stage {
		var out []Stage
		lo := 0
		for k := range n {
			hi := lo + 1
			for hi < L-(n-1-k) && cost(lo, hi+1) <= bound {
				hi++
			}
			if k == n-1 {
				hi = L
			}
			if cost(lo, hi) > bound {
				return nil
			}
			out = append(out, Stage{lo, hi})
			lo = hi
		}
		return out
	}
	lo, hi := int64(0), cost(0, L)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fits(mid) != nil {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return fits(hi), nil
}

// PlanStages reads the tensor sizes of a GGUF model (its header only) and
// splits it into n stages balanced by bytes (SplitStages).
func PlanStages(path string, n int) ([]Stage, error) {
	if isDir(path) {
		return nil, fmt.Errorf("model: %s: pipeline stages are planned from a GGUF file, not a safetensors directory", path)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := configFromGGUF(f)
	if err != nil {
		return nil, err
	}
	if c.Encoder {
		return nil, fmt.Errorf("model: %s: an encoder does not run as pipeline stages", path)
	}
	layer := make([]int64, c.Layers)
	var first, last int64
	for _, t := range f.Tensors() {
		name, size := t.Name, int64(t.Size)
		switch {
		case strings.HasPrefix(name, "blk."):
			rest := name[len("blk."):]
			if i := strings.IndexByte(rest, '.'); i > 0 {
				if l, err := strconv.Atoi(rest[:i]); err == nil && l >= 0 && l < c.Layers {
					layer[l] += size
				}
			}
		case name == "token_embd.weight":
			first += size
			if c.TiedOutput {
				last += size
			}
		case strings.HasPrefix(name, "output"):
			last += size
		}
	}
	return SplitStages(layer, first, last, n)
}

// MicroBatch is one part of a batch cut by SplitBatch: the rows [Lo, Hi)
// of the batch as a batch of their own (its Seq re-based on its own block
// tables), and LogitLo, the batch's logit row its first logit row is.
type MicroBatch struct {
	Batch   Batch
	Lo, Hi  int
	LogitLo int
}

// SplitBatch cuts b into at most parts micro-batches of whole sequences, in
// batch order, balanced by rows, for a pipeline to run one after the other
// through every stage. Run so (each stage takes them in order), their
// logits, in order, are b's bit for bit: Forward is batch-invariant, and a
// sequence that reads a block another one writes in this step (a prefix
// hit in its owner's step: blockSize tells which blocks a row writes) is
// never put in a micro-batch before its writer's. A batch that cannot be
// cut, or parts < 2, gives one micro-batch, b itself. b's LoRA and Hidden
// are not carried (a pipeline refuses them); Embeds and AttendTo are.
func SplitBatch(b *Batch, parts, blockSize int) []MicroBatch {
	n := len(b.Tokens)
	whole := []MicroBatch{{Batch: *b, Hi: n}}
	if parts < 2 || n < 2 || blockSize < 1 {
		return whole
	}
	// noCut[c]: no cut between rows c-1 and c, counted by a difference
	// array over the spans that must stay whole.
	noCut := make([]int, n+2)
	keep := func(lo, hi int) { // rows lo..hi in one micro-batch
		if lo < hi {
			noCut[lo+1]++
			noCut[hi+1]--
		}
	}
	first := make(map[int32]int, len(b.BlockTables)) // sequence -> its first row
	last := make(map[int32]int, len(b.BlockTables))
	type writer struct {
		seq int32
		row int
	}
	writes := map[int32][]writer{} // block -> the last row of each sequence writing it
	for r, s := range b.Seq {
		if _, ok := first[s]; !ok {
			first[s] = r
		}
		last[s] = r
		if int(s) < 0 || int(s) >= len(b.BlockTables) {
			return whole // Validate's to report
		}
		bi := int(b.Positions[r]) / blockSize
		if bi < 0 || bi >= len(b.BlockTables[s]) {
			return whole
		}
		blk := b.BlockTables[s][bi]
		ws := writes[blk]
		if len(ws) > 0 && ws[len(ws)-1].seq == s {
			ws[len(ws)-1].row = r
		} else {
			writes[blk] = append(ws, writer{s, r})
		}
	}
	for s, lo := range first {
		keep(lo, last[s]) // a sequence's rows together
		for _, blk := range b.BlockTables[s] {
			for _, w := range writes[blk] {
				if w.seq != s && w.row > lo {
					keep(lo, w.row) // its reader no earlier than its writer
				}
			}
		}
	}
	var cuts []int
	for c, open := 1, 0; c < n; c++ {
		if open += noCut[c]; open == 0 {
			cuts = append(cuts, c)
		}
	}
	// The cut nearest each k*n/parts, increasing.
	var at []int
	next := 0
	for k := 1; k < parts && next < len(cuts); k++ {
		ideal := k * n / parts
		best := -1
		for i := next; i < len(cuts); i++ {
			if best < 0 || abs(cuts[i]-ideal) < abs(cuts[best]-ideal) {
				best = i
			}
			if cuts[i] >= ideal {
				break
			}
		}
		at = append(at, cuts[best])
		next = best + 1
	}
	if len(at) == 0 {
		return whole
	}
	at = append(at, n)
	out := make([]MicroBatch, 0, len(at))
	lo, logitLo := 0, 0
	for _, hi := range at {
		mb := MicroBatch{Lo: lo, Hi: hi, LogitLo: logitLo}
		mb.Batch = b.rows(lo, hi)
		logitLo += mb.Batch.NumLogits()
		out = append(out, mb)
		lo = hi
	}
	return out
}

// rows returns b's rows [lo, hi) as a batch with only their sequences'
// block tables.
func (b *Batch) rows(lo, hi int) Batch {
	p := Batch{Tokens: b.Tokens[lo:hi], Positions: b.Positions[lo:hi], Logits: b.Logits[lo:hi], Seq: make([]int32, hi-lo)}
	if len(b.Embeds) == len(b.Tokens) {
		p.Embeds = b.Embeds[lo:hi]
	}
	if len(b.AttendTo) == len(b.Tokens) {
		p.AttendTo = b.AttendTo[lo:hi]
	}
	index := map[int32]int32{}
	for i, s := range b.Seq[lo:hi] {
		j, ok := index[s]
		if !ok {
			j = int32(len(p.BlockTables))
			index[s] = j
			p.BlockTables = append(p.BlockTables, b.BlockTables[s])
		}
		p.Seq[i] = j
	}
	return p
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
