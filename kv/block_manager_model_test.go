package kv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// check returns the first broken invariant of m: every block is exactly one
// of plain free, cached free, or in use with ref == the number of tables
// holding it; the free lists are well linked and counted; registered hashes
// map to full blocks that carry them; tables cover their tokens, and a
// partial last block is private.
func (m *BlockManager) check() error {
	refs := make([]int32, m.numBlocks)
	for id, s := range m.seqs {
		if len(s.table) != m.numBlocksFor(s.numTokens) {
			return fmt.Errorf("seq %d: %d blocks for %d tokens", id, len(s.table), s.numTokens)
		}
		if NumFreed(s.table) != s.dead || slices.Contains(s.table[s.dead:], NoBlock) || s.dead >= len(s.table) {
			return fmt.Errorf("seq %d: %d blocks freed, table %v", id, s.dead, s.table)
		}
		for i, b := range s.table[s.dead:] {
			i += s.dead
			refs[b]++
			if want := min(m.blockSize, s.numTokens-i*m.blockSize); int(m.blocks[b].n) != want {
				return fmt.Errorf("seq %d block %d (#%d) holds %d tokens, want %d", id, b, i, m.blocks[b].n, want)
			}
		}
	}
	for id, s := range m.seqs {
		if last := s.table[len(s.table)-1]; s.numTokens%m.blockSize != 0 && refs[last] != 1 {
			return fmt.Errorf("seq %d: partial block %d held by %d tables", id, last, refs[last])
		}
	}
	seen := make([]bool, m.numBlocks)
	for _, list := range []uint8{freePlain, freeCached} {
		n, s := 0, m.free.sentinel(list)
		for b := m.free.next[s]; b != s; b = m.free.next[b] {
			switch {
			case b < 0 || int(b) >= m.numBlocks:
				return fmt.Errorf("free list %d links to %d", list, b)
			case seen[b]:
				return fmt.Errorf("block %d twice in the free lists", b)
			case m.blocks[b].where != list:
				return fmt.Errorf("block %d in free list %d, marked %d", b, list, m.blocks[b].where)
			case m.free.prev[m.free.next[b]] != b:
				return fmt.Errorf("free list %d: broken back link after %d", list, b)
			}
			seen[b] = true
			n++
		}
		if n != m.free.len[list] {
			return fmt.Errorf("free list %d: %d entries, counted %d", list, n, m.free.len[list])
		}
	}
	numInUse := 0
	for b := range int32(m.numBlocks) {
		blk := &m.blocks[b]
		if blk.ref != refs[b] {
			return fmt.Errorf("block %d: ref %d, in %d tables", b, blk.ref, refs[b])
		}
		if blk.cached && (m.cached[blk.hash] != b || int(blk.n) != m.blockSize) {
			return fmt.Errorf("block %d marked cached but not registered, or not full", b)
		}
		switch {
		case blk.where == inUse && blk.ref > 0 && !seen[b]:
			numInUse++
		case blk.where == freePlain && blk.ref == 0 && seen[b] && *blk == block{where: freePlain}:
		case blk.where == freeCached && blk.ref == 0 && seen[b] && blk.cached:
		default:
			return fmt.Errorf("block %d: state %+v", b, *blk)
		}
	}
	if numInUse+m.NumFreeBlocks() != m.numBlocks {
		return fmt.Errorf("%d in use + %d free != %d blocks", numInUse, m.NumFreeBlocks(), m.numBlocks)
	}
	for h, b := range m.cached {
		if !m.blocks[b].cached || m.blocks[b].hash != h {
			return fmt.Errorf("hash %x maps to block %d (%+v)", h, b, m.blocks[b])
		}
	}
	if !m.prefixCaching && len(m.cached) > 0 {
		return fmt.Errorf("%d blocks registered without prefix caching", len(m.cached))
	}
	return nil
}

