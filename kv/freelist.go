package kv

// Where a block of a BlockManager is.
const (
	inUse      uint8 = iota // referenced by at least one block table
	freePlain               // free, holds nothing worth keeping
	freeCached              // free, but still holds a registered full block (evictable, LRU)
)

// freeLists are the two free lists of a BlockManager, intrusive doubly linked
// lists over block ids with one sentinel node per list (ids n and n+1), so
// push, pop and unlink of any block are O(1). Front is the oldest entry.
type freeLists struct {
	prev, next []int32 // (num_blocks + 2) links; the last two entries are the sentinels
	len        [3]int  // entries per list, indexed by freePlain / freeCached
	n          int32   // number of blocks
}

func newFreeLists(n int) freeLists {
	l := freeLists{prev: make([]int32, n+2), next: make([]int32, n+2), n: int32(n)}
	for _, s := range []int32{l.sentinel(freePlain), l.sentinel(freeCached)} {
		l.prev[s], l.next[s] = s, s
	}
	return l
}

func (l *freeLists) sentinel(list uint8) int32 { return l.n + int32(list-freePlain) }

// pushBack appends b to the back (most recently freed end) of list.
func (l *freeLists) pushBack(list uint8, b int32) {
	s := l.sentinel(list)
	last := l.prev[s]
	l.prev[b], l.next[b] = last, s
	l.next[last], l.prev[s] = b, b
	l.len[list]++
}

// unlink removes b from list, which must hold it.
func (l *freeLists) unlink(list uint8, b int32) {
	p, n := l.prev[b], l.next[b]
	l.next[p], l.prev[n] = n, p
	l.prev[b], l.next[b] = -1, -1
	l.len[list]--
}

// front returns the oldest block of list, or -1 if it is empty.
func (l *freeLists) front(list uint8) int32 {
	s := l.sentinel(list)
	if b := l.next[s]; b != s {
		return b
	}
	return -1
}

// allocBlock takes a block for new content, ref 1: a plain free block if
// there is one, else it evicts the least recently freed cached block. The
// caller has checked that a free block exists.
func (m *BlockManager) allocBlock() int32 {
	b := m.free.front(freePlain)
	if b < 0 {
		b = m.free.front(freeCached)
		m.uncache(b)
		m.evictions++
	}
	m.free.unlink(freePlain, b)
	m.blocks[b] = block{ref: 1, where: inUse}
	return b
}

// share adds a table's reference to a full block, taking it off the cached
// free list if no table held it.
func (m *BlockManager) share(b int32) {
	blk := &m.blocks[b]
	if blk.where == freeCached {
		m.free.unlink(freeCached, b)
		blk.where = inUse
	}
	blk.ref++
}

// release drops a table's reference to b.
func (m *BlockManager) release(b int32) {
	blk := &m.blocks[b]
	if blk.ref--; blk.ref > 0 {
		return
	}
	if blk.cached {
		blk.where = freeCached
		m.free.pushBack(freeCached, b)
		return
	}
	*blk = block{where: freePlain}
	m.free.pushBack(freePlain, b)
}
