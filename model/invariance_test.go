package model_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// Batch invariance: the logits of a (sequence, position) must not depend,
// in any bit, on what else is computed in the same Forward call or how the
// sequence was cut into calls. The runtime relies on it: a greedy sequence
// yields the same tokens alone or batched, prefilled whole or in chunks, and
// after a recompute preemption (its prompt and generated tokens prefilled
// again) as when it decoded them one by one.

const (
	invLen      = 40 // tokens of each test stream
	invLenShort = 28 // the same, for the models running only the short cases
	invPrompt   = 16 // prompt tokens of the greedy stream before decoding
)

// invarianceModels is every shared model (synthetic-more's too). The 256-dim synthetic ones, ~10×
// slower per token, run only the short cases on shorter streams, except F16
// (float weights) as their representative.
var invarianceModels = []struct {
	rel      string
	allCases bool
}{
	{"stories260K.gguf", true},
	{"TinyStories-656K-Q8_0.gguf", true},
	{"tinystories-656k-safetensors", true},
	{"synthetic/synth-llama-tiny256-Q2_K.gguf", false},
	{"synthetic/synth-llama-tiny256-Q3_K_S.gguf", false},
	{"synthetic/synth-llama-tiny256-Q4_0.gguf", false},
	{"synthetic/synth-llama-tiny256-Q4_1.gguf", false},
	{"synthetic/synth-llama-tiny256-Q4_K_S.gguf", false},
	{"synthetic/synth-llama-tiny256-Q4_K_M.gguf", false},
	{"synthetic/synth-llama-tiny256-Q5_0.gguf", false},
	{"synthetic/synth-llama-tiny256-Q5_1.gguf", false},
	{"synthetic/synth-llama-tiny256-Q5_K_S.gguf", false},
	{"synthetic/synth-llama-tiny256-Q6_K.gguf", false},
	{"synthetic/synth-llama-tiny256-Q8_0.gguf", false},
	{"synthetic/synth-llama-tiny256-F16.gguf", true},
	{"synthetic/synth-llama-tiny256-BF16.gguf", false},
	{"synthetic/synth-qwen2-tiny256-Q8_0.gguf", false},
	{"synthetic/synth-qwen3-tiny256-Q8_0.gguf", false},
	{"synthetic-more/synth-llama-tiny256-IQ4_NL.gguf", false},
	{"synthetic-more/synth-llama-tiny256-IQ4_XS.gguf", false},
	{"synthetic-more/synth-llama-hd64-IQ4_XS.gguf", false},
	{"synthetic-more/synth-llama-hd64-F16.gguf", false},
	{"synthetic-more/synth-llama-hd64-Q4_0.gguf", false},
	{"synthetic-more/synth-llama-hd64-Q5_K_M.gguf", false},
	{"synthetic-more/synth-llama-hd64-Q8_0.gguf", false},
	{"synthetic-more/synth-llama-hd128-BF16.gguf", false},
	{"synthetic-more/synth-llama-hd128-Q4_K_M.gguf", false},
	{"synthetic-more/synth-qwen2-hd64-Q6_K.gguf", false},
}

// invCase is one way of running stream A (the target), compared row by row
// with A run alone as one batch on 2 workers.
type invCase struct {
	name          string
	short         bool // run on every model, not only those with allCases
	workers       int
	prompt, chunk int  // A's prefill: prompt tokens (0: all) in chunks of chunk, then one per step
	others        int  // other sequences sharing the batches (see otherSeqs)
	interleave    bool // shuffle the tokens of all sequences within each batch
}

var invCases = []invCase{
	{name: "chunk1", workers: 2, chunk: 1},
	{name: "chunk7", workers: 2, chunk: 7},
	{name: "chunk16", workers: 2, chunk: 16},
	{name: "chunk33", workers: 2, chunk: 33},
	{name: "whole-workers1", workers: 1, chunk: invLen},
	{name: "mixed3-chunk7", short: true, workers: 2, chunk: 7, others: 3},
	{name: "mixed8", workers: 2, prompt: 33, chunk: 33, others: 8},
	{name: "mixed16-interleaved", workers: 2, prompt: invPrompt, chunk: 16, others: 16, interleave: true},
	{name: "mixed16-interleaved-workers1", workers: 1, prompt: 23, chunk: 5, others: 16, interleave: true},
}

