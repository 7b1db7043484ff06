package kv

import "fmt"

// NewStageCache allocates the blocks of cfg for the layers [lo, hi) only: a
// pipeline stage's cache. Its layer indexes stay the model's (Block and
// Store take l in [lo, hi)); the other layers hold nothing, and touching
// one is a broken invariant (a panic). Its Bytes count every layer: the
// stage's own storage is StageBytes.
func NewStageCache(cfg CacheConfig, lo, hi int) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if lo < 0 || hi <= lo || hi > cfg.Layers {
		return nil, fmt.Errorf("kv: stage layers [%d, %d) outside a cache of %d layers", lo, hi, cfg.Layers)
	}
	c := &Cache{CacheConfig: cfg, k: make([][]byte, cfg.Layers), v: make([][]byte, cfg.Layers)}
	n := cfg.NumBlocks * cfg.BlockSize * cfg.RowBytes()
	for l := lo; l < hi; l++ {
		c.k[l] = bytesOf(make([]uint16, n/2))
		c.v[l] = bytesOf(make([]uint16, n/2))
	}
	return c, nil
}

// HasLayer reports whether the cache holds layer l's keys and values (every
// layer, but for a stage cache).
func (c *Cache) HasLayer(l int) bool { return l >= 0 && l < len(c.k) && c.k[l] != nil }

// StageBytes is the storage the cache holds: its own layers' blocks.
func (c *Cache) StageBytes() int64 {
	var n int64
	for l := range c.k {
		n += int64(len(c.k[l]) + len(c.v[l]))
	}
	return n
}
