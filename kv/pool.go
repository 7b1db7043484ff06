package kv

import (
	"errors"
	"fmt"
)

// ErrOutOfBlocks is returned when a Pool cannot satisfy an allocation.
var ErrOutOfBlocks = errors.New("kv: out of blocks")

// Pool is a plain free list of block ids: enough to run several sequences
// at once in tests and tools. The runtime's block manager adds prefix caching.
type Pool struct {
	free []int32
	used []bool
}

// NewPool returns a pool of blocks 0..n-1, all free.
func NewPool(n int) *Pool {
	p := &Pool{free: make([]int32, n), used: make([]bool, n)}
	for i := range p.free {
		p.free[i] = int32(n - 1 - i) // pop from the end: block 0 first
	}
	return p
}

// NumFree is the number of free blocks.
func (p *Pool) NumFree() int { return len(p.free) }

// Grow extends table so it covers numTokens positions with blockSize slots
// per block, taking blocks from the pool. On error the table is unchanged.
func (p *Pool) Grow(table []int32, numTokens, blockSize int) ([]int32, error) {
	need := (numTokens+blockSize-1)/blockSize - len(table)
	if need <= 0 {
		return table, nil
	}
	if need > len(p.free) {
		return table, fmt.Errorf("%w: need %d, %d free", ErrOutOfBlocks, need, len(p.free))
	}
	for range need {
		b := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.used[b] = true
		table = append(table, b)
	}
	return table, nil
}

// Release returns the blocks of table to the pool; NoBlock entries are
// skipped.
func (p *Pool) Release(table []int32) {
	for _, b := range table {
		if b >= 0 && p.used[b] {
			p.used[b] = false
			p.free = append(p.free, b)
		}
	}
}