// TestBatchInvariance checks, for every shared model, that Forward's logits
// for a sequence are bitwise identical (math.Float32bits) whether the
// sequence runs alone as one batch, in chunks of 1, 7, 16 or 33 tokens, as a
// greedy decode, among 3 to 16 other sequences of other lengths (prefilling
// and decoding, in shuffled order), or on 1 worker instead of 2.
func TestBatchInvariance(t *testing.T) {
	for _, im := range invarianceModels {
		t.Run(strings.TrimSuffix(filepath.Base(im.rel), ".gguf"), func(t *testing.T) {
			batchInvariance(t, openModel(t, testmodels.Path(t, im.rel)), uint64(len(im.rel)), im.allCases)
		})
	}
}

// batchInvariance runs TestBatchInvariance's cases on m (all of them when
// allCases, else the short ones), with random streams seeded by seed.
func batchInvariance(t *testing.T, m *model.Model, seed uint64, allCases bool) {
	vocab := m.Config.VocabSize
	rng := rand.New(rand.NewPCG(1, seed))
	// One State per worker count, reused from case to case as the
	// runtime reuses its own.
	states := map[int]*model.State{1: model.NewState(&m.Config, 1), 2: model.NewState(&m.Config, 2)}

	// Stream A: a prompt, then greedy tokens decoded one per step,
	// on 1 worker (the reference runs on 2).
	n := invLenShort
	if allCases {
		n = invLen
	}
	gen := &invSeq{ids: randomTokens(rng, invPrompt, vocab), total: n, prompt: invPrompt, chunk: invPrompt}
	runInvariance(t, m, states[1], []*invSeq{gen}, false, 0)
	alone := &invSeq{ids: gen.ids, total: n, prompt: n, chunk: n}
	runInvariance(t, m, states[2], []*invSeq{alone}, false, 0)
	a := stream{ids: gen.ids, ref: alone.rows}
	// Stream B: other tokens, checked only with allCases.
	b := stream{ids: randomTokens(rng, n, vocab)}
	if allCases {
		bs := &invSeq{ids: b.ids, total: n, prompt: n, chunk: n}
		runInvariance(t, m, states[2], []*invSeq{bs}, false, 0)
		b.ref = bs.rows
	}

	t.Run("decode-workers1", func(t *testing.T) {
		// Recompute preemption: prompt and generated tokens
		// prefilled again must give the rows the decode steps gave.
		checkInvariance(t, []*invSeq{gen}, alone.rows, vocab)
	})
	for ci, tc := range invCases {
		if !tc.short && !allCases {
			continue
		}
		t.Run(tc.name, func(t *testing.T) { runInvCase(t, m, states, tc, uint64(ci), a, b, n) })
	}
}

// TestMatchGGMLBatching checks that State.MatchGGMLBatching reproduces
// llama.cpp's logits on the files whose Q2_K and Q4_K kernels depend on the
// batch in llama.cpp: on the reference case where the batch-invariant
// kernels drift furthest from them (4.8–6.1% of the row std), the logits
// must come within 0.001% of the row std.
func TestMatchGGMLBatching(t *testing.T) {
	for _, name := range []string{"synth-llama-tiny256-Q2_K", "synth-llama-tiny256-Q4_K_S", "synth-llama-tiny256-Q4_K_M"} {
		t.Run(name, func(t *testing.T) {
			m := openModel(t, testmodels.Path(t, "synthetic/"+name+".gguf"))
			rc := loadCases(t, name)[2]
			st := model.NewState(&m.Config, 2)
			st.MatchGGMLBatching(true)
			// As llama.cpp made the reference: the prompt as one batch, then
			// one token per step.
			ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)[:rc.LogitRows]
			s := &invSeq{ids: ids, total: len(ids), prompt: len(rc.PromptIDs), chunk: len(rc.PromptIDs)}
			runInvariance(t, m, st, []*invSeq{s}, false, 0)
			worst := 0.0
			for r := range rc.LogitRows {
				ref, row := rc.Logits[r*rc.NVocab:(r+1)*rc.NVocab], s.rows[r*rc.NVocab:(r+1)*rc.NVocab]
				maxd := 0.0
				for j := range ref {
					maxd = math.Max(maxd, math.Abs(float64(ref[j]-row[j])))
				}
				worst = math.Max(worst, maxd/stdDev(ref))
			}
			t.Logf("max |Δ|/std %.5f%%", worst*100)
			if worst > 1e-5 {
				t.Errorf("max |Δ|/std %.5f%% from llama.cpp, want ≤ 0.001%%", worst*100)
			}
		})
	}
}

