package safetensors

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"
)

// TestFindWeights covers the directory layouts without an index, a single
// file path and aliases written the other way round.
func TestFindWeights(t *testing.T) {
	a := testTensor{"a", "F32", []int64{1}, u32s(1)}
	b := testTensor{"b", "F32", []int64{1}, u32s(2)}
	embed := testTensor{embedName, "F32", []int64{1}, u32s(3)}
	tied := map[string]string{"format": "pt", embedName: lmHeadName}
	tests := []struct {
		name    string
		files   map[string][]byte
		path    string // relative to the directory; "" opens the directory
		names   []string
		aliases map[string]string
	}{
		{"single", map[string][]byte{"model.safetensors": encodeFile(t, []testTensor{a}, nil)}, "", []string{"a"}, nil},
		{"model file preferred", map[string][]byte{
			"model.safetensors":         encodeFile(t, []testTensor{a}, nil),
			"adapter_model.safetensors": encodeFile(t, []testTensor{b}, nil),
		}, "", []string{"a"}, nil},
		{"every file without index", map[string][]byte{
			"consolidated-1.safetensors": encodeFile(t, []testTensor{a}, nil),
			"consolidated-2.safetensors": encodeFile(t, []testTensor{b}, nil),
		}, "", []string{"a", "b"}, nil},
		{"file path", map[string][]byte{
			"model.safetensors": encodeFile(t, []testTensor{a}, nil),
			"other.safetensors": encodeFile(t, []testTensor{b}, nil),
		}, "other.safetensors", []string{"b"}, nil},
		{"alias reversed", map[string][]byte{"model.safetensors": encodeFile(t, []testTensor{embed}, tied)},
			"", []string{embedName}, map[string]string{lmHeadName: embedName}},
		{"no alias when both stored", map[string][]byte{"model.safetensors": encodeFile(t, []testTensor{embed, {lmHeadName, "F32", []int64{1}, u32s(4)}}, tied)},
			"", []string{lmHeadName, embedName}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDir(t, tt.files)
			m := openT(t, filepath.Join(dir, tt.path))
			if !slices.Equal(m.Names(), tt.names) || !equalMaps(m.Aliases(), tt.aliases) {
				t.Errorf("Names() = %v, Aliases() = %v; want %v, %v", m.Names(), m.Aliases(), tt.names, tt.aliases)
			}
			for alias, target := range tt.aliases {
				x, err1 := m.Tensor(alias)
				y, err2 := m.Tensor(target)
				if err1 != nil || err2 != nil || x.Name != alias || !bytes.Equal(x.Data, y.Data) {
					t.Errorf("alias %s -> %s: %v, %v", alias, target, err1, err2)
				}
			}
			if m.Dir() != dir {
				t.Errorf("Dir() = %s, want %s", m.Dir(), dir)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
