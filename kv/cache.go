package kv

import (
	"errors"
	"fmt"
)

// DefaultBlockSize is the number of token slots in one block.
const DefaultBlockSize = 16

// CacheConfig sizes a Cache.
type CacheConfig struct {
	Layers    int // transformer layers
	KVDim     int // values per token per layer for K (and for V): n_kv_heads * head_dim
	BlockSize int // token slots per block; 0 means DefaultBlockSize
	NumBlocks int // physical blocks
	// RoundF16 rounds every stored value to the nearest float16, matching the
	// F16 cache of llama.cpp (its default) value for value.
	RoundF16 bool
}

// Validate reports an impossible configuration.
func (c *CacheConfig) Validate() error {
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	switch {
	case c.Layers <= 0, c.KVDim <= 0:
		return fmt.Errorf("kv: cache needs layers and kv dim > 0 (got %d, %d)", c.Layers, c.KVDim)
	case c.BlockSize < 1:
		return fmt.Errorf("kv: block size %d < 1", c.BlockSize)
	case c.NumBlocks < 1:
		return fmt.Errorf("kv: %d blocks: need at least one", c.NumBlocks)
	}
	return nil
}

// Cache is the physical K/V storage of one device.
type Cache struct {
	CacheConfig
	k [][]float32 // (layer) (num_blocks, block_size, kv_dim)
	v [][]float32 // (layer) (num_blocks, block_size, kv_dim)
}

// NewCache allocates the blocks of cfg.
func NewCache(cfg CacheConfig) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cache{CacheConfig: cfg, k: make([][]float32, cfg.Layers), v: make([][]float32, cfg.Layers)}
	n := cfg.NumBlocks * cfg.BlockSize * cfg.KVDim
	for l := range c.k {
		c.k[l] = make([]float32, n)
		c.v[l] = make([]float32, n)
	}
	return c, nil
}

// ErrBadSlot is returned when a block table does not cover a position.
var ErrBadSlot = errors.New("kv: position not covered by the block table")

// Slot returns the index of the slot holding position pos of a sequence whose
// blocks are table.
func (c *Cache) Slot(table []int32, pos int) (int, error) {
	bi := pos / c.BlockSize
	if pos < 0 || bi >= len(table) {
		return 0, fmt.Errorf("%w: position %d, %d blocks", ErrBadSlot, pos, len(table))
	}
	b := int(table[bi])
	if b < 0 || b >= c.NumBlocks {
		return 0, fmt.Errorf("%w: block %d of %d", ErrBadSlot, b, c.NumBlocks)
	}
	return b*c.BlockSize + pos%c.BlockSize, nil
}

// K returns the key vector (len KVDim) stored in slot of layer.
func (c *Cache) K(layer, slot int) []float32 {
	return c.k[layer][slot*c.KVDim : (slot+1)*c.KVDim]
}

// V returns the value vector (len KVDim) stored in slot of layer.
func (c *Cache) V(layer, slot int) []float32 {
	return c.v[layer][slot*c.KVDim : (slot+1)*c.KVDim]
}

// Block returns the K and V storage of one block of a layer, (block_size,
// kv_dim) each, for copying blocks (swap, copy-on-write).
func (c *Cache) Block(layer, block int) (k, v []float32) {
	n := c.BlockSize * c.KVDim
	return c.k[layer][block*n : (block+1)*n], c.v[layer][block*n : (block+1)*n]
}

// Store writes k and v into slot of layer.
func (c *Cache) Store(layer, slot int, k, v []float32) {
	dk, dv := c.K(layer, slot), c.V(layer, slot)
	copy(dk, k)
	copy(dv, v)
	if c.RoundF16 {
		roundF16(dk)
		roundF16(dv)
	}
}
