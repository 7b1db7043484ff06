package kv

import "slices"

// RootHash is the parent hash of the first block of a sequence.
const RootHash uint64 = 14695981039346656037 // FNV-1a 64-bit offset basis

const fnvPrime64 = 1099511628211

// BlockHash returns the chain hash of a full block of tokens whose parent
// block hashed to parent (RootHash for the first block): 64-bit FNV-1a over
// the token ids as 32-bit words, seeded with the parent hash. It is the same
// on every run and node, so a router can compute prefix affinity with it.
func BlockHash(parent uint64, tokens []int32) uint64 {
	h := parent
	for _, t := range tokens {
		h ^= uint64(uint32(t))
		h *= fnvPrime64
	}
	return h
}

// SaltRootHash is the parent hash of the first block of a sequence whose
// K/V depends on more than its tokens (salt: the runtime's id of its LoRA
// adapter set; 0 for the base model, whose root is RootHash): sequences
// with different salts never share a block.
func SaltRootHash(salt uint64) uint64 {
	if salt == 0 {
		return RootHash
	}
	return BlockHash(RootHash, []int32{int32(uint32(salt)), int32(uint32(salt >> 32)), -1})
}

// lookup appends to hits the cached blocks holding the leading full blocks of
// tokens, stopping at the first miss and never covering the last token.
//
// A candidate found by hash is a hit only if it stores the same tokens and
// its parent has the content id of the previous hit: equal content ids mean
// equal prefixes token for token, so a hash collision, in this block or in
// any before it, can cost a hit but never give a wrong one.
//
// Only blocks registered under salt are hits (their salt is compared too, so
// a collision across salts cannot give one either).
func (m *BlockManager) lookup(salt uint64, tokens []int32, hits []int32) []int32 {
	if !m.prefixCaching {
		return hits
	}
	h, cid := SaltRootHash(salt), uint64(0)
	for i := range (len(tokens) - 1) / m.blockSize {
		chunk := tokens[i*m.blockSize : (i+1)*m.blockSize]
		h = m.hash(h, chunk)
		b, ok := m.cached[h]
		if !ok || m.blocks[b].parentCID != cid || m.blocks[b].salt != salt || !slices.Equal(m.blockTokens(b), chunk) {
			break
		}
		hits = append(hits, b)
		cid = m.blocks[b].cid
	}
	return hits
}

// register hashes the full block b, the last block of s's table, and makes
// it findable by later lookups. Its parent is s's previous full block, known
// by the hash and content id s kept (that block may have been freed for a
// sliding window since). If a registered block already
// holds the same prefix, b is a duplicate: it takes that block's content id
// (so blocks after it chain to the registered one) and stays unregistered. A
// registered block with the same hash but another prefix (a collision, or a
// block whose parent was evicted) loses its entry to b.
func (m *BlockManager) register(b int32, s *seqState) {
	parentHash, parentCID := s.lastHash, s.lastCID
	blk := &m.blocks[b]
	blk.hash = m.hash(parentHash, m.blockTokens(b))
	blk.parentCID, blk.salt = parentCID, s.salt
	s.lastHash = blk.hash
	if e, ok := m.cached[blk.hash]; ok {
		if m.blocks[e].parentCID == parentCID && m.blocks[e].salt == s.salt && slices.Equal(m.blockTokens(e), m.blockTokens(b)) {
			blk.cid = m.blocks[e].cid
			s.lastCID = blk.cid
			return
		}
		m.uncache(e)
	}
	m.nextCID++
	blk.cid = m.nextCID
	blk.cached = true
	m.cached[blk.hash] = b
	s.lastCID = blk.cid
}

// uncache removes the registration of block b. A cached free block becomes a
// plain free block; a block in use keeps its hash and content id, which the
// blocks after it in its tables chain to.
func (m *BlockManager) uncache(b int32) {
	blk := &m.blocks[b]
	delete(m.cached, blk.hash)
	blk.cached = false
	if blk.where == freeCached {
		m.free.unlink(freeCached, b)
		*blk = block{where: freePlain}
		m.free.pushBack(freePlain, b)
	}
}

// ResetPrefixCache forgets every cached free block, as vLLM's
// reset_prefix_cache: they become plain free blocks, so no later lookup hits
// them. Blocks in use keep their registration. Call it when the content of
// cached blocks can no longer be trusted (a device failed mid-step).
func (m *BlockManager) ResetPrefixCache() {
	for b := m.free.front(freeCached); b >= 0; b = m.free.front(freeCached) {
		m.uncache(b)
	}
}
