package gguf

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
	"golang.org/x/sys/unix"
)

// ErrNotFound is wrapped by lookups of a tensor the file does not hold.
var ErrNotFound = errors.New("not found")

const magic = 0x46554747 // "GGUF" little-endian

// TensorInfo describes one tensor: its type, shape in ggml order (Shape[0] is
// the row length) and where its data lies, relative to the data section.
type TensorInfo struct {
	Name   string
	Type   compute.DType
	Shape  []int
	Offset uint64 // from the start of the data section
	Size   uint64 // bytes
}

// File is an open GGUF file.
type File struct {
	Path      string
	Version   uint32
	Alignment int

	keys     []string
	kv       map[string]any
	tensors  []TensorInfo
	byName   map[string]int
	mapped   []byte // the whole file, memory-mapped; nil for an empty file
	dataOff  int    // start of the tensor data section
	borrowed []byte // the image given to Parse
}

// Open memory-maps path and parses its header. The tensor data is not read.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("gguf: %s is a directory", path)
	}
	size := st.Size()
	var data []byte
	if size > 0 {
		if size != int64(int(size)) {
			return nil, fmt.Errorf("gguf: %s: file too large to map", path)
		}
		data, err = syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			return nil, fmt.Errorf("gguf: mmap %s: %w", path, err)
		}
	}
	f, err := parse(path, data)
	if err != nil {
		if data != nil {
			_ = syscall.Munmap(data)
		}
		return nil, err
	}
	return f, nil
}

// Parse reads a GGUF image held in memory (as Open does with a mapped file).
// The File refers to data; Close is a no-op for it.
func Parse(name string, data []byte) (*File, error) {
	f, err := parse(name, data)
	if f != nil {
		f.mapped = nil // not ours to unmap
		f.borrowed = data
	}
	return f, err
}

func parse(path string, data []byte) (*File, error) {
	c := &cursor{buf: data}
	if m := c.u32("magic"); c.err == nil && m != magic {
		return nil, fmt.Errorf("gguf: %s: %w: not a GGUF file (magic %#08x)", path, ErrCorrupt, m)
	}
	f := &File{Path: path, Alignment: 32, kv: map[string]any{}, byName: map[string]int{}, mapped: data}
	f.Version = c.u32("version")
	if c.err == nil && f.Version != 2 && f.Version != 3 {
		return nil, fmt.Errorf("gguf: %s: unsupported version %d (troupe reads versions 2 and 3)", path, f.Version)
	}
	nTensors := c.count("tensor count", maxTensors)
	nKV := c.count("metadata count", maxKVCount)
	for i := 0; i < nKV && c.err == nil; i++ {
		key := c.str("key")
		t := ValueType(c.u32("value type"))
		v := c.value(t, 0)
		if c.err != nil {
			c.err = fmt.Errorf("metadata %q: %w", key, c.err)
			break
		}
		if _, dup := f.kv[key]; dup {
			c.fail("duplicate metadata key %q", key)
			break
		}
		f.keys = append(f.keys, key)
		f.kv[key] = v
	}
	if c.err == nil {
		if v, ok := f.kv["general.alignment"]; ok {
			a, ok := asUint(v)
			if !ok || a == 0 || a&(a-1) != 0 || a > 1<<20 {
				c.fail("general.alignment %v is not a power of two", v)
			} else {
				f.Alignment = int(a)
			}
		}
	}
	for i := 0; i < nTensors && c.err == nil; i++ {
		f.readTensorInfo(c)
	}
	if c.err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, c.err)
	}
	f.dataOff = alignUp(c.off, f.Alignment)
	if err := f.checkTensors(); err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	return f, nil
}