// stream is a token sequence and, when checked, its logits run alone as one
// batch, (len(ids), vocab).
type stream struct {
	ids []int32
	ref []float32
}

// invSeq is one sequence of a run: how it is fed, and the rows it got.
type invSeq struct {
	ids           []int32   // tokens known so far (the prompt when generating)
	ref           []float32 // (len(ids), vocab) expected rows; nil: not checked
	total         int       // feed this many tokens, appending greedy ones past len(ids)
	join          int       // step at which it enters
	prompt, chunk int       // prefill prompt tokens chunk at a time, then one per step

	fed   int
	table []int32
	rows  []float32 // (total, vocab) logits computed
	have  []bool    // (total) rows computed
}

// otherSeqs returns n sequences of various lengths, joining at various
// steps, each with its own chunking; even ones are prefixes of A, odd ones
// of B (checked against the prefix of the stream's rows when it has them).
func otherSeqs(n int, a, b stream) []*invSeq {
	chunks := []int{1, 3, 7, 16, 33}
	var seqs []*invSeq
	for i := range n {
		src := a
		if i%2 == 1 {
			src = b
		}
		l := 6 + (i*11)%(len(a.ids)-5)
		s := &invSeq{ids: src.ids[:l], total: l, join: i % 5, prompt: 1 + (i*5)%l, chunk: chunks[i%len(chunks)]}
		if src.ref != nil {
			s.ref = src.ref[:l*len(src.ref)/len(src.ids)]
		}
		seqs = append(seqs, s)
	}
	return seqs
}

func randomTokens(rng *rand.Rand, n, vocab int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(rng.IntN(vocab))
	}
	return ids
}

