package kv

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// TestExportImportBlocks: blocks exported from one cache and imported into
// other blocks of another hold the same bytes; data of the wrong size is
// ErrKVShape.
func TestExportImportBlocks(t *testing.T) {
	cfg := CacheConfig{Layers: 2, KVDim: 8, BlockSize: 4, NumBlocks: 6, Type: F16}
	src, _ := NewCache(cfg)
	dst, _ := NewCache(cfg)
	for l := range cfg.Layers {
		for slot := range cfg.NumBlocks * cfg.BlockSize {
			k, v := make([]float32, 8), make([]float32, 8)
			for i := range k {
				k[i], v[i] = float32(l*1000+slot*10+i), -float32(l*1000+slot*10+i)
			}
			src.Store(l, slot, k, v)
		}
	}
	data, err := src.ExportBlocks(nil, []int32{1, 4})
	if err != nil || len(data) != 2*src.ExportedBlockBytes() {
		t.Fatalf("export: %d bytes, %v", len(data), err)
	}
	if err := dst.ImportBlocks([]int32{5, 0}, data); err != nil {
		t.Fatal(err)
	}
	for l := range cfg.Layers {
		for _, p := range [][2]int{{1, 5}, {4, 0}} {
			sk, sv := src.Block(l, p[0])
			dk, dv := dst.Block(l, p[1])
			if !bytes.Equal(sk, dk) || !bytes.Equal(sv, dv) {
				t.Errorf("layer %d: block %d imported as %d differs", l, p[0], p[1])
			}
		}
	}
	if err := dst.ImportBlocks([]int32{0}, data); !errors.Is(err, ErrKVShape) {
		t.Errorf("two blocks' data for one: %v, want ErrKVShape", err)
	}
	if _, err := src.ExportBlocks(nil, []int32{6}); err == nil {
		t.Error("exporting block 6 of 6: no error")
	}
}

// TestHoldAndImportPrefix: a hold keeps cached blocks from eviction until
// freed; an import registers only the blocks the cache lacks (after what it
// has, never past a gap), and a later allocation finds them.
func TestHoldAndImportPrefix(t *testing.T) {
	const bs = 4
	tokens := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	src := NewBlockManager(4, bs, true)
	if _, err := src.AllocateUpTo(1, tokens, len(tokens)); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(src.BlockTable(1)[:3])
	src.Free(1)
	held, err := src.HoldPrefix(100, 0, tokens, bs, 0)
	if err != nil || !slices.Equal(held, want[1:]) {
		t.Fatalf("hold from token %d: %v, %v; want %v", bs, held, err, want[1:])
	}
	if src.NumFreeBlocks() != 2 {
		t.Errorf("%d free blocks while 2 are held, want 2", src.NumFreeBlocks())
	}
	src.Free(100)
	if _, err := src.HoldPrefix(101, 0, tokens, 1, 0); err == nil {
		t.Error("a hold from inside a block: no error")
	}

	dst := NewBlockManager(8, bs, true)
	if _, err := dst.AllocateUpTo(1, tokens[:bs+1], bs+1); err != nil { // dst has the first block
		t.Fatal(err)
	}
	dst.Free(1)
	if cached, blocks, err := dst.ImportPrefix(200, 0, tokens, 2*bs, 3*bs); err != nil || cached != bs || blocks != nil {
		t.Errorf("import past a gap: %d cached, %v, %v; want nothing", cached, blocks, err)
	}
	cached, blocks, err := dst.ImportPrefix(201, 0, tokens, 0, 3*bs)
	if err != nil || cached != bs || len(blocks) != 2 {
		t.Fatalf("import: %d cached, %v, %v; want 2 new blocks after %d", cached, blocks, err, bs)
	}
	dst.Free(201)
	if got := dst.NumCachedTokens(0, tokens); got != 3*bs {
		t.Errorf("%d tokens cached after the import, want %d", got, 3*bs)
	}
	if cached, blocks, _ := dst.ImportPrefix(202, 0, tokens, 0, 3*bs); cached != 3*bs || blocks != nil {
		t.Errorf("a second import: %d cached, %v; want nothing new", cached, blocks)
	}
	if _, _, err := dst.ImportPrefix(203, 0, tokens, 0, 5); err == nil {
		t.Error("an import ending inside a block: no error")
	}
}
