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
			mc := newModelCheck(t, tc.prefix, tc.hash, tc.window)
			for op := range modelOps {
				mc.step(op)
			}
			t.Logf("%v, stats %+v", mc.count, mc.m.Stats())
			mc.checkCoverage()
		})
	}
}

const (
	modelOps = 10000
	modelBS  = 4
	modelNB  = 48 // blocks
	modelVoc = 3  // few distinct tokens: equal blocks after different prefixes are common
)

// modelCheck is TestModelCheck's run: the manager, and the model of the
// device and of the scheduler's sequences it is checked against.
type modelCheck struct {
	t              *testing.T
	rng            *rand.Rand
	m              *BlockManager
	prefix, window bool
	docs           [][]int32
	device         [][]int32         // prefix whose K/V each block holds
	seqs           map[SeqID][]int32 // live sequences' tokens
	pending        map[SeqID][]int32 // prompt tokens past an AllocateUpTo chunk
	ids            []SeqID           // live sequences, in a stable order
	old            [][]int32         // tokens of freed sequences
	nextID         SeqID
	queries, hits  int64
	count          map[string]int
}

func newModelCheck(t *testing.T, prefix bool, hash func(uint64, []int32) uint64, window bool) *modelCheck {
	mc := &modelCheck{t: t, rng: rand.New(rand.NewPCG(1, 2)), m: NewBlockManager(modelNB, modelBS, prefix),
		prefix: prefix, window: window, device: make([][]int32, modelNB),
		seqs: map[SeqID][]int32{}, pending: map[SeqID][]int32{}, count: map[string]int{}}
	if hash != nil {
		mc.m.hash = hash
	}
	mc.docs = [][]int32{mc.randTokens(40), mc.randTokens(40), mc.randTokens(40)}
	return mc
}

func (mc *modelCheck) randTokens(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = mc.rng.Int32N(modelVoc)
	}
	return p
}

func (mc *modelCheck) pick() SeqID { return mc.ids[mc.rng.IntN(len(mc.ids))] }

func (mc *modelCheck) forget(id SeqID) {
	mc.old = append(mc.old, mc.seqs[id])
	delete(mc.seqs, id)
	delete(mc.pending, id)
	mc.ids = slices.DeleteFunc(mc.ids, func(x SeqID) bool { return x == id })
}

func (mc *modelCheck) fail(op int, format string, args ...any) {
	mc.t.Helper()
	mc.t.Fatalf("op %d: %s", op, fmt.Sprintf(format, args...))
}

// step runs one random operation, then checks everything.
func (mc *modelCheck) step(op int) {
	switch r := mc.rng.IntN(100); {
	case r < 30 || r >= 85 && len(mc.ids) > 0:
		mc.allocate(op, r >= 85)
	case r < 70 && len(mc.ids) > 0:
		mc.append(op)
	case r < 71:
		mc.reset(op)
	case r < 85 && len(mc.ids) > 0: // free
		id := mc.pick()
		if err := mc.m.Free(id); err != nil {
			mc.fail(op, "Free: %v", err)
		}
		mc.forget(id)
		mc.count["free"]++
	}
	if mc.window && len(mc.ids) > 0 && mc.rng.IntN(3) == 0 { // a step ran: the window moves on
		mc.slideWindow(op)
	}
	mc.verify(op)
}

// prompt picks a prompt: another choice of a live sequence's (sibling), a
// finished sequence's coming back, or a shared document's start.
func (mc *modelCheck) prompt(sibling bool) []int32 {
	rng := mc.rng
	switch {
	case sibling: // another choice of a live sequence's prompt
		l := mc.seqs[mc.pick()]
		return cat(l[:1+rng.IntN(len(l))], mc.randTokens(rng.IntN(3)))
	case len(mc.old) > 0 && rng.IntN(3) == 0: // a finished sequence comes back
		o := mc.old[rng.IntN(len(mc.old))]
		return slices.Clone(o[:1+rng.IntN(len(o))])
	default:
		d := mc.docs[rng.IntN(len(mc.docs))]
		return cat(d[:1+rng.IntN(len(d))], mc.randTokens(rng.IntN(6)))
	}
}

