package sched

import "github.com/troupe-llm/troupe/kv"

// Moving K/V blocks between members (disaggregated prefill and decode):
// the scheduler lends its block manager's prefix cache. Ids passed here
// must not collide with sequences' (the batcher takes them from a range of
// their own); a hold or an import is freed with Release.

// HoldPrefix holds the cached full blocks of tokens from token from on (at
// most maxBlocks; 0: all) until Release(id); see kv.BlockManager.HoldPrefix.
func (s *Scheduler) HoldPrefix(id kv.SeqID, tokens []int32, from, maxBlocks int) ([]int32, error) {
	return s.blocks.HoldPrefix(id, 0, tokens, from, maxBlocks)
}

// ImportPrefix allocates and registers the blocks of tokens[:end] the
// prefix cache lacks, unless a block before from is missing; see
// kv.BlockManager.ImportPrefix.
func (s *Scheduler) ImportPrefix(id kv.SeqID, tokens []int32, from, end int) (cached int, blocks []int32, err error) {
	return s.blocks.ImportPrefix(id, 0, tokens, from, end)
}

// Release frees a hold or an import: its blocks stay cached.
func (s *Scheduler) Release(id kv.SeqID) error { return s.blocks.Free(id) }