// TestModelCheck runs random interleavings of the calls the scheduler makes
// (NumCachedTokens then AllocateUpTo, whole or chunked; CanAppendTokens then
// AppendTokens, one decode token or a chunk; Free; ResetPrefixCache) against
// a model of the device: for each block, the sequence prefix whose K/V it
// holds (written when a sequence computes tokens into it). Prompts come from
// a few shared documents, from finished sequences coming back, and from live
// sequences (another choice of the same prompt: hits on blocks in use). After
// every operation it checks the manager's invariants and that every block of
// every table holds exactly its sequence's prefix, so a wrong hit or a
// shared block written to is caught. The weak hashes force collisions,
// within a block and across parents. With window, tables also lose their
// leading blocks as a sliding window passes them (FreeBefore) and are
// allocated without them (AllocateFrom): a later block must still register
// under its whole prefix, and a hit must still hold the hitting prefix.
func TestModelCheck(t *testing.T) {
	const (
		ops       = 10000
		bs        = 4
		numBlocks = 48
		vocab     = 3 // few distinct tokens: equal blocks after different prefixes are common
	)
	for _, tc := range []struct {
		name   string
		prefix bool
		hash   func(uint64, []int32) uint64
		window bool
	}{
		{"fnv", true, nil, false},
		{"2-bit hash", true, func(p uint64, t []int32) uint64 { return BlockHash(p, t) & 3 }, false},
		{"hash ignores the parent", true, func(_ uint64, t []int32) uint64 { return BlockHash(RootHash, t) & 7 }, false},
		{"no prefix caching", false, nil, false},
		{"window/fnv", true, nil, true},
		{"window/2-bit hash", true, func(p uint64, t []int32) uint64 { return BlockHash(p, t) & 3 }, true},
		{"window/hash ignores the parent", true, func(_ uint64, t []int32) uint64 { return BlockHash(RootHash, t) & 7 }, true},
		{"window/no prefix caching", false, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			m := NewBlockManager(numBlocks, bs, tc.prefix)
			if tc.hash != nil {
				m.hash = tc.hash
			}
			randTokens := func(n int) []int32 {
				p := make([]int32, n)
				for i := range p {
					p[i] = rng.Int32N(vocab)
				}
				return p
			}
			docs := [][]int32{randTokens(40), randTokens(40), randTokens(40)}
			var (
				device  = make([][]int32, numBlocks) // prefix whose K/V each block holds
				seqs    = map[SeqID][]int32{}        // live sequences' tokens
				pending = map[SeqID][]int32{}        // prompt tokens past an AllocateUpTo chunk
				ids     []SeqID                      // live sequences, in a stable order
				old     [][]int32                    // tokens of freed sequences
				nextID  SeqID
				queries int64
				hits    int64
				count   = map[string]int{}
			)
			pick := func() SeqID { return ids[rng.IntN(len(ids))] }
			forget := func(id SeqID) {
				old = append(old, seqs[id])
				delete(seqs, id)
				delete(pending, id)
				ids = slices.DeleteFunc(ids, func(x SeqID) bool { return x == id })
			}
			fail := func(op int, format string, args ...any) {
				t.Helper()
				t.Fatalf("op %d: %s", op, fmt.Sprintf(format, args...))
			}
			for op := range ops {
				var before snapshot
				switch r := rng.IntN(100); {
				case r < 30 || r >= 85 && len(ids) > 0: // allocate
					var p []int32
					sibling := r >= 85
					switch {
					case sibling: // another choice of a live sequence's prompt
						l := seqs[pick()]
						p = cat(l[:1+rng.IntN(len(l))], randTokens(rng.IntN(3)))
					case len(old) > 0 && rng.IntN(3) == 0: // a finished sequence comes back
						o := old[rng.IntN(len(old))]
						p = slices.Clone(o[:1+rng.IntN(len(o))])
					default:
						d := docs[rng.IntN(len(docs))]
						p = cat(d[:1+rng.IntN(len(d))], randTokens(rng.IntN(6)))
					}
					id := nextID
					from := 0
					if tc.window { // positions before from are behind the window (or come from a swap-in)
						from = rng.IntN(len(p))
					}
					can := canAllocateFrom(m, p, from)
					lookedUp := m.NumCachedTokens(0, p)
					upTo, numTokens := rng.IntN(2) == 0, rng.IntN(len(p)+2) // chunked prefill
					if !upTo {
						numTokens = len(p) + rng.IntN(2) // the whole prompt
					}
					before = takeSnapshot(m)
					cached, err := m.AllocateFrom(id, 0, p, numTokens, from)
					if !upTo && can != (err == nil) || upTo && can && err != nil { // a chunk takes no more than the prompt
						fail(op, "canAllocate %v, AllocateUpTo error %v", can, err)
					}
					if err != nil {
						if !errors.Is(err, ErrOutOfBlocks) || !takeSnapshot(m).equal(before) {
							fail(op, "failed Allocate: %v, changed %v", err, !takeSnapshot(m).equal(before))
						}
						count["allocate failed"]++
						if len(ids) > 0 { // preempt a victim, as the scheduler would
							victim := pick()
							if err := m.Free(victim); err != nil {
								fail(op, "Free: %v", err)
							}
							forget(victim)
						}
						break
					}
					nextID++
					if cached%bs != 0 || cached >= len(p) || (!tc.prefix && cached != 0) || cached != lookedUp {
						fail(op, "%d cached tokens of %d, NumCachedTokens said %d", cached, len(p), lookedUp)
					}
					if tc.prefix {
						queries += int64(len(p))
						hits += int64(cached)
					}
					if upTo { // the table covers a chunk; appends bring the rest
						covered := min(max(numTokens, cached+1), len(p))
						if m.NumTokens(id) != covered {
							fail(op, "AllocateUpTo(%d) of %d tokens covers %d", numTokens, len(p), m.NumTokens(id))
						}
						p, pending[id] = p[:covered], p[covered:]
						count["allocate up to"]++
					}
					table := m.BlockTable(id)
					if dead := NumFreed(table); dead != min(from, len(p)-1, max(numTokens, cached+1)-1)/bs {
						fail(op, "AllocateFrom(%d) from %d: %d blocks left out of %v", numTokens, from, dead, table)
					} else if dead > 0 {
						count["allocate from"]++
						if m.seqs[id].unchained {
							count["unchained"]++
						}
					}
					for i := max(cached/bs, NumFreed(table)); i < len(table); i++ { // compute (or swap in) the rest
						device[table[i]] = slices.Clone(p[:min(len(p), (i+1)*bs)])
					}
					seqs[id], ids = p, append(ids, id)
					count["allocate"]++
					if sibling {
						count["sibling"]++
					}
					if cached > 0 {
						count["hit"]++
						if b := table[NumFreed(table)]; b != NoBlock && m.blocks[b].ref > 1 {
							count["in-use hit"]++
						}
					}
				case r < 70 && len(ids) > 0: // append
					id := pick()
					n := 1
					if rng.IntN(2) == 0 { // AppendTokens: a chunk, the rest of a prompt first
						n = rng.IntN(7)
					}
					rest := pending[id][:min(n, len(pending[id]))]
					toks := cat(rest, randTokens(n-len(rest)))
					can := m.CanAppendTokens(id, n)
					before = takeSnapshot(m)
					err := m.AppendTokens(id, toks)
					if err != nil {
						if can || !errors.Is(err, ErrOutOfBlocks) || !takeSnapshot(m).equal(before) {
							fail(op, "failed Append of %d: %v, CanAppend %v", n, err, can)
						}
						count["append failed"]++
						break
					} else if !can {
						fail(op, "CanAppend false, Append of %d succeeded", n)
					}
					pending[id] = pending[id][len(rest):]
					n0 := len(seqs[id])
					seqs[id] = append(seqs[id], toks...)
					table := m.BlockTable(id)
					for i := n0 / bs; i < len(table); i++ { // compute the new tokens
						device[table[i]] = slices.Clone(seqs[id][:min(len(seqs[id]), (i+1)*bs)])
					}
					count["append"]++
					if n > 1 {
						count["append chunk"]++
					} else if n == 1 {
						count["append decode"]++
					}
				case r < 71: // reset the prefix cache: cached free blocks are forgotten
					st := m.Stats()
					m.ResetPrefixCache()
					if after := m.Stats(); after.NumCachedBlocks != 0 || after.NumFreeBlocks != st.NumFreeBlocks {
						fail(op, "ResetPrefixCache: %+v, before %+v", after, st)
					}
					for _, o := range old { // only blocks in use are found now
						for _, b := range m.lookup(0, o, nil) {
							if m.blocks[b].ref == 0 {
								fail(op, "after ResetPrefixCache, %v finds free block %d", o, b)
							}
						}
					}
					count["reset"]++
				case r < 85 && len(ids) > 0: // free
					id := pick()
					if err := m.Free(id); err != nil {
						fail(op, "Free: %v", err)
					}
					forget(id)
					count["free"]++
				}
				if tc.window && len(ids) > 0 && rng.IntN(3) == 0 { // a step ran: the window moves on
					id := pick()
					n, dead := m.NumTokens(id), NumFreed(m.BlockTable(id))
					pos := rng.IntN(n + 2)
					freed, err := m.FreeBefore(id, pos)
					if want := max(dead, min(pos, n-1)/bs); err != nil || freed != want-dead || NumFreed(m.BlockTable(id)) != want ||
						m.NumLiveBlocks(id) != len(m.BlockTable(id))-want {
						fail(op, "FreeBefore(%d) of %d tokens: freed %d (%v), table %v, want %d freed", pos, n, freed, err, m.BlockTable(id), want)
					}
					if freed > 0 {
						count["window free"]++
					}
				}
				if err := m.check(); err != nil {
					fail(op, "%v", err)
				}
				for _, id := range ids {
					p, table := seqs[id], m.BlockTable(id)
					if m.NumTokens(id) != len(p) {
						fail(op, "seq %d: %d tokens, model has %d", id, m.NumTokens(id), len(p))
					}
					for i, b := range table {
						if b == NoBlock {
							continue
						}
						want := p[:min(len(p), (i+1)*bs)]
						if !slices.Equal(device[b], want) {
							fail(op, "seq %d block #%d (%d) holds the K/V of %v, want %v", id, i, b, device[b], want)
						}
						if !slices.Equal(m.blockTokens(b)[:m.blocks[b].n], want[i*bs:]) {
							fail(op, "seq %d block %d stores tokens %v", id, b, m.blockTokens(b)[:m.blocks[b].n])
						}
					}
				}
				for h, b := range m.cached { // a registered block holds the prefix it was hashed from
					if got := chainHash(m.hash, device[b], bs); got != h || len(device[b])%bs != 0 ||
						!slices.Equal(device[b][len(device[b])-bs:], m.blockTokens(b)) {
						fail(op, "block %d registered as %x holds the K/V of %v (hash %x)", b, h, device[b], got)
					}
				}
				if s := m.Stats(); s.PrefixQueries != queries || s.PrefixHits != hits || s.NumSeqs != len(ids) {
					fail(op, "stats %+v, model: %d queries, %d hits, %d seqs", s, queries, hits, len(ids))
				}
			}
			t.Logf("%v, stats %+v", count, m.Stats())
			// The run must have exercised what it checks.
			want := []string{"allocate", "allocate up to", "allocate failed", "sibling", "append", "append chunk",
				"append decode", "append failed", "free", "reset"}
			if tc.prefix {
				want = append(want, "hit", "in-use hit")
			}
			if tc.window {
				want = append(want, "allocate from", "window free")
				if tc.prefix {
					want = append(want, "unchained")
				}
			}
			for _, k := range want {
				if count[k] == 0 {
					t.Errorf("no %q in %d ops", k, ops)
				}
			}
			if tc.prefix && m.Stats().Evictions == 0 {
				t.Error("no evictions")
			}
		})
	}
}

// chainHash is the hash of the last full block of tokens.
func chainHash(hash func(uint64, []int32) uint64, tokens []int32, bs int) uint64 {
	h := RootHash
	for i := 0; i+bs <= len(tokens); i += bs {
		h = hash(h, tokens[i:i+bs])
	}
	return h
}
