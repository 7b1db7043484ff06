package hub

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/hub/hubtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model/safetensors"
)

// tinyStories returns the files of the real safetensors directory of
// TinyStories-656K, by name.
func tinyStories(t *testing.T) map[string][]byte {
	t.Helper()
	dir := testmodels.Path(t, "tinystories-656k-safetensors")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// shard splits a .safetensors file into two shards (tensors alternating
// between them, each with the file's __metadata__) and the index that maps
// tensors to shards, as save_pretrained writes them.
func shard(t *testing.T, st []byte) (shards map[string][]byte, index []byte) {
	t.Helper()
	n := binary.LittleEndian.Uint64(st)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(st[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	data := st[8+n:]
	var names []string
	for name := range hdr {
		if name != "__metadata__" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	type entry struct {
		DType   string  `json:"dtype"`
		Shape   []int64 `json:"shape"`
		Offsets [2]int  `json:"data_offsets"`
	}
	heads := [2]map[string]any{{}, {}}
	bodies := [2][]byte{}
	weightMap := map[string]string{}
	file := func(i int) string { return fmt.Sprintf("model-%05d-of-00002.safetensors", i+1) }
	for i, name := range names {
		var e entry
		if err := json.Unmarshal(hdr[name], &e); err != nil {
			t.Fatal(err)
		}
		k := i % 2
		b := data[e.Offsets[0]:e.Offsets[1]]
		heads[k][name] = entry{e.DType, e.Shape, [2]int{len(bodies[k]), len(bodies[k]) + len(b)}}
		bodies[k] = append(bodies[k], b...)
		weightMap[name] = file(k)
	}
	shards = map[string][]byte{}
	for k := range 2 {
		if meta, ok := hdr["__metadata__"]; ok {
			heads[k]["__metadata__"] = meta
		}
		js, err := json.Marshal(heads[k])
		if err != nil {
			t.Fatal(err)
		}
		js = append(js, strings.Repeat(" ", (8-len(js)%8)%8)...)
		out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
		shards[file(k)] = append(append(out, js...), bodies[k]...)
	}
	index, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": len(data)}, "weight_map": weightMap})
	if err != nil {
		t.Fatal(err)
	}
	return shards, index
}

func tensorNames(t *testing.T, dir string) []string {
	t.Helper()
	m, err := safetensors.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	names := m.Names()
	slices.Sort(names)
	return names
}

func TestDownloadDirectory(t *testing.T) {
	ts := tinyStories(t)
	shards, index := shard(t, ts["model.safetensors"])
	lfs := func(name string, b []byte) hubtest.File { return hubtest.File{Name: name, Data: b, LFS: true} }
	small := func(name string, b []byte) hubtest.File { return hubtest.File{Name: name, Data: b} }
	common := []hubtest.File{
		small("config.json", ts["config.json"]),
		small("generation_config.json", ts["generation_config.json"]),
		small("special_tokens_map.json", ts["special_tokens_map.json"]),
		small("tokenizer.json", ts["tokenizer.json"]),
		small("tokenizer_config.json", ts["tokenizer_config.json"]),
		small("README.md", []byte("# TinyStories-656K\n")),
		lfs("original/model.safetensors", ts["model.safetensors"]),
	}
	files := func(extra ...hubtest.File) []hubtest.File { return append(slices.Clone(common), extra...) }

	cases := []struct {
		name  string
		repo  hubtest.Repo
		want  []string // files in the snapshot
		gguf  bool
		fails string
	}{
		{
			name: "sharded",
			repo: hubtest.Repo{ID: "roneneldan/TinyStories-sharded", Files: files(
				small("model.safetensors.index.json", index),
				small("chat_template.jinja", []byte("{% for m in messages %}{{ m.content }}{% endfor %}")),
				lfs("model-00001-of-00002.safetensors", shards["model-00001-of-00002.safetensors"]),
				lfs("model-00002-of-00002.safetensors", shards["model-00002-of-00002.safetensors"]),
				lfs("consolidated.safetensors", ts["model.safetensors"]), // not in the index: not fetched
			)},
			want: []string{"chat_template.jinja", "config.json", "generation_config.json", "model-00001-of-00002.safetensors",
				"model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json"},
		},
		{
			name: "single file",
			repo: hubtest.Repo{ID: "roneneldan/TinyStories-656K", Files: files(lfs("model.safetensors", ts["model.safetensors"]))},
			want: []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"},
		},
		{
			name: "other names",
			repo: hubtest.Repo{ID: "roneneldan/TinyStories-renamed", Files: files(lfs("weights.safetensors", ts["model.safetensors"]))},
			want: []string{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "weights.safetensors"},
		},
		{
			name:  "GGUF only",
			repo:  hubtest.Repo{ID: "karpathy/stories260K", Files: []hubtest.File{lfs("stories260K.gguf", ts["model.safetensors"])}},
			fails: "has no config.json at its root, so it is not a safetensors model directory; name a file: hf://karpathy/stories260K/FILE.gguf",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := hubtest.New(t, tc.repo)
			o := options(t, s)
			ref := mustParse(t, "hf://"+tc.repo.ID)
			dir, err := Download(context.Background(), ref, o)
			if tc.fails != "" {
				if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tc.fails) {
					t.Fatalf("err = %v, want ErrNotFound saying %q", err, tc.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkSnapshot(t, dir, tc.repo.Files, tc.want)
			checkCachedSnapshot(t, s, ref, o, dir, tc.want[len(tc.want)-1])
		})
	}
}

// checkSnapshot checks that dir holds exactly the files want, with the
// repository's contents, and the tiny model's tensors.
func checkSnapshot(t *testing.T, dir string, files []hubtest.File, want []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("snapshot holds %v, want %v", got, want)
	}
	for _, f := range files {
		if slices.Contains(want, f.Name) {
			checkFile(t, filepath.Join(dir, f.Name), f.Data)
		}
	}
	wantNames := tensorNames(t, testmodels.Path(t, "tinystories-656k-safetensors"))
	if names := tensorNames(t, dir); !slices.Equal(names, wantNames) {
		t.Errorf("tensors %v, want %v", names, wantNames)
	}
}

// checkCachedSnapshot checks that a second download of ref is the cached
// dir without a request, also with the server closed, and that with one
// of its files (last) gone it is not complete.
func checkCachedSnapshot(t *testing.T, s *hubtest.Server, ref Ref, o Options, dir, last string) {
	t.Helper()
	// Cached: no request, and none needed.
	before := len(s.Requests())
	again, err := Download(context.Background(), ref, o)
	if err != nil || again != dir || len(s.Requests()) != before {
		t.Fatalf("second call: %q, %v, %d requests; want %q and none", again, err, len(s.Requests())-before, dir)
	}
	s.Close()
	if again, err := Download(context.Background(), ref, o); err != nil || again != dir {
		t.Fatalf("with the server closed: %q, %v", again, err)
	}
	// A file of the snapshot gone: the directory is no longer complete.
	os.Remove(filepath.Join(dir, last))
	if _, err := Download(context.Background(), ref, o); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("incomplete snapshot with the server closed: %v", err)
	}
}

// TestHostileHub: a hub that answers with names meant to escape the cache
// (a commit of "../..", shards and files named "../x") gets a clear error or
// a download that stays inside the cache directory; nothing is written
// outside it.
func TestHostileHub(t *testing.T) {
	ts := tinyStories(t)
	cfg := hubtest.File{Name: "config.json", Data: ts["config.json"]}
	index := func(shard string) hubtest.File {
		return hubtest.File{Name: "model.safetensors.index.json",
			Data: []byte(`{"weight_map": {"model.embed_tokens.weight": "` + shard + `"}}`)}
	}
	escape := strings.Repeat("../", 8) + "escaped"
	cases := []struct {
		name, uri string
		repo      hubtest.Repo
		fails     string // "" for a download that must land in the cache
	}{
		{"shard escapes", "hf://o/evil", hubtest.Repo{ID: "o/evil", Files: []hubtest.File{cfg, index("../../../escaped.safetensors")}}, "shard"},
		{"absolute shard", "hf://o/evil", hubtest.Repo{ID: "o/evil", Files: []hubtest.File{cfg, index("/tmp/escaped.safetensors")}}, "shard"},
		{"commit escapes (directory)", "hf://o/evil", hubtest.Repo{ID: "o/evil", Commit: escape,
			Files: []hubtest.File{cfg, {Name: "model.safetensors", Data: ts["model.safetensors"], LFS: true}}}, ""},
		{"commit escapes (file)", "hf://o/evil/m.gguf", hubtest.Repo{ID: "o/evil", Commit: escape,
			Files: []hubtest.File{{Name: "m.gguf", Data: []byte("GGUF"), LFS: true}}}, ""},
		{"listed file escapes", "hf://o/evil", hubtest.Repo{ID: "o/evil", Files: []hubtest.File{cfg,
			{Name: "../escaped.safetensors", Data: ts["model.safetensors"], LFS: true}}}, "no .safetensors weights"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := hubtest.New(t, tc.repo)
			o := options(t, s)
			root := t.TempDir()
			o.CacheDir = filepath.Join(root, "a", "b", "c", "cache")
			got, err := Download(context.Background(), mustParse(t, tc.uri), o)
			switch {
			case tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)):
				t.Errorf("err = %v, want one mentioning %q", err, tc.fails)
			case tc.fails == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.fails == "" && !strings.HasPrefix(got, o.CacheDir+string(filepath.Separator)):
				t.Errorf("downloaded to %s, outside the cache %s", got, o.CacheDir)
			}
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && p != root && !strings.HasPrefix(o.CacheDir, p) && !strings.HasPrefix(p, o.CacheDir) {
					t.Errorf("written outside the cache: %s", p)
				}
				return nil
			})
		})
	}
}