func (f *File) readTensorInfo(c *cursor) {
	name := c.str("tensor name")
	nd := int(c.u32("tensor dims"))
	if c.err == nil && (nd < 1 || nd > maxDims) {
		c.fail("tensor %q has %d dimensions", name, nd)
		return
	}
	shape := make([]int, nd)
	elems := uint64(1)
	for d := range shape {
		n := c.u64("tensor dim")
		if c.err == nil && (n == 0 || n > 1<<40 || elems*n/n != elems || elems*n > 1<<42) {
			c.fail("tensor %q: dimension %d is %d", name, d, n)
			return
		}
		shape[d] = int(n)
		elems *= n
	}
	typ := compute.DType(c.u32("tensor type"))
	off := c.u64("tensor offset")
	if c.err != nil {
		return
	}
	if !typ.Known() {
		c.fail("tensor %q has unsupported type %d", name, uint32(typ))
		return
	}
	rowBytes, err := typ.RowSize(shape[0])
	if err != nil {
		c.fail("tensor %q: %v", name, err)
		return
	}
	if _, dup := f.byName[name]; dup {
		c.fail("duplicate tensor %q", name)
		return
	}
	f.byName[name] = len(f.tensors)
	f.tensors = append(f.tensors, TensorInfo{Name: name, Type: typ, Shape: shape, Offset: off,
		Size: uint64(rowBytes) * (elems / uint64(shape[0]))})
}

// checkTensors verifies every tensor lies inside the file and is aligned.
func (f *File) checkTensors() error {
	avail := uint64(0)
	if len(f.mapped) > f.dataOff {
		avail = uint64(len(f.mapped) - f.dataOff)
	}
	for _, t := range f.tensors {
		if t.Offset%uint64(f.Alignment) != 0 {
			return fmt.Errorf("%w: tensor %q offset %d is not aligned to %d", ErrCorrupt, t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > avail || t.Size > avail-t.Offset {
			return fmt.Errorf("%w: tensor %q (%d bytes at data offset %d) runs past the end of the file (%d data bytes; truncated?)",
				ErrCorrupt, t.Name, t.Size, t.Offset, avail)
		}
	}
	return nil
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// Close unmaps the file. Tensor data obtained from it must not be used after.
func (f *File) Close() error {
	if f.mapped == nil {
		return nil
	}
	err := syscall.Munmap(f.mapped)
	f.mapped = nil
	return err
}

// DropPages tells the kernel that the mapped pages wholly inside b (a slice
// of this file's mapping, such as a tensor's Data) are not needed now: they
// leave the process's resident memory, and are read from the file again if
// touched. For weights that were copied into a layout of their own. A no-op
// for a File from Parse and for b outside the mapping.
func (f *File) DropPages(b []byte) {
	if f.mapped == nil || len(b) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.mapped)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p+uintptr(len(b)) > base+uintptr(len(f.mapped)) {
		return
	}
	page := uintptr(os.Getpagesize())
	lo := (p - base + page - 1) &^ (page - 1)
	hi := (p - base + uintptr(len(b))) &^ (page - 1)
	if hi > lo {
		_ = unix.Madvise(f.mapped[lo:hi], unix.MADV_DONTNEED) // syscall has no Madvise on darwin
	}
}

// Tensors lists the tensor infos in file order.
func (f *File) Tensors() []TensorInfo { return f.tensors }

// Tensor returns a view of the named tensor's data (no copy).
func (f *File) Tensor(name string) (*compute.Tensor, error) {
	i, ok := f.byName[name]
	if !ok {
		return nil, fmt.Errorf("gguf: %s: tensor %q: %w", f.Path, name, ErrNotFound)
	}
	t := f.tensors[i]
	start := uint64(f.dataOff) + t.Offset
	buf := f.mapped
	if buf == nil {
		buf = f.borrowed
	}
	return &compute.Tensor{Name: t.Name, Type: t.Type, Shape: append([]int(nil), t.Shape...),
		Data: buf[start : start+t.Size : start+t.Size]}, nil
}

// Keys lists the metadata keys in file order.
func (f *File) Keys() []string { return f.keys }

// SortedKeys lists the metadata keys sorted.
func (f *File) SortedKeys() []string {
	k := append([]string(nil), f.keys...)
	sort.Strings(k)
	return k
}

// Value returns the raw metadata value of key.
func (f *File) Value(key string) (any, bool) {
	v, ok := f.kv[key]
	return v, ok
}
