package safetensors

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen writes arbitrary bytes as model.safetensors and opens it. Open
// must fail cleanly or return a model whose every tensor lies inside the
// file and has the size its dtype and shape say.
func FuzzOpen(f *testing.F) {
	// The crafted seeds below still run when the shared models are missing.
	if dir, err := findModelsDir(); err == nil {
		real, err := os.ReadFile(filepath.Join(dir, "tinystories-656k-safetensors", "model.safetensors"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(real[:8+2160+64]) // the header and the first tensor's start
		f.Add(real[:512])
	}
	f.Add([]byte{})
	f.Add(withHeader(`{}`, 0))
	f.Add(withHeader(`{"__metadata__":{"format":"pt","b":"a"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(withHeader(`{"a":{"dtype":"BF16","shape":[2,1],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[],"data_offsets":[4,6]}}`, 6))
	f.Add(withHeader(`{"a":{"dtype":"I8","shape":[3],"data_offsets":[1,4]},"c":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4))
	f.Add(withHeader(`{"a":{"dtype":"F4","shape":[4,0],"data_offsets":[0,0]}}`, 0))
	f.Add(withLength(withHeader(`{}`, 0), 1<<40))

	// One directory for every input: a worker runs its inputs one at a time,
	// and a fresh t.TempDir per input makes execs (and so minimization) slow.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Open(dir)
		if err != nil {
			return
		}
		defer m.Close()
		names := m.Names()
		for alias := range m.Aliases() {
			names = append(names, alias)
		}
		for _, name := range names {
			ten, err := m.Tensor(name)
			if errors.Is(err, ErrUnsupportedDType) {
				continue
			}
			if err != nil {
				t.Fatalf("Tensor(%q) of a listed name: %v", name, err)
			}
			if got, want := len(ten.Data), ten.Elems()*ten.Type.TypeSize(); got != want {
				t.Fatalf("Tensor(%q): %d bytes for %v %v, want %d", name, got, ten.Type, ten.Shape, want)
			}
			for _, c := range ten.Data { // touch every byte: a bad range faults here
				_ = c
			}
		}
	})
}
