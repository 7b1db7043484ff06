package backend

import (
	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

var _ actors.KVTransferBackend = (*CPU)(nil)

// KVShape is the shape of the CPU's K/V blocks.
func (b *CPU) KVShape() messages.KVShape {
	c := b.cache
	return messages.KVShape{Type: c.Type.String(), Layers: c.Layers, KVDim: c.KVDim, BlockSize: c.BlockSize, RowBytes: c.RowBytes()}
}

// ExportBlocks appends the K/V of blocks to dst (kv.Cache.ExportBlocks).
func (b *CPU) ExportBlocks(dst []byte, blocks []int32) ([]byte, error) {
	return b.cache.ExportBlocks(dst, blocks)
}

// ImportBlocks writes exported K/V into blocks (kv.Cache.ImportBlocks).
func (b *CPU) ImportBlocks(blocks []int32, data []byte) error {
	return b.cache.ImportBlocks(blocks, data)
}
