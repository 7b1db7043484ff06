package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

const (
	singleFile = "model.safetensors"
	indexFile  = "model.safetensors.index.json"
)

// Open opens a Hugging Face model directory. The weights are found, in order
// of preference, through model.safetensors.index.json (sharded checkpoints),
// in model.safetensors, or in every *.safetensors file of the directory. path
// may also name a single .safetensors file. config.json is parsed with
// ReadConfig when present.
func Open(path string) (*Model, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	dir, files, weightMap := path, []string(nil), map[string]string(nil)
	if st.IsDir() {
		files, weightMap, err = findWeights(dir)
		if err != nil {
			return nil, err
		}
	} else {
		dir, files = filepath.Dir(path), []string{filepath.Base(path)}
	}

	m := &Model{dir: dir, tensors: map[string]*entry{}, aliases: map[string]string{}}
	if err := m.load(files, weightMap); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// load maps files, checks them against the index's weight map (nil without
// an index), collects aliases and reads config.json.
func (m *Model) load(files []string, weightMap map[string]string) error {
	var metas []map[string]string
	for _, name := range files {
		f, h, err := openFile(filepath.Join(m.dir, name))
		if err != nil {
			return err
		}
		m.files = append(m.files, f)
		for _, e := range h.tensors {
			if prev, dup := m.tensors[e.name]; dup {
				return fmt.Errorf("safetensors: tensor %q is in both %s and %s", e.name, prev.file.path, f.path)
			}
			e.file = f
			m.tensors[e.name] = e
		}
		metas = append(metas, h.metadata)
	}
	if err := checkWeightMap(m, weightMap); err != nil {
		return err
	}
	for _, meta := range metas {
		m.addAliases(meta)
	}
	var err error
	if m.config, err = ReadConfig(m.dir); errors.Is(err, fs.ErrNotExist) {
		m.config = nil
	} else if err != nil {
		return err
	}
	return nil
}

// findWeights lists the weight files of dir and, for a sharded checkpoint,
// the index's weight map.
func findWeights(dir string) (files []string, weightMap map[string]string, err error) {
	index := filepath.Join(dir, indexFile)
	if _, err := os.Stat(index); err == nil {
		return readIndex(index)
	}
	if _, err := os.Stat(filepath.Join(dir, singleFile)); err == nil {
		return []string{singleFile}, nil, nil
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.safetensors")) // the pattern is valid
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("safetensors: %s: no %s, %s or *.safetensors file", dir, indexFile, singleFile)
	}
	for _, p := range paths {
		files = append(files, filepath.Base(p))
	}
	return files, nil, nil
}

// readIndex parses a model.safetensors.index.json and returns the shard
// files it names, sorted, and its weight map.
func readIndex(path string) ([]string, map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &index); err != nil {
		return nil, nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("safetensors: %s: empty or missing weight_map", path)
	}
	dir := filepath.Dir(path)
	var files []string
	for tensor, file := range index.WeightMap {
		if !filepath.IsLocal(file) {
			return nil, nil, fmt.Errorf("safetensors: %s: tensor %q maps to %q, which is not a file in the directory", path, tensor, file)
		}
		if slices.Contains(files, file) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
			return nil, nil, fmt.Errorf("safetensors: %s: tensor %q maps to missing shard: %w", path, tensor, err)
		}
		files = append(files, file)
	}
	slices.Sort(files)
	return files, index.WeightMap, nil
}

// checkWeightMap verifies that every tensor the index names is in the shard
// the index says. Tensors the index does not name are kept.
func checkWeightMap(m *Model, weightMap map[string]string) error {
	for name, file := range weightMap {
		e, ok := m.tensors[name]
		if !ok {
			return fmt.Errorf("safetensors: %s maps tensor %q to %s, which does not hold it", indexFile, name, file)
		}
		if filepath.Base(e.file.path) != filepath.Base(file) {
			return fmt.Errorf("safetensors: %s maps tensor %q to %s, but it is in %s", indexFile, name, file, e.file.path)
		}
	}
	return nil
}

// addAliases reads tied-weight aliases from a header's __metadata__, written
// as {"model.embed_tokens.weight": "lm_head.weight"} when only lm_head.weight
// is stored. An entry whose one side is stored and whose other is not makes
// the other an alias, in either direction. Other entries ("format": "pt")
// are ignored; the first alias for a name wins.
func (m *Model) addAliases(meta map[string]string) {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := meta[k]
		_, kStored := m.tensors[k]
		_, vStored := m.tensors[v]
		alias, target := k, v
		switch {
		case vStored && !kStored:
		case kStored && !vStored:
			alias, target = v, k
		default:
			continue
		}
		if _, taken := m.aliases[alias]; !taken && alias != "" {
			m.aliases[alias] = target
		}
	}
}

// openFile maps one .safetensors file and parses its header.
func openFile(path string) (*mappedFile, *header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("safetensors: %s: not a regular file", path)
	}
	if st.Size() < 8 {
		return nil, nil, fmt.Errorf("safetensors: %s: file is %d bytes, too short for the 8-byte header length", path, st.Size())
	}
	if int64(int(st.Size())) != st.Size() {
		return nil, nil, fmt.Errorf("safetensors: %s: file of %d bytes is too large to map", path, st.Size())
	}
	data, err := mapFile(f, int(st.Size()))
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: mmap %s: %w", path, err)
	}
	h, err := parseHeader(data)
	if err != nil {
		unmapFile(data)
		return nil, nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return &mappedFile{path: path, data: data}, h, nil
}
