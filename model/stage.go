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
