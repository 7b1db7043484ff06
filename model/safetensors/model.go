package safetensors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
)

var (
	// ErrNotFound is wrapped by Tensor and Info for a name the model lacks.
	ErrNotFound = errors.New("tensor not found")
	// ErrUnsupportedDType is wrapped by Tensor for a dtype with no compute type.
	ErrUnsupportedDType = errors.New("unsupported dtype")
	// ErrClosed is wrapped by Tensor after Close.
	ErrClosed = errors.New("model closed")
)

// computeTypes maps the safetensors dtypes troupe computes with.
var computeTypes = map[string]compute.DType{
	"F32":  compute.F32,
	"F16":  compute.F16,
	"BF16": compute.BF16,
}

// Model is an opened model directory: its memory-mapped weight files and,
// when present, its config.json.
type Model struct {
	dir     string
	files   []*mappedFile
	tensors map[string]*entry
	aliases map[string]string // alias name -> stored tensor name
	config  *Config
	closed  atomic.Bool
}

// mappedFile is one .safetensors file mapped read-only.
type mappedFile struct {
	path string
	data []byte // the whole file
}

// TensorInfo describes a stored tensor as its header does.
type TensorInfo struct {
	Name  string  // stored name (an alias resolves to its target)
	DType string  // safetensors dtype: "F32", "BF16", "I8", ...
	Shape []int64 // safetensors order, slowest-varying dimension first
	File  string  // base name of the file holding it
	Size  int64   // bytes
}

// Dir is the model directory.
func (m *Model) Dir() string { return m.dir }

// Config is the parsed config.json, or nil when the directory has none.
func (m *Model) Config() *Config { return m.config }

// ReadFile returns the bytes of a file in the model directory, such as
// "tokenizer.json", "tokenizer_config.json" or "generation_config.json".
// A missing file is an error wrapping fs.ErrNotExist.
func (m *Model) ReadFile(name string) ([]byte, error) {
	if !filepath.IsLocal(name) {
		return nil, fmt.Errorf("safetensors: %q is not a file inside the model directory", name)
	}
	return os.ReadFile(filepath.Join(m.dir, name))
}

// Names returns the stored tensor names, sorted. Aliases are not included.
func (m *Model) Names() []string {
	names := make([]string, 0, len(m.tensors))
	for name := range m.tensors {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Aliases returns a copy of the alias table: a name that is not stored maps
// to the stored tensor it shares data with (for tied embeddings,
// "model.embed_tokens.weight" -> "lm_head.weight" or the reverse).
func (m *Model) Aliases() map[string]string {
	out := make(map[string]string, len(m.aliases))
	for k, v := range m.aliases {
		out[k] = v
	}
	return out
}

// Has reports whether Tensor would find name (stored or alias).
func (m *Model) Has(name string) bool { return m.lookup(name) != nil }

func (m *Model) lookup(name string) *entry {
	if e, ok := m.tensors[name]; ok {
		return e
	}
	if target, ok := m.aliases[name]; ok {
		return m.tensors[target]
	}
	return nil
}

// Info describes the tensor called name (stored or alias), whatever its dtype.
func (m *Model) Info(name string) (TensorInfo, error) {
	e := m.lookup(name)
	if e == nil {
		return TensorInfo{}, fmt.Errorf("safetensors: tensor %q: %w", name, ErrNotFound)
	}
	return TensorInfo{
		Name:  e.name,
		DType: e.dtype,
		Shape: slices.Clone(e.shape),
		File:  filepath.Base(e.file.path),
		Size:  int64(e.end - e.begin),
	}, nil
}

// Tensor returns the tensor called name (stored or alias) as a view of the
// mapped file: Name is the name asked for, Shape is the safetensors shape
// reversed (ggml order; a scalar becomes [1]), Data is valid until Close and
// aligned to the element size (a tensor the file leaves unaligned is copied).
// Callers must not write to Data. Dtypes other than F32, F16 and BF16 give an
// error wrapping ErrUnsupportedDType.
func (m *Model) Tensor(name string) (*compute.Tensor, error) {
	if m.closed.Load() {
		return nil, fmt.Errorf("safetensors: tensor %q: %w", name, ErrClosed)
	}
	e := m.lookup(name)
	if e == nil {
		return nil, fmt.Errorf("safetensors: tensor %q: %w", name, ErrNotFound)
	}
	typ, ok := computeTypes[e.dtype]
	if !ok {
		return nil, fmt.Errorf("safetensors: tensor %q in %s: dtype %s: %w (want F32, F16 or BF16)",
			name, e.file.path, e.dtype, ErrUnsupportedDType)
	}
	shape := make([]int, len(e.shape))
	for i, d := range e.shape {
		shape[len(shape)-1-i] = int(d)
	}
	if len(shape) == 0 {
		shape = []int{1}
	}
	return &compute.Tensor{
		Name:  name,
		Type:  typ,
		Shape: shape,
		Data:  aligned(e.file.data[e.begin:e.end:e.end], typ.TypeSize()),
	}, nil
}

// aligned returns b, or a copy of b in fresh memory when b does not start on
// a multiple of align bytes, so that callers may view Data as []float32 or
// []uint16. Files written by the safetensors library are always aligned.
func aligned(b []byte, align int) []byte {
	if len(b) == 0 || uintptr(unsafe.Pointer(&b[0]))%uintptr(align) == 0 {
		return b
	}
	words := make([]uint64, (len(b)+7)/8)
	c := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(b))
	copy(c, b)
	return c
}

// Close unmaps every file. Tensor data obtained earlier must not be used
// afterwards. Close is idempotent.
func (m *Model) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	return unmapAll(m.files)
}

func unmapAll(files []*mappedFile) error {
	var errs []error
	for _, f := range files {
		if err := unmapFile(f.data); err != nil {
			errs = append(errs, fmt.Errorf("safetensors: unmap %s: %w", f.path, err))
		}
		f.data = nil
	}
	return errors.Join(errs...)
}
