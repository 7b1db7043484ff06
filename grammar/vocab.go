package grammar

import (
	"bytes"
	"fmt"
	"slices"
)

// Vocab is a model's vocabulary as the matcher sees it: each token's bytes
// and the end-of-generation tokens, with a byte trie over the pieces. It is
// immutable and safe for concurrent use.
type Vocab struct {
	pieces [][]byte
	eog    []int32

	// The trie in depth-first order: node i's subtree is i..end[i]-1, its
	// byte is label[i] at depth depth[i] (the root, node 0, has depth 0).
	label   []byte
	depth   []int32
	end     []int32
	tokAt   []int32 // first token whose piece ends at the node, or -1
	tokNext []int32 // next token with the same piece, or -1
	maxLen  int
}

// NewVocab builds a Vocab. pieces[i] are the bytes token i stands for; give
// nil for tokens the grammar must never produce (control tokens, unused
// ids): empty pieces are never allowed. eog are the end-of-generation ids
// (EOS, EOT, ...), allowed only where the grammar may end.
func NewVocab(pieces [][]byte, eog ...int32) (*Vocab, error) {
	v := &Vocab{pieces: pieces, eog: eog, tokNext: make([]int32, len(pieces))}
	isEOG := map[int32]bool{}
	for _, e := range eog {
		if e < 0 || int(e) >= len(pieces) {
			return nil, fmt.Errorf("grammar: end-of-generation id %d outside a vocabulary of %d", e, len(pieces))
		}
		isEOG[e] = true
	}
	var ids []int32
	for i, p := range pieces {
		v.tokNext[i] = -1
		if len(p) > 0 && !isEOG[int32(i)] {
			ids = append(ids, int32(i))
			v.maxLen = max(v.maxLen, len(p))
		}
	}
	slices.SortStableFunc(ids, func(a, b int32) int { return bytes.Compare(pieces[a], pieces[b]) })

	v.label, v.depth, v.end, v.tokAt = []byte{0}, []int32{0}, []int32{0}, []int32{-1}
	path := []int32{0} // path[d] is the node at depth d of the previous piece
	var prev []byte
	for _, id := range ids {
		p := pieces[id]
		common := 0
		for common < len(p) && common < len(prev) && p[common] == prev[common] {
			common++
		}
		for len(path) > common+1 { // close the nodes the new piece leaves
			v.end[path[len(path)-1]] = int32(len(v.label))
			path = path[:len(path)-1]
		}
		for d := common; d < len(p); d++ {
			n := int32(len(v.label))
			v.label = append(v.label, p[d])
			v.depth = append(v.depth, int32(d+1))
			v.end = append(v.end, 0)
			v.tokAt = append(v.tokAt, -1)
			path = append(path, n)
		}
		last := path[len(p)]
		if v.tokAt[last] < 0 {
			v.tokAt[last] = id
		} else { // a piece seen before: chain it
			t := v.tokAt[last]
			for v.tokNext[t] >= 0 {
				t = v.tokNext[t]
			}
			v.tokNext[t] = id
		}
		prev = p
	}
	for _, n := range path {
		v.end[n] = int32(len(v.label))
	}
	return v, nil
}

// Size is the number of tokens.
func (v *Vocab) Size() int { return len(v.pieces) }

// MaskWords is the length of the bitset Mask writes.
func (v *Vocab) MaskWords() int { return (len(v.pieces) + 63) / 64 }

// Piece returns the bytes of token id.
func (v *Vocab) Piece(id int32) []byte { return v.pieces[id] }

// EOG returns the end-of-generation ids; the caller must not modify them.
func (v *Vocab) EOG() []int32 { return v.eog }

// IsEOG reports whether id ends generation.
func (v *Vocab) IsEOG(id int32) bool { return slices.Contains(v.eog, id) }

// computeMask writes the tokens allowed from state s into dst (zeroed
// first). The caller holds m.mu.
func (m *machine) computeMask(v *Vocab, s int32, dst []uint64) {
	clear(dst)
	st := m.states[s]
	if st.accept {
		for _, e := range v.eog {
			dst[e>>6] |= 1 << (e & 63)
		}
	}
	if !st.live {
		return
	}
	at := make([]int32, v.maxLen+1) // at[d]: the state after the path's first d bytes
	at[0] = s
	for i := int32(1); i < int32(len(v.label)); {
		d := v.depth[i]
		t := m.step(at[d-1], v.label[i])
		if t == dead {
			i = v.end[i]
			continue
		}
		at[d] = t
		for tok := v.tokAt[i]; tok >= 0; tok = v.tokNext[tok] {
			dst[tok>>6] |= 1 << (tok & 63)
		}
		i++
	}
}

// maskKey names a cached mask: a state's allowed tokens in one vocabulary
// (a runtime has one or two: control tokens' text dropped, or kept).
type maskKey struct {
	v *Vocab
	s int32
}

// mask writes the allowed tokens of state s, from the cache when it can,
// and reports whether it did. The caller holds m.mu.
func (m *machine) mask(v *Vocab, s int32, dst []uint64) (cached bool) {
	k := maskKey{v, s}
	if c, ok := m.masks[k]; ok {
		copy(dst, c)
		return true
	}
	m.computeMask(v, s, dst)
	if m.err != nil {
		return false
	}
	if m.maskSize+maskEntryBytes+8*len(dst) > maskBytes {
		m.masks, m.maskSize = map[maskKey][]uint64{}, 0
	}
	m.masks[k] = slices.Clone(dst)
	m.maskSize += maskEntryBytes + 8*len(dst)
	return false
}
