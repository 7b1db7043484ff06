package kv

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
)

// DefaultBlockSize is the number of token slots in one block.
const DefaultBlockSize = 16

// CacheType is the element type of the stored keys and values (llama.cpp's
// --cache-type-k/-v). The zero value is F16, llama.cpp's default.
type CacheType uint8

const (
	// F16 stores each value as the nearest float16 (ties to even).
	F16 CacheType = iota
	// Q8_0 stores each row as ggml Q8_0 blocks of 32 values (34 bytes: an
	// f16 scale and 32 int8), quantized as llama.cpp's CPU backend does.
	Q8_0
)

// CacheTypes names the types ParseCacheType accepts, in order.
const CacheTypes = "f16, q8_0"

func (t CacheType) String() string {
	switch t {
	case F16:
		return "f16"
	case Q8_0:
		return "q8_0"
	}
	return fmt.Sprintf("CacheType(%d)", uint8(t))
}

// ParseCacheType reads a type's name as llama.cpp spells it: f16 or q8_0.
func ParseCacheType(s string) (CacheType, error) {
	switch s {
	case "f16":
		return F16, nil
	case "q8_0":
		return Q8_0, nil
	}
	return 0, fmt.Errorf("kv: cache type %q: want one of %s", s, CacheTypes)
}

// RowBytes is the storage of n values of type t (n a multiple of 32 for
// Q8_0).
func (t CacheType) RowBytes(n int) int {
	if t == Q8_0 {
		return n / 32 * compute.Q8_0BlockBytes
	}
	return 2 * n
}

// CacheConfig sizes a Cache.
type CacheConfig struct {
	Layers    int       // transformer layers
	KVDim     int       // values per token per layer for K (and for V): n_kv_heads * head_dim
	BlockSize int       // token slots per block; 0 means DefaultBlockSize
	NumBlocks int       // physical blocks
	Type      CacheType // element type of K and V; the zero value is F16
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
	case c.Type > Q8_0:
		return fmt.Errorf("kv: unknown cache type %d", c.Type)
	case c.Type == Q8_0 && c.KVDim%32 != 0:
		return fmt.Errorf("kv: a q8_0 cache needs a kv dim that is a multiple of 32 (got %d)", c.KVDim)
	}
	return nil
}

// RowBytes is the storage of one token's K (or V) in one layer.
func (c *CacheConfig) RowBytes() int { return c.Type.RowBytes(c.KVDim) }

// BlockBytes is the storage of one block: every layer's K and V.
func (c *CacheConfig) BlockBytes() int64 {
	return 2 * int64(c.Layers) * int64(c.BlockSize) * int64(c.RowBytes())
}

// Bytes is the storage of all the blocks.
func (c *CacheConfig) Bytes() int64 { return int64(c.NumBlocks) * c.BlockBytes() }

// Cache is the physical K/V storage of one device.
type Cache struct {
	CacheConfig
	k [][]byte // (layer) (num_blocks, block_size, row_bytes)
	v [][]byte // (layer) (num_blocks, block_size, row_bytes)
}

// NewCache allocates the blocks of cfg.
func NewCache(cfg CacheConfig) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cache{CacheConfig: cfg, k: make([][]byte, cfg.Layers), v: make([][]byte, cfg.Layers)}
	n := cfg.NumBlocks * cfg.BlockSize * cfg.RowBytes()
	for l := range c.k {
		// uint16 words: an f16 row is read as []uint16
		c.k[l] = bytesOf(make([]uint16, n/2))
		c.v[l] = bytesOf(make([]uint16, n/2))
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

// Block returns the K and V storage of one block of a layer, (block_size,
// row_bytes) each, for copying blocks (swap, copy-on-write) and for the
// Q8_0 attention kernels.
func (c *Cache) Block(layer, block int) (k, v []byte) {
	n := c.BlockSize * c.RowBytes()
	return c.k[layer][block*n : (block+1)*n], c.v[layer][block*n : (block+1)*n]
}

// BlockF16 is Block for an F16 cache, as f16 values (block_size, kv_dim).
func (c *Cache) BlockF16(layer, block int) (k, v []uint16) {
	kb, vb := c.Block(layer, block)
	return f16sOf(kb), f16sOf(vb)
}

// Store writes k and v (KVDim values each) into slot of layer, converted
// to the cache's type.
func (c *Cache) Store(layer, slot int, k, v []float32) {
	rb := c.RowBytes()
	dk := c.k[layer][slot*rb : (slot+1)*rb]
	dv := c.v[layer][slot*rb : (slot+1)*rb]
	switch c.Type {
	case F16:
		compute.F16s(f16sOf(dk), k[:c.KVDim])
		compute.F16s(f16sOf(dv), v[:c.KVDim])
	case Q8_0:
		compute.QuantizeQ8_0(dk, k[:c.KVDim])
		compute.QuantizeQ8_0(dv, v[:c.KVDim])
	}
}

// Load sets k and v (KVDim values each) to the values stored in slot of
// layer.
func (c *Cache) Load(layer, slot int, k, v []float32) {
	rb := c.RowBytes()
	for _, p := range []struct {
		src []byte
		dst []float32
	}{{c.k[layer][slot*rb : (slot+1)*rb], k[:c.KVDim]}, {c.v[layer][slot*rb : (slot+1)*rb], v[:c.KVDim]}} {
		t := compute.F16
		if c.Type == Q8_0 {
			t = compute.Q8_0
		}
		if err := compute.Dequantize(t, p.src, p.dst); err != nil {
			panic(err) // the sizes are the cache's own
		}
	}
}

func bytesOf(s []uint16) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s))
}

// f16sOf views b (2-byte aligned: the cache's rows are) as f16 values.
func f16sOf(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}