// runInvariance feeds seqs through Forward step by step, as a scheduler
// would: each step takes every joined sequence's next prefill chunk or decode
// token, in an order shuffled per step (or with all tokens shuffled when
// interleave is set). A lone sequence gets the logits of every row; among
// others, the last row of each chunk and a third of the rest.
func runInvariance(t *testing.T, m *model.Model, st *model.State, seqs []*invSeq, interleave bool, seed uint64) {
	t.Helper()
	c := &m.Config
	const blockSize = 16
	blocks := 0
	for _, s := range seqs {
		blocks += (s.total + blockSize - 1) / blockSize
		s.rows = make([]float32, s.total*c.VocabSize)
		s.have = make([]bool, s.total)
	}
	cache, err := kv.NewCache(kv.CacheConfig{Layers: c.Layers, KVDim: c.KVDim(), NumBlocks: blocks, BlockSize: blockSize})
	if err != nil {
		t.Fatal(err)
	}
	pool := kv.NewPool(blocks)
	rng := rand.New(rand.NewPCG(seed, 7))
	type entry struct {
		s   *invSeq
		pos int
	}
	var (
		b       model.Batch
		entries []entry
		logits  []float32
	)
	for step := 0; ; step++ {
		var active []*invSeq
		for _, s := range seqs {
			if step >= s.join && s.fed < s.total {
				active = append(active, s)
			}
		}
		if len(active) == 0 {
			break
		}
		rng.Shuffle(len(active), func(i, j int) { active[i], active[j] = active[j], active[i] })
		entries = entries[:0]
		for _, s := range active {
			n := 1
			if s.fed < s.prompt {
				n = min(s.chunk, s.prompt-s.fed)
			}
			if s.table, err = pool.Grow(s.table, s.fed+n, blockSize); err != nil {
				t.Fatal(err)
			}
			for p := s.fed; p < s.fed+n; p++ {
				entries = append(entries, entry{s, p})
			}
			s.fed += n
		}
		if interleave {
			rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
		}
		b.Reset()
		index := map[*invSeq]int32{}
		for _, s := range active {
			index[s] = int32(len(b.BlockTables))
			b.BlockTables = append(b.BlockTables, s.table)
		}
		for _, e := range entries {
			want := len(seqs) == 1 || e.pos == e.s.fed-1 || rng.IntN(3) == 0
			b.Add(e.s.ids[e.pos], int32(e.pos), index[e.s], want)
		}
		logits = slices.Grow(logits[:0], b.NumLogits()*c.VocabSize)[:b.NumLogits()*c.VocabSize]
		if err := m.Forward(st, &b, cache, logits); err != nil {
			t.Fatal(err)
		}
		r := 0
		for i, e := range entries {
			if !b.Logits[i] {
				continue
			}
			copy(e.s.rows[e.pos*c.VocabSize:(e.pos+1)*c.VocabSize], logits[r*c.VocabSize:(r+1)*c.VocabSize])
			e.s.have[e.pos] = true
			r++
		}
		for _, s := range active { // greedy: the last row chooses the next token
			if s.fed == len(s.ids) && len(s.ids) < s.total {
				s.ids = append(s.ids, argmax(s.rows[(s.fed-1)*c.VocabSize:s.fed*c.VocabSize]))
			}
		}
	}
	for _, s := range seqs {
		pool.Release(s.table)
	}
}

// checkInvariance compares every computed row of the checked sequences with
// its expected row (each sequence's ref, or want when not nil) bit for bit,
// and reports how many rows differ and by how much.
func checkInvariance(t *testing.T, seqs []*invSeq, want []float32, vocab int) {
	t.Helper()
	rows, bad, maxd, first := 0, 0, 0.0, ""
	for si, s := range seqs {
		ref := s.ref
		if want != nil {
			ref = want
		}
		if ref == nil {
			continue
		}
		for p, ok := range s.have {
			if !ok {
				continue
			}
			rows++
			got, exp := s.rows[p*vocab:(p+1)*vocab], ref[p*vocab:(p+1)*vocab]
			differs := false
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(exp[j]) {
					differs = true
					maxd = math.Max(maxd, math.Abs(float64(got[j]-exp[j])))
				}
			}
			if differs {
				if bad == 0 {
					first = fmt.Sprintf("sequence %d position %d", si, p)
				}
				bad++
			}
		}
	}
	if rows == 0 {
		t.Fatal("no rows checked")
	}
	if bad > 0 {
		t.Errorf("%d of %d rows not bit-identical to running alone as one batch (first: %s), max |Δ| %.3g", bad, rows, first, maxd)
	}
}

// runInvCase runs stream a (n tokens) as tc says, on states' State for
// tc.workers, among tc.others sequences of a and b (shuffled with seed),
// and checks a's rows against a.ref.
func runInvCase(t *testing.T, m *model.Model, states map[int]*model.State, tc invCase, seed uint64, a, b stream, n int) {
	prompt := tc.prompt
	if prompt == 0 {
		prompt = n
	}
	target := &invSeq{ids: a.ids, ref: a.ref, total: n, prompt: prompt, chunk: tc.chunk}
	seqs := append([]*invSeq{target}, otherSeqs(tc.others, a, b)...)
	runInvariance(t, m, states[tc.workers], seqs, tc.interleave, seed)
	checkInvariance(t, seqs, nil, m.Config.VocabSize)
}

func argmax(row []float32) int32 {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return int32(best)
}
