package kv

import (
	"errors"
	"fmt"
	"math"
)

// SeqID names a sequence whose block table a BlockManager keeps.
type SeqID uint64

var (
	// ErrUnknownSeq is returned for a SeqID the BlockManager holds no table for.
	ErrUnknownSeq = errors.New("kv: unknown sequence")
	// ErrSeqExists is returned when allocating a table for a SeqID that has one.
	ErrSeqExists = errors.New("kv: sequence already allocated")
)

// BlockManager hands the physical blocks of a Cache to sequences, one block
// table per sequence, with automatic prefix caching (vLLM's design, in the
// size of nano-vllm's block_manager.py):
//
//   - A full block is identified by a chain hash of its parent block's hash
//     and its own token ids (BlockHash), so it stands for the whole prefix.
//     A hit is confirmed on the tokens stored with the block and on the
//     identity of its parent block, never on the hash alone.
//   - Full blocks are shared between sequences and reference counted; the
//     partial last block of a sequence is always private, so no block that
//     is written to is ever shared (no copy-on-write).
//   - A block whose count drops to zero keeps its hash and tokens (cached
//     free) until it is reused. New blocks come from plain free blocks
//     first, then evict cached free blocks least recently freed first; a
//     sequence's blocks are freed last to first, so its tail is evicted
//     before its prefix.
//
// AllocateUpTo and AppendTokens register full blocks for sharing at once, before their
// K/V is written: call them when scheduling the step that computes those
// tokens (as nano-vllm does), and run that step before the sequence is
// freed. A sequence that hits may run in the same step as the owner, since
// Forward writes a layer's K/V before it attends, but not in an earlier one.
//
// A BlockManager is not safe for concurrent use; one actor owns it.
type BlockManager struct {
	blockSize     int
	numBlocks     int
	prefixCaching bool

	blocks []block   // (num_blocks)
	tokens []int32   // (num_blocks, block_size) token ids stored in each block
	free   freeLists // plain and cached free blocks
	seqs   map[SeqID]*seqState

	cached  map[uint64]int32                           // chain hash -> registered full block
	nextCID uint64                                     // last content id handed out
	hash    func(parent uint64, tokens []int32) uint64 // BlockHash; tests force collisions

	hits  []int32     // scratch: blocks matched by lookup
	spare []*seqState // freed sequence states, for reuse

	prefixQueries, prefixHits, evictions, windowFreed int64
}

// block is the bookkeeping of one physical block.
type block struct {
	ref    int32 // block tables holding it
	n      int32 // token slots filled; blockSize when full
	where  uint8 // inUse, freePlain or freeCached
	cached bool  // registered: cached[hash] is this block
	// With prefix caching, set once the block is full:
	hash      uint64 // chain hash of the prefix ending with this block
	cid       uint64 // content id: equal ids mean equal prefixes, token for token
	parentCID uint64 // content id of the parent block; 0 for a first block
	salt      uint64 // the salt of the sequence that filled it (SaltRootHash)
}

type seqState struct {
	table     []int32 // block_table: physical block of each block_size positions; NoBlock before the window
	numTokens int
	dead      int // leading table entries freed by FreeBefore (NoBlock)
	// The chain hash and content id of the last full block, the parent of
	// the next one to fill (its block may have been freed since).
	lastHash, lastCID uint64
	salt              uint64 // its blocks' salt (SaltRootHash)
	// unchained: the content id of a freed leading block is unknown (the
	// table was allocated without it), so no later block is registered.
	unchained bool
	// draft is the trailing positions appended by AppendDraft, pending
	// AcceptDraft; noRegister holds registration off while they go in.
	draft      int
	noRegister bool
}

// BlockStats is a snapshot of a BlockManager's state and counters.
type BlockStats struct {
	NumBlocks       int
	NumFreeBlocks   int // plain free plus cached free
	NumCachedBlocks int // free blocks still holding a cached prefix (evictable)
	NumSeqs         int
	// PrefixQueries and PrefixHits count prompt tokens looked up in, and
	// found in, the prefix cache by AllocateUpTo (vLLM's prefix_cache_queries
	// and prefix_cache_hits).
	PrefixQueries, PrefixHits int64
	Evictions                 int64 // cached free blocks reused for new content
	// WindowFreed counts blocks FreeBefore took out of block tables (they
	// fell behind every layer's sliding window).
	WindowFreed int64
}

// NewBlockManager returns a manager of blocks 0..numBlocks-1 of blockSize
// token slots each, all free. It panics if either is < 1 or numBlocks does
// not fit an int32 block id.
func NewBlockManager(numBlocks, blockSize int, prefixCaching bool) *BlockManager {
	if numBlocks < 1 || numBlocks > math.MaxInt32-2 || blockSize < 1 {
		panic(fmt.Sprintf("kv: NewBlockManager(%d, %d): bad size", numBlocks, blockSize))
	}
	m := &BlockManager{
		blockSize: blockSize, numBlocks: numBlocks, prefixCaching: prefixCaching,
		blocks: make([]block, numBlocks),
		tokens: make([]int32, numBlocks*blockSize),
		free:   newFreeLists(numBlocks),
		seqs:   make(map[SeqID]*seqState),
		cached: make(map[uint64]int32),
		hash:   BlockHash,
	}
	for b := range int32(numBlocks) {
		m.blocks[b].where = freePlain
		m.free.pushBack(freePlain, b)
	}
	return m
}

