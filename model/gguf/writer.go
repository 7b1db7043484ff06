package gguf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/troupe-llm/troupe/compute"
)

// Writer builds a GGUF image the way ggml's gguf writer lays it out: header,
// metadata in insertion order, tensor infos, padding to the alignment, then
// each tensor's data padded to the alignment. A file without tensors ends
// right after the tensor infos, like llama.cpp's vocab-only files.
//
// Tensor data is not copied: AddTensor keeps the slice and AddTensorFunc a
// function called during WriteTo, so a large synthetic model can be streamed.
// The first invalid SetKV or SetAlignment, or a tensor NewWriterFrom could
// not copy, is reported by WriteTo.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	version uint32
	keys    []string
	kv      map[string]any
	tensors []pendingTensor
	byName  map[string]bool
	err     error // first SetKV / SetAlignment / NewWriterFrom error
}

type pendingTensor struct {
	info  TensorInfo // Offset is assigned by WriteTo
	write func(io.Writer) error
}

// NewWriter returns an empty Writer for GGUF version 2 or 3 (on a
// little-endian file the two layouts are the same).
func NewWriter(version uint32) *Writer {
	w := &Writer{version: version, kv: map[string]any{}, byName: map[string]bool{}}
	if version != 2 && version != 3 {
		w.err = fmt.Errorf("gguf: cannot write version %d (2 or 3)", version)
	}
	return w
}

// NewWriterFrom returns a Writer holding f's metadata, in f's order, and
// its tensors; writing it gives f's bytes back. The tensor data is f's
// mapping, not a copy: keep f open until the Writer is written. A tensor it
// cannot copy is reported by WriteTo.
func NewWriterFrom(f *File) *Writer {
	w := NewWriter(f.Version)
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		w.SetKV(k, v)
	}
	for _, info := range f.Tensors() {
		tn, err := f.Tensor(info.Name)
		if err == nil {
			err = w.AddTensor(info.Name, info.Type, info.Shape, tn.Data)
		}
		if err != nil && w.err == nil {
			w.err = err
		}
	}
	return w
}

// SetKV sets metadata key to value. Value is one of the types File.Value
// returns: uint8 … uint64, int8 … int64, float32, float64, bool, string, a
// slice of one of those, or []any whose elements are themselves such slices
// (an array of arrays). Setting a key again replaces its value in place.
// Slices are not copied: do not change them before WriteTo.
func (w *Writer) SetKV(key string, value any) {
	if _, err := valueTypeOf(value); err != nil {
		if w.err == nil {
			w.err = fmt.Errorf("gguf: metadata %q: %w", key, err)
		}
		return
	}
	if _, ok := w.kv[key]; !ok {
		w.keys = append(w.keys, key)
	}
	w.kv[key] = value
}

// SetAlignment sets general.alignment (a uint32, as ggml writes it), the
// alignment of the data section and of every tensor in it. The default is 32.
func (w *Writer) SetAlignment(n int) {
	if n <= 0 || n&(n-1) != 0 || n > 1<<20 {
		if w.err == nil {
			w.err = fmt.Errorf("gguf: alignment %d is not a power of two up to 1 MiB", n)
		}
		return
	}
	w.SetKV("general.alignment", uint32(n))
}

// AddTensor appends a tensor of type typ and shape (ggml order, Shape[0] is
// the row length); data must hold exactly its bytes and is not copied.
func (w *Writer) AddTensor(name string, typ compute.DType, shape []int, data []byte) error {
	info, err := w.tensorInfo(name, typ, shape)
	if err != nil {
		return err
	}
	if uint64(len(data)) != info.Size {
		return fmt.Errorf("gguf: tensor %q: %d bytes of data, want %d for %s %v", name, len(data), info.Size, typ, shape)
	}
	w.add(info, func(out io.Writer) error { _, err := out.Write(data); return err })
	return nil
}

// AddTensorFunc appends a tensor whose data write produces during WriteTo;
// write must write exactly the tensor's size (type and shape decide it).
func (w *Writer) AddTensorFunc(name string, typ compute.DType, shape []int, write func(io.Writer) error) error {
	info, err := w.tensorInfo(name, typ, shape)
	if err != nil {
		return err
	}
	w.add(info, write)
	return nil
}

func (w *Writer) add(info TensorInfo, write func(io.Writer) error) {
	w.byName[info.Name] = true
	w.tensors = append(w.tensors, pendingTensor{info: info, write: write})
}

// tensorInfo checks a tensor the way the reader will and computes its size.
func (w *Writer) tensorInfo(name string, typ compute.DType, shape []int) (TensorInfo, error) {
	if w.byName[name] {
		return TensorInfo{}, fmt.Errorf("gguf: duplicate tensor %q", name)
	}
	if len(shape) < 1 || len(shape) > maxDims {
		return TensorInfo{}, fmt.Errorf("gguf: tensor %q has %d dimensions (1 to %d)", name, len(shape), maxDims)
	}
	elems := uint64(1)
	for _, d := range shape {
		// The reader's limits: dimensions of 1 to 2^40, at most 2^42 values.
		if d < 1 || d > 1<<40 || uint64(d) > 1<<42/elems {
			return TensorInfo{}, fmt.Errorf("gguf: tensor %q: dimension %d in shape %v", name, d, shape)
		}
		elems *= uint64(d)
	}
	rowBytes, err := typ.RowSize(shape[0])
	if err != nil {
		return TensorInfo{}, fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	return TensorInfo{Name: name, Type: typ, Shape: append([]int(nil), shape...), Size: uint64(rowBytes) * (elems / uint64(shape[0]))}, nil
}

// Parse writes the image into memory and reads it back as Parse does,
// under name.
func (w *Writer) Parse(name string) (*File, error) {
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, err
	}
	return Parse(name, buf.Bytes())
}

