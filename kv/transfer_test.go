package kv

import (
	"bytes"
	"errors"
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

// Holds and imports of prefixes are traced in testdata/trace/hold_import.txt.