// allocate allocates a new sequence, whole or a chunk, from a position
// (window) and computes its uncached blocks; out of blocks, it preempts a
// victim as the scheduler would.
func (mc *modelCheck) allocate(op int, sibling bool) {
	m, rng, bs := mc.m, mc.rng, modelBS
	p := mc.prompt(sibling)
	id := mc.nextID
	from := 0
	if mc.window { // positions before from are behind the window (or come from a swap-in)
		from = rng.IntN(len(p))
	}
	can := canAllocateFrom(m, p, from)
	lookedUp := m.NumCachedTokens(0, p)
	upTo, numTokens := rng.IntN(2) == 0, rng.IntN(len(p)+2) // chunked prefill
	if !upTo {
		numTokens = len(p) + rng.IntN(2) // the whole prompt
	}
	before := takeSnapshot(m)
	cached, err := m.AllocateFrom(id, 0, p, numTokens, from)
	if !upTo && can != (err == nil) || upTo && can && err != nil { // a chunk takes no more than the prompt
		mc.fail(op, "canAllocate %v, AllocateUpTo error %v", can, err)
	}
	if err != nil {
		if !errors.Is(err, ErrOutOfBlocks) || !takeSnapshot(m).equal(before) {
			mc.fail(op, "failed Allocate: %v, changed %v", err, !takeSnapshot(m).equal(before))
		}
		mc.count["allocate failed"]++
		if len(mc.ids) > 0 { // preempt a victim, as the scheduler would
			victim := mc.pick()
			if err := m.Free(victim); err != nil {
				mc.fail(op, "Free: %v", err)
			}
			mc.forget(victim)
		}
		return
	}
	mc.nextID++
	if cached%bs != 0 || cached >= len(p) || (!mc.prefix && cached != 0) || cached != lookedUp {
		mc.fail(op, "%d cached tokens of %d, NumCachedTokens said %d", cached, len(p), lookedUp)
	}
	if mc.prefix {
		mc.queries += int64(len(p))
		mc.hits += int64(cached)
	}
	if upTo { // the table covers a chunk; appends bring the rest
		covered := min(max(numTokens, cached+1), len(p))
		if m.NumTokens(id) != covered {
			mc.fail(op, "AllocateUpTo(%d) of %d tokens covers %d", numTokens, len(p), m.NumTokens(id))
		}
		p, mc.pending[id] = p[:covered], p[covered:]
		mc.count["allocate up to"]++
	}
	table := m.BlockTable(id)
	if dead := NumFreed(table); dead != min(from, len(p)-1, max(numTokens, cached+1)-1)/bs {
		mc.fail(op, "AllocateFrom(%d) from %d: %d blocks left out of %v", numTokens, from, dead, table)
	} else if dead > 0 {
		mc.count["allocate from"]++
		if m.seqs[id].unchained {
			mc.count["unchained"]++
		}
	}
	for i := max(cached/bs, NumFreed(table)); i < len(table); i++ { // compute (or swap in) the rest
		mc.device[table[i]] = slices.Clone(p[:min(len(p), (i+1)*bs)])
	}
	mc.seqs[id], mc.ids = p, append(mc.ids, id)
	mc.count["allocate"]++
	if sibling {
		mc.count["sibling"]++
	}
	if cached > 0 {
		mc.count["hit"]++
		if b := table[NumFreed(table)]; b != NoBlock && m.blocks[b].ref > 1 {
			mc.count["in-use hit"]++
		}
	}
}

// append appends a decode token or a chunk (the rest of a prompt first) to
// a live sequence and computes the new tokens.
func (mc *modelCheck) append(op int) {
	m, bs := mc.m, modelBS
	id := mc.pick()
	n := 1
	if mc.rng.IntN(2) == 0 { // AppendTokens: a chunk, the rest of a prompt first
		n = mc.rng.IntN(7)
	}
	rest := mc.pending[id][:min(n, len(mc.pending[id]))]
	toks := cat(rest, mc.randTokens(n-len(rest)))
	can := m.CanAppendTokens(id, n)
	before := takeSnapshot(m)
	err := m.AppendTokens(id, toks)
	if err != nil {
		if can || !errors.Is(err, ErrOutOfBlocks) || !takeSnapshot(m).equal(before) {
			mc.fail(op, "failed Append of %d: %v, CanAppend %v", n, err, can)
		}
		mc.count["append failed"]++
		return
	} else if !can {
		mc.fail(op, "CanAppend false, Append of %d succeeded", n)
	}
	mc.pending[id] = mc.pending[id][len(rest):]
	n0 := len(mc.seqs[id])
	mc.seqs[id] = append(mc.seqs[id], toks...)
	table := m.BlockTable(id)
	for i := n0 / bs; i < len(table); i++ { // compute the new tokens
		mc.device[table[i]] = slices.Clone(mc.seqs[id][:min(len(mc.seqs[id]), (i+1)*bs)])
	}
	mc.count["append"]++
	if n > 1 {
		mc.count["append chunk"]++
	} else if n == 1 {
		mc.count["append decode"]++
	}
}

