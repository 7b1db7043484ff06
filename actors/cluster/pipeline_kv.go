package cluster

import (
	"fmt"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// kvFresh tracks, after a stage's member was lost and another took its
// place, which KV slots every stage holds: the new member's cache is
// empty, while the runtime's block tables (its running sequences, its
// prefix cache) still count on what was written before. A slot is fresh
// once a step that wrote it succeeded; a step that would read a slot that
// is not fails, so that stale KV is never read: its sequences end with an
// error and the runtime drops its cached prefixes (the batcher's failed
// step). Until the first rejoin nothing is checked. The pipeline's mutex
// guards it.
type kvFresh struct {
	blockSize int
	on        bool   // a member rejoined: reads are checked
	ok        []bool // (num_blocks, block_size) slot written by a step that succeeded since
	writes    map[int]bool
}

// reset marks every slot stale: a member rejoined.
func (f *kvFresh) reset() {
	f.on = true
	clear(f.ok)
}

// slot is the index of position pos of a sequence with table in f.ok; -1
// when the table does not cover it.
func (f *kvFresh) slot(table []int32, pos int) int {
	bi := pos / f.blockSize
	if pos < 0 || bi >= len(table) || table[bi] == kv.NoBlock || int(table[bi]) < 0 {
		return -1
	}
	s := int(table[bi])*f.blockSize + pos%f.blockSize
	if s >= len(f.ok) {
		return -1
	}
	return s
}

// check returns an error when a row of b would read a slot that is not
// fresh and that b does not write itself. window is the model's KV window
// (0: every position).
func (f *kvFresh) check(b *model.Batch, window int) error {
	if !f.on {
		return nil
	}
	if f.writes == nil {
		f.writes = map[int]bool{}
	}
	clear(f.writes)
	reach := map[int32]int{} // sequence -> the position its last row reads up to
	for r, s := range b.Seq {
		if int(s) < 0 || int(s) >= len(b.BlockTables) {
			return nil // Validate's to report
		}
		p := int(b.Positions[r])
		if sl := f.slot(b.BlockTables[s], p); sl >= 0 {
			f.writes[sl] = true
		}
		reach[s] = max(reach[s], p)
	}
	for s, p := range reach {
		table := b.BlockTables[s]
		for q := kv.WindowStart(p, window); q < p; q++ {
			if sl := f.slot(table, q); sl >= 0 && !f.ok[sl] && !f.writes[sl] {
				return fmt.Errorf("cluster: a pipeline stage's member was replaced: the KV of position %d of a sequence of this step was written before, and is gone; run the request again", q)
			}
		}
	}
	return nil
}

// mark records the slots b wrote: fresh when the step succeeded, stale
// when it failed (some stages may have written them, others not).
func (f *kvFresh) mark(b *model.Batch, ok bool) {
	if !f.on {
		return
	}
	for r, s := range b.Seq {
		if int(s) < 0 || int(s) >= len(b.BlockTables) {
			continue
		}
		if sl := f.slot(b.BlockTables[s], int(b.Positions[r])); sl >= 0 {
			f.ok[sl] = ok
		}
	}
}
