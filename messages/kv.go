package messages

// Disaggregated prefill and decode (actors/cluster, disagg*.go): a prefill
// member computes a prompt, exports the K/V of its full blocks, and a
// decode member imports them into its prefix cache, so that the request it
// then runs finds them cached. Only the base model's blocks move (no LoRA
// set: salt 0).

// KVShape is what a block of K/V is on a device: every layer's K then V,
// BlockSize rows of RowBytes each, in the cache's element type. A block
// moves only between devices of the same shape; an exported block is
// Layers*2*BlockSize*RowBytes bytes.
type KVShape struct {
	Type      string `msgpack:"type"` // kv.CacheType's name: f16, q8_0
	Layers    int    `msgpack:"layers"`
	KVDim     int    `msgpack:"kv_dim"`
	BlockSize int    `msgpack:"block_size"`
	RowBytes  int    `msgpack:"row_bytes"`
}

// CachedTokens asks how many leading tokens of Tokens the prefix cache
// holds now (answered with KVCached). Anyone -> batcher.
type CachedTokens struct {
	Tokens []int32 `msgpack:"tokens"`
}

// KVCached answers CachedTokens. Batcher -> asker.
type KVCached struct {
	NumCachedTokens int    `msgpack:"num_cached_tokens"`
	Err             string `msgpack:"err,omitempty"`
}

// ExportKV asks for the K/V of the cached full blocks of Tokens from token
// From (a multiple of the block size) on, at most MaxBlocks of them (0: no
// limit). Answered with KVExported. Anyone -> batcher.
type ExportKV struct {
	Tokens    []int32 `msgpack:"tokens"`
	From      int     `msgpack:"from"`
	MaxBlocks int     `msgpack:"max_blocks,omitempty"`
}

// KVExported answers ExportKV: Blocks blocks of Shape, concatenated in
// Data, holding tokens [From, From+Blocks*BlockSize). Fewer blocks than
// asked means the cache held no more (evicted, or never computed). Batcher
// -> asker.
type KVExported struct {
	Shape  KVShape `msgpack:"shape"`
	From   int     `msgpack:"from"`
	Blocks int     `msgpack:"blocks"`
	Data   []byte  `msgpack:"data"`
	Err    string  `msgpack:"err,omitempty"`
}

// ImportKV gives the K/V of Tokens[From:From+Blocks*BlockSize] (Data, in
// Shape) to the prefix cache, to be found by a later request over the same
// tokens. Blocks already cached are skipped; blocks after a gap (the cache
// lacks a block before From) are dropped, since a block is found only
// through its whole prefix. Answered with KVImported. Anyone -> batcher.
type ImportKV struct {
	Tokens []int32 `msgpack:"tokens"`
	Shape  KVShape `msgpack:"shape"`
	From   int     `msgpack:"from"`
	Blocks int     `msgpack:"blocks"`
	Data   []byte  `msgpack:"data"`
}

// KVImported answers ImportKV: NumCachedTokens the leading tokens cached
// before it, Imported the blocks written. Batcher -> asker.
type KVImported struct {
	NumCachedTokens int    `msgpack:"num_cached_tokens"`
	Imported        int    `msgpack:"imported"`
	Err             string `msgpack:"err,omitempty"`
}
