package sched

import (
	"fmt"
	"slices"

	"github.com/troupe-llm/troupe/kv"
)

// AddEmbedding enters a prefill-only sequence (an embedding), waiting and
// ready: every prompt token is computed (NoPrefixCache), in one step when
// whole is set, and the step that computes its last token ends it (the
// caller's stop). Its prompt may fill the context, since nothing is
// generated after it. Errors are Add's.
func (s *Scheduler) AddEmbedding(id kv.SeqID, prompt []int32, priority int, whole bool) (*Seq, error) {
	if _, ok := s.seqs[id]; ok {
		return nil, fmt.Errorf("sched: add seq %d: %w", id, kv.ErrSeqExists)
	}
	blocksNeeded := (len(prompt) + s.cfg.BlockSize - 1) / s.cfg.BlockSize
	var err error
	switch {
	case len(prompt) == 0:
		err = fmt.Errorf("sched: seq %d: %w: empty prompt", id, ErrNeverFits)
	case len(prompt) > s.cfg.MaxModelLen:
		err = fmt.Errorf("sched: seq %d: %w: prompt of %d tokens past a context of %d", id, ErrNeverFits, len(prompt), s.cfg.MaxModelLen)
	case blocksNeeded > s.cfg.NumBlocks:
		err = fmt.Errorf("sched: seq %d: %w: %d tokens need %d KV blocks, the device has %d", id, ErrNeverFits, len(prompt), blocksNeeded, s.cfg.NumBlocks)
	case whole && len(prompt) > s.cfg.MaxNumBatchedTokens:
		err = fmt.Errorf("sched: seq %d: %w: %d tokens in one step, the budget is %d", id, ErrNeverFits, len(prompt), s.cfg.MaxNumBatchedTokens)
	}
	if err != nil {
		s.rejected++
		return nil, err
	}
	s.arrival++
	q := &Seq{ID: id, Priority: priority, Tokens: slices.Clip(slices.Clone(prompt)), PromptLen: len(prompt),
		MaxLen: len(prompt) + 1, Status: Waiting, Ready: true, NoPrefixCache: true, Whole: whole, arrival: s.arrival}
	s.seqs[id] = q
	s.waiting = insertSorted(s.waiting, q)
	return q, nil
}