// WriteFile writes the image to a new file at path (replacing one there).
func (w *Writer) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteTo writes the image to out and returns the number of bytes written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	align := uint64(32)
	if v, ok := w.kv["general.alignment"]; ok {
		a, ok := asUint(v)
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<20 {
			return 0, fmt.Errorf("gguf: general.alignment %v is not a power of two up to 1 MiB", v)
		}
		align = a
	}
	cw := &countWriter{w: out}
	e := &encoder{w: bufio.NewWriterSize(cw, 64<<10)}

	e.u32(magic)
	e.u32(w.version)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.keys)))
	for _, k := range w.keys {
		v := w.kv[k]
		t, _ := valueTypeOf(v)
		e.str(k)
		e.u32(uint32(t))
		e.value(v)
	}
	offset := uint64(0)
	for _, t := range w.tensors {
		e.str(t.info.Name)
		e.u32(uint32(len(t.info.Shape)))
		for _, d := range t.info.Shape {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.info.Type))
		e.u64(offset)
		offset = alignUp64(offset+t.info.Size, align)
	}
	if len(w.tensors) > 0 {
		e.pad(align)
	}
	for _, t := range w.tensors {
		if e.err != nil {
			break
		}
		start := e.n
		if err := t.write(e); err != nil && e.err == nil {
			e.err = fmt.Errorf("gguf: tensor %q: %w", t.info.Name, err)
		}
		if got := e.n - start; e.err == nil && got != t.info.Size {
			e.err = fmt.Errorf("gguf: tensor %q: wrote %d bytes, want %d", t.info.Name, got, t.info.Size)
		}
		e.pad(align)
	}
	if err := e.w.Flush(); err != nil && e.err == nil {
		e.err = err
	}
	return cw.n, e.err
}

func alignUp64(n, a uint64) uint64 { return (n + a - 1) / a * a }

// valueTypeOf returns the GGUF type tag of a metadata value.
func valueTypeOf(v any) (ValueType, error) {
	switch v := v.(type) {
	case uint8:
		return TypeUint8, nil
	case int8:
		return TypeInt8, nil
	case uint16:
		return TypeUint16, nil
	case int16:
		return TypeInt16, nil
	case uint32:
		return TypeUint32, nil
	case int32:
		return TypeInt32, nil
	case uint64:
		return TypeUint64, nil
	case int64:
		return TypeInt64, nil
	case float32:
		return TypeFloat32, nil
	case float64:
		return TypeFloat64, nil
	case bool:
		return TypeBool, nil
	case string:
		return TypeString, nil
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []uint64, []int64,
		[]float32, []float64, []bool, []string:
		return TypeArray, nil
	case []any:
		for i, x := range v {
			if t, err := valueTypeOf(x); err != nil {
				return 0, err
			} else if t != TypeArray {
				return 0, fmt.Errorf("element %d of an array of arrays is a %T", i, x)
			}
		}
		return TypeArray, nil
	}
	return 0, fmt.Errorf("unsupported value type %T", v)
}

// encoder writes little-endian values, keeping the first error and a count.
type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
	buf [8]byte
}

func (e *encoder) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.n += uint64(n)
	e.err = err
	return n, err
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], v)
	_, _ = e.Write(e.buf[:4])
}
func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	_, _ = e.Write(e.buf[:8])
}
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		n, err := e.w.WriteString(s)
		e.n += uint64(n)
		e.err = err
	}
}

func (e *encoder) pad(align uint64) {
	var zeros [64]byte
	for n := alignUp64(e.n, align) - e.n; n > 0 && e.err == nil; {
		k := min(n, uint64(len(zeros)))
		_, _ = e.Write(zeros[:k])
		n -= k
	}
}

// value writes the payload of v (its type tag is written by the caller).
func (e *encoder) value(v any) {
	switch v := v.(type) {
	case uint8, int8, uint16, int16, uint32, int32, uint64, int64, float32, float64, bool:
		if e.err == nil { // little endian, a bool as one byte (0 or 1)
			e.err = binary.Write(e, binary.LittleEndian, v)
		}
	case string:
		e.str(v)
	case []uint8:
		e.fixed(TypeUint8, len(v), v)
	case []int8:
		e.fixed(TypeInt8, len(v), v)
	case []uint16:
		e.fixed(TypeUint16, len(v), v)
	case []int16:
		e.fixed(TypeInt16, len(v), v)
	case []uint32:
		e.fixed(TypeUint32, len(v), v)
	case []int32:
		e.fixed(TypeInt32, len(v), v)
	case []uint64:
		e.fixed(TypeUint64, len(v), v)
	case []int64:
		e.fixed(TypeInt64, len(v), v)
	case []float32:
		e.fixed(TypeFloat32, len(v), v)
	case []float64:
		e.fixed(TypeFloat64, len(v), v)
	case []bool:
		e.fixed(TypeBool, len(v), v)
	case []string:
		arrayOf(e, TypeString, v)
	case []any:
		arrayOf(e, TypeArray, v)
	}
}

// fixed writes an array of fixed-size values (bools as one byte, 0 or 1).
func (e *encoder) fixed(et ValueType, n int, v any) {
	e.u32(uint32(et))
	e.u64(uint64(n))
	if e.err == nil {
		e.err = binary.Write(e, binary.LittleEndian, v)
	}
}

// arrayOf writes an array body: element type, length, elements (an element
// array writes its own type and length).
func arrayOf[T any](e *encoder, et ValueType, v []T) {
	e.u32(uint32(et))
	e.u64(uint64(len(v)))
	for _, x := range v {
		e.value(x)
	}
}

// countWriter counts the bytes that reached w.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