// AllocateUpTo builds the block table of a new sequence id for its prompt
// tokens, computed in chunks (chunked prefill), and returns how many leading
// tokens are already cached: their K/V is in the shared blocks and must not be
// computed again. numCachedTokens is a multiple of the block size and at most
// len(tokens)-1: the block holding the last prompt token is never taken from
// the cache, so a fully cached prompt still computes its last block and
// yields logits (vLLM caps the lookup the same way).
//
// The cache is searched over all of tokens, and counted as one query of
// len(tokens), but the new table covers only the first
// max(numTokens, numCachedTokens+1) positions (at most len(tokens));
// numTokens >= len(tokens) covers the whole prompt. Blocks filled by those
// positions are registered for sharing now, so call it when the step
// computing them is scheduled; AppendTokens covers the rest later.
// On error nothing changes: ErrSeqExists, ErrOutOfBlocks. A prompt that
// needs more than NumBlocks blocks never fits; reject it rather than wait.
//
// Its blocks have salt 0 (the base model's K/V): AllocateFrom takes a salt.
func (m *BlockManager) AllocateUpTo(id SeqID, tokens []int32, numTokens int) (numCachedTokens int, err error) {
	return m.allocate(id, 0, tokens, numTokens, 0, true)
}

// AllocateFresh is AllocateFrom without the cache lookup: no block is
// shared, every position from from's block on is computed (an embedding
// needs every token's hidden state), and no query is counted. The blocks it
// fills are registered for sharing as usual (under salt) when from is 0.
func (m *BlockManager) AllocateFresh(id SeqID, salt uint64, tokens []int32, numTokens, from int) error {
	_, err := m.allocate(id, salt, tokens, numTokens, from, false)
	return err
}

// allocate builds a new table whose blocks wholly before position from are
// left out (NoBlock): cache hits there are not shared, and no block is
// taken for them.
func (m *BlockManager) allocate(id SeqID, salt uint64, tokens []int32, numTokens, from int, lookup bool) (numCachedTokens int, err error) {
	if _, ok := m.seqs[id]; ok {
		return 0, fmt.Errorf("kv: allocate seq %d: %w", id, ErrSeqExists)
	}
	if len(tokens) == 0 {
		return 0, fmt.Errorf("kv: allocate seq %d: empty prompt", id)
	}
	m.hits = m.hits[:0]
	if lookup {
		m.hits = m.lookup(salt, tokens, m.hits)
	}
	hits := m.hits
	numCachedTokens = len(hits) * m.blockSize
	covered := min(max(numTokens, numCachedTokens+1), len(tokens))
	dead := min(max(from, 0)/m.blockSize, (covered-1)/m.blockSize) // never the block of the last position
	live := hits[min(dead, len(hits)):]
	if need, free := m.needFor(live, covered)-dead, m.NumFreeBlocks(); need > free {
		return 0, fmt.Errorf("kv: allocate seq %d: %w: need %d blocks, %d free", id, ErrOutOfBlocks, need, free)
	}
	s := m.newSeq(m.numBlocksFor(covered))
	s.lastHash, s.lastCID, s.salt = SaltRootHash(salt), 0, salt
	for range dead {
		s.table = append(s.table, NoBlock)
	}
	s.dead = dead
	if n := len(hits); n > 0 {
		s.lastHash, s.lastCID = m.blocks[hits[n-1]].hash, m.blocks[hits[n-1]].cid
	}
	for _, b := range live {
		m.share(b)
		s.table = append(s.table, b)
	}
	// Positions before the first live block that no hit covers have no
	// content id to chain to: nothing after them is registered.
	s.numTokens = max(numCachedTokens, dead*m.blockSize)
	s.unchained = dead > len(hits)
	m.seqs[id] = s
	m.appendTokens(s, tokens[s.numTokens:covered])
	if m.prefixCaching && lookup {
		m.prefixQueries += int64(len(tokens))
		m.prefixHits += int64(numCachedTokens)
	}
	return numCachedTokens, nil
}

// NumCachedTokens returns what AllocateFrom of tokens under salt would find
// cached now, without changing anything or counting a query.
func (m *BlockManager) NumCachedTokens(salt uint64, tokens []int32) int {
	if len(tokens) == 0 {
		return 0
	}
	m.hits = m.lookup(salt, tokens, m.hits[:0])
	return len(m.hits) * m.blockSize
}

// needFor returns the free blocks a new table covering numTokens positions
// takes when its first blocks are the cache hits: hits on cached free blocks
// take a free block, hits on blocks in use do not.
func (m *BlockManager) needFor(hits []int32, numTokens int) int {
	need := m.numBlocksFor(numTokens)
	for _, b := range hits {
		if m.blocks[b].ref > 0 {
			need--
		}
	}
	return need
}

