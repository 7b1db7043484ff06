package sched

import (
	"fmt"
	"slices"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

// Scheduler plans the micro-batches of one device.
type Scheduler struct {
	cfg     Config
	blocks  *kv.BlockManager
	host    *kv.Pool
	seqs    map[kv.SeqID]*Seq
	running []*Seq // sorted by before
	waiting []*Seq // Waiting and Swapped, sorted by before
	arrival uint64
	step    uint64 // Schedule calls so far

	plan     Plan // the plan in flight, reused
	inFlight bool

	preemptions, swapOuts, swapIns, rejected int64
	spec                                     specStats
}

// Chunk is a run of one sequence's tokens to compute in a step:
// Seq.Tokens[Start:End], at positions Start..End-1. Logits says the last
// token's logits are wanted: End is the end of the sequence's tokens.
//
// Draft, when not 0, is the number of Seq.Draft tokens computed after End,
// at positions End..End+Draft-1, each with logits as well: the step
// verifies them (see Done). Their K/V slots are kv.BlockManager.AppendDraft's.
type Chunk struct {
	Seq        *Seq
	Start, End int
	Logits     bool
	Draft      int
}

// Plan is one step: the block copies the device does first (SwapOut, then
// SwapIn), then the chunks, in batch order. Preempted and Resumed list the
// sequences that changed state in this step, for their actors.
type Plan struct {
	SwapOut   []messages.BlockCopy
	SwapIn    []messages.BlockCopy
	Chunks    []Chunk
	Preempted []*Seq
	Resumed   []*Seq

	hostRelease [][]int32 // host blocks swapped in by this plan, freed once it is done
	admitted    []*Seq    // sequences admitted for the first time by this plan
}

// NumTokens is the number of tokens the plan computes.
func (p *Plan) NumTokens() int {
	n := 0
	for _, c := range p.Chunks {
		n += c.End - c.Start + c.Draft
	}
	return n
}

// New returns a Scheduler for cfg, or cfg's Validate error.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	return &Scheduler{
		cfg:    cfg,
		blocks: kv.NewBlockManager(cfg.NumBlocks, cfg.BlockSize, !cfg.NoPrefixCaching),
		host:   kv.NewPool(cfg.NumHostBlocks),
		seqs:   make(map[kv.SeqID]*Seq),
	}, nil
}

// Config returns the scheduler's configuration, defaults applied.
func (s *Scheduler) Config() Config { return s.cfg }

// Add enters a new sequence, waiting and ready. maxTokens <= 0 means until
// the context is full. It returns an error wrapping ErrNeverFits for a
// sequence that could not run even alone, and kv.ErrSeqExists for an id in
// use; nothing is entered then.
func (s *Scheduler) Add(id kv.SeqID, prompt []int32, maxTokens, priority int) (*Seq, error) {
	if _, ok := s.seqs[id]; ok {
		return nil, fmt.Errorf("sched: add seq %d: %w", id, kv.ErrSeqExists)
	}
	maxLen := s.cfg.MaxModelLen
	if maxTokens > 0 {
		maxLen = min(maxLen, len(prompt)+maxTokens)
	}
	blocksNeeded := s.cfg.BlocksNeeded(maxLen)
	switch {
	case len(prompt) == 0:
		s.rejected++
		return nil, fmt.Errorf("sched: seq %d: %w: empty prompt", id, ErrNeverFits)
	case len(prompt) >= s.cfg.MaxModelLen:
		s.rejected++
		return nil, fmt.Errorf("sched: seq %d: %w: prompt of %d tokens leaves no room in a context of %d",
			id, ErrNeverFits, len(prompt), s.cfg.MaxModelLen)
	case blocksNeeded > s.cfg.NumBlocks:
		s.rejected++
		return nil, fmt.Errorf("sched: seq %d: %w: %d tokens need %d KV blocks, the device has %d",
			id, ErrNeverFits, maxLen-1, blocksNeeded, s.cfg.NumBlocks)
	}
	s.arrival++
	q := &Seq{ID: id, Priority: priority, Tokens: slices.Clip(slices.Clone(prompt)), PromptLen: len(prompt),
		MaxLen: maxLen, Status: Waiting, Ready: true, arrival: s.arrival}
	s.seqs[id] = q
	s.waiting = insertSorted(s.waiting, q)
	return q, nil
}

// Get returns the sequence id, or nil.
func (s *Scheduler) Get(id kv.SeqID) *Seq { return s.seqs[id] }

// Ready marks sequence id as wanting its next step. It reports whether the
// sequence is known.
func (s *Scheduler) Ready(id kv.SeqID) bool {
	q, ok := s.seqs[id]
	if ok {
		q.Ready = true
	}
	return ok
}

// Finish removes sequence id wherever it is, freeing its device and host
// blocks at once, and reports whether it was known. A sequence in the plan
// in flight is skipped by Done; the device may still write the blocks it
// held, which is harmless: a new owner writes a position before reading it,
// and the device runs steps in order.
func (s *Scheduler) Finish(id kv.SeqID) bool {
	q, ok := s.seqs[id]
	if !ok {
		return false
	}
	s.drop(q)
	return true
}

func (s *Scheduler) drop(q *Seq) {
	switch q.Status {
	case Running:
		s.running = remove(s.running, q)
		_ = s.blocks.Free(q.ID)
	case Waiting:
		s.waiting = remove(s.waiting, q)
	case Swapped:
		s.waiting = remove(s.waiting, q)
		s.host.Release(q.host)
		q.host = nil
	}
	q.Status, q.Ready = Finished, false
	delete(s.seqs, q.ID)
}

// Idle reports whether no sequence is known.
func (s *Scheduler) Idle() bool { return len(s.seqs) == 0 }

// InFlight reports whether a plan is out (Schedule was called and neither
// Done nor Fail yet).
func (s *Scheduler) InFlight() bool { return s.inFlight }

// Trigger says whether a step should be dispatched now (fire: every running
// sequence is ready, or ready work fills the token or sequence budget) and
// whether any ready work is waiting at all (pending: if it does not fire,
// dispatch it when the batching window has passed).
func (s *Scheduler) Trigger() (fire, pending bool) {
	tokens, seqs, allRunning := 0, 0, true
	for _, q := range s.running {
		if !q.Ready {
			allRunning = false
			continue
		}
		tokens += len(q.Tokens) - q.NumComputed
		seqs++
	}
	for _, q := range s.waiting {
		if q.Ready {
			tokens += len(q.Tokens) - q.NumComputed
			seqs++
		}
	}
	pending = seqs > 0
	fire = pending && ((len(s.running) > 0 && allRunning) ||
		tokens >= s.cfg.MaxNumBatchedTokens || seqs >= s.cfg.MaxNumSeqs)
	return fire, pending
}

func insertSorted(list []*Seq, q *Seq) []*Seq {
	i, _ := slices.BinarySearchFunc(list, q, func(a, b *Seq) int {
		if before(a, b) {
			return -1
		}
		return 1
	})
	return slices.Insert(list, i, q)
}

func remove(list []*Seq, q *Seq) []*Seq {
	if i := slices.Index(list, q); i >= 0 {
		return slices.Delete(list, i, i+1)
	}
	return list
}
