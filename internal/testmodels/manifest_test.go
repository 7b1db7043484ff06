package testmodels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckManifest: a missing folder, model or reference, and an unlisted
// synthetic file, are each reported; a complete tree is not.
func TestCheckManifest(t *testing.T) {
	list := []Reference{{Rel: "a.gguf"}, {Rel: "synthetic/s.gguf"}, {Rel: "synthetic-more/m.gguf"}, {Rel: "dir-model"}}
	for _, tc := range []struct {
		name   string
		remove string // a path under the root to delete
		add    string // a file to create under the models dir
		want   string // in the problem text; "" for none
	}{
		{"complete", "", "", ""},
		{"no synthetic-more folder", "models/synthetic-more", "", "missing model"},
		{"no synthetic folder", "models/synthetic", "", "synthetic/s.gguf"},
		{"no reference", "reference/m", "", "missing reference"},
		{"no directory model", "models/dir-model", "", "dir-model"},
		{"unlisted file", "", "synthetic-more/new.gguf", "not in the reference manifest: synthetic-more/new.gguf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "models")
			for _, r := range list {
				p := filepath.Join(dir, filepath.FromSlash(r.Rel))
				if r.GGUF() {
					mkfile(t, p)
				} else if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				mkfile(t, filepath.Join(root, "reference", r.Name(), "case0.json"))
			}
			if tc.remove != "" {
				if err := os.RemoveAll(filepath.Join(root, tc.remove)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.add != "" {
				mkfile(t, filepath.Join(dir, tc.add))
			}
			got := checkManifest(dir, list)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("checkManifest = %q, want %q", got, tc.want)
			}
		})
	}
}

func mkfile(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestManifestShared checks the manifest against the shared models, when
// they are there.
func TestManifestShared(t *testing.T) {
	refs := References(t)
	names := map[string]bool{}
	for _, r := range refs {
		if names[r.Name()] {
			t.Errorf("%s listed twice", r.Name())
		}
		names[r.Name()] = true
		if r.Bound <= 0 || r.Bound > 0.08 || r.CUDABound() > 0.08 {
			t.Errorf("%s: bounds %g, %g outside (0, 8%%]", r.Name(), r.Bound, r.CUDABound())
		}
	}
}