// CanAppendTokens reports whether AppendTokens of n tokens to id would
// succeed now.
func (m *BlockManager) CanAppendTokens(id SeqID, n int) bool {
	s, ok := m.seqs[id]
	return ok && m.numBlocksFor(s.numTokens+n)-len(s.table) <= m.NumFreeBlocks()
}

// AppendTokens adds tokens at the next positions of sequence id (the next
// chunk of a prompt, or a decode token), taking new blocks as the last one
// fills. Call it when the tokens are scheduled to be computed, not when they
// are sampled: a block they fill is registered for sharing.
// On error nothing changes: ErrUnknownSeq, ErrOutOfBlocks.
func (m *BlockManager) AppendTokens(id SeqID, tokens []int32) error {
	s, ok := m.seqs[id]
	if !ok {
		return fmt.Errorf("kv: append to seq %d: %w", id, ErrUnknownSeq)
	}
	if need, free := m.numBlocksFor(s.numTokens+len(tokens))-len(s.table), m.NumFreeBlocks(); need > free {
		return fmt.Errorf("kv: append %d tokens to seq %d: %w: need %d blocks, %d free", len(tokens), id, ErrOutOfBlocks, need, free)
	}
	m.appendTokens(s, tokens)
	return nil
}

// appendTokens writes tokens into the slots after s's last, taking blocks as
// needed (the caller has checked there are enough) and registering the
// blocks they fill.
func (m *BlockManager) appendTokens(s *seqState, tokens []int32) {
	for _, token := range tokens {
		if s.numTokens%m.blockSize == 0 {
			s.table = append(s.table, m.allocBlock())
		}
		last := s.table[len(s.table)-1]
		blk := &m.blocks[last]
		if blk.ref != 1 {
			panic(fmt.Sprintf("kv: a sequence writes block %d held by %d tables", last, blk.ref))
		}
		m.tokens[int(last)*m.blockSize+int(blk.n)] = token
		blk.n++
		s.numTokens++
		if m.prefixCaching && !s.unchained && !s.noRegister && int(blk.n) == m.blockSize {
			m.register(last, s)
		}
	}
}

// Free drops the block table of id. Blocks no other table holds become free;
// registered full blocks stay cached until reused.
func (m *BlockManager) Free(id SeqID) error {
	s, ok := m.seqs[id]
	if !ok {
		return fmt.Errorf("kv: free seq %d: %w", id, ErrUnknownSeq)
	}
	for i := len(s.table) - 1; i >= s.dead; i-- { // last block first: evicted first
		m.release(s.table[i])
	}
	delete(m.seqs, id)
	s.table, s.numTokens, s.dead, s.draft = s.table[:0], 0, 0, 0
	m.spare = append(m.spare, s)
	return nil
}

// BlockTable returns the block table of id, nil if unknown; entries freed by
// FreeBefore are NoBlock. The slice belongs
// to the manager: read it, copy it before it leaves the actor, and do not
// keep it past the next call that changes id.
func (m *BlockManager) BlockTable(id SeqID) []int32 {
	if s, ok := m.seqs[id]; ok {
		return s.table[:len(s.table):len(s.table)]
	}
	return nil
}

// NumTokens returns the positions the table of id covers, 0 if unknown.
func (m *BlockManager) NumTokens(id SeqID) int {
	if s, ok := m.seqs[id]; ok {
		return s.numTokens
	}
	return 0
}

// NumBlocks is the number of physical blocks.
func (m *BlockManager) NumBlocks() int { return m.numBlocks }

// BlockSize is the number of token slots per block.
func (m *BlockManager) BlockSize() int { return m.blockSize }

// NumFreeBlocks is the number of blocks no table holds, cached or not.
func (m *BlockManager) NumFreeBlocks() int {
	return m.free.len[freePlain] + m.free.len[freeCached]
}

// Usage is the fraction of blocks held by block tables (cached free blocks
// count as free), as vLLM's kv_cache_usage.
func (m *BlockManager) Usage() float64 {
	return 1 - float64(m.NumFreeBlocks())/float64(m.numBlocks)
}

// Stats returns the current state and counters.
func (m *BlockManager) Stats() BlockStats {
	return BlockStats{
		NumBlocks: m.numBlocks, NumFreeBlocks: m.NumFreeBlocks(),
		NumCachedBlocks: m.free.len[freeCached], NumSeqs: len(m.seqs),
		PrefixQueries: m.prefixQueries, PrefixHits: m.prefixHits, Evictions: m.evictions,
		WindowFreed: m.windowFreed,
	}
}

func (m *BlockManager) numBlocksFor(numTokens int) int {
	return (numTokens + m.blockSize - 1) / m.blockSize
}

func (m *BlockManager) blockTokens(b int32) []int32 {
	return m.tokens[int(b)*m.blockSize : int(b+1)*m.blockSize]
}

func (m *BlockManager) newSeq(numBlocks int) *seqState {
	if n := len(m.spare); n > 0 {
		s := m.spare[n-1]
		m.spare = m.spare[:n-1]
		return s
	}
	return &seqState{table: make([]int32, 0, numBlocks+1)}
}