// reset resets the prefix cache: cached free blocks are forgotten.
func (mc *modelCheck) reset(op int) {
	m := mc.m
	st := m.Stats()
	m.ResetPrefixCache()
	if after := m.Stats(); after.NumCachedBlocks != 0 || after.NumFreeBlocks != st.NumFreeBlocks {
		mc.fail(op, "ResetPrefixCache: %+v, before %+v", after, st)
	}
	for _, o := range mc.old { // only blocks in use are found now
		for _, b := range m.lookup(0, o, nil) {
			if m.blocks[b].ref == 0 {
				mc.fail(op, "after ResetPrefixCache, %v finds free block %d", o, b)
			}
		}
	}
	mc.count["reset"]++
}

// slideWindow frees a live sequence's blocks behind a sliding window.
func (mc *modelCheck) slideWindow(op int) {
	m := mc.m
	id := mc.pick()
	n, dead := m.NumTokens(id), NumFreed(m.BlockTable(id))
	pos := mc.rng.IntN(n + 2)
	freed, err := m.FreeBefore(id, pos)
	if want := max(dead, min(pos, n-1)/modelBS); err != nil || freed != want-dead || NumFreed(m.BlockTable(id)) != want ||
		m.NumLiveBlocks(id) != len(m.BlockTable(id))-want {
		mc.fail(op, "FreeBefore(%d) of %d tokens: freed %d (%v), table %v, want %d freed", pos, n, freed, err, m.BlockTable(id), want)
	}
	if freed > 0 {
		mc.count["window free"]++
	}
}

// verify checks the manager's invariants, that every block of every table
// holds exactly its sequence's prefix, that registered blocks hold the
// prefix they were hashed from, and the stats.
func (mc *modelCheck) verify(op int) {
	m, bs := mc.m, modelBS
	if err := m.check(); err != nil {
		mc.fail(op, "%v", err)
	}
	for _, id := range mc.ids {
		p, table := mc.seqs[id], m.BlockTable(id)
		if m.NumTokens(id) != len(p) {
			mc.fail(op, "seq %d: %d tokens, model has %d", id, m.NumTokens(id), len(p))
		}
		for i, b := range table {
			if b == NoBlock {
				continue
			}
			want := p[:min(len(p), (i+1)*bs)]
			if !slices.Equal(mc.device[b], want) {
				mc.fail(op, "seq %d block #%d (%d) holds the K/V of %v, want %v", id, i, b, mc.device[b], want)
			}
			if !slices.Equal(m.blockTokens(b)[:m.blocks[b].n], want[i*bs:]) {
				mc.fail(op, "seq %d block %d stores tokens %v", id, b, m.blockTokens(b)[:m.blocks[b].n])
			}
		}
	}
	for h, b := range m.cached { // a registered block holds the prefix it was hashed from
		if got := chainHash(m.hash, mc.device[b], bs); got != h || len(mc.device[b])%bs != 0 ||
			!slices.Equal(mc.device[b][len(mc.device[b])-bs:], m.blockTokens(b)) {
			mc.fail(op, "block %d registered as %x holds the K/V of %v (hash %x)", b, h, mc.device[b], got)
		}
	}
	if s := m.Stats(); s.PrefixQueries != mc.queries || s.PrefixHits != mc.hits || s.NumSeqs != len(mc.ids) {
		mc.fail(op, "stats %+v, model: %d queries, %d hits, %d seqs", s, mc.queries, mc.hits, len(mc.ids))
	}
}

// checkCoverage fails the test when the run did not exercise what it
// checks.
func (mc *modelCheck) checkCoverage() {
	want := []string{"allocate", "allocate up to", "allocate failed", "sibling", "append", "append chunk",
		"append decode", "append failed", "free", "reset"}
	if mc.prefix {
		want = append(want, "hit", "in-use hit")
	}
	if mc.window {
		want = append(want, "allocate from", "window free")
		if mc.prefix {
			want = append(want, "unchained")
		}
	}
	for _, k := range want {
		if mc.count[k] == 0 {
			mc.t.Errorf("no %q in %d ops", k, modelOps)
		}
	}
	if mc.prefix && mc.m.Stats().Evictions == 0 {
		mc.t.Error("no evictions")
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
