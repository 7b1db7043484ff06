package compute

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Dequantization of ggml tensor types to float32, bit-exact with ggml's
// reference dequantize_row_* (ggml/src/ggml-quants.c). Each kernel mirrors
// the C code's float32 operation order. Where C computes a*b + c, the Go
// code writes float32(a*b) + c: the explicit conversion forbids the compiler
// from fusing the two into one FMA (allowed by the Go spec, and done on
// arm64 and GOAMD64=v3), which would round once instead of twice.
// The legacy block types (Q4_0 … Q8_0) are here; the K-quants are in
// dequant_k.go.

// ErrUnsupportedType is returned for a tensor type troupe cannot dequantize.
var ErrUnsupportedType = errors.New("unsupported tensor type")

// Dequantize decodes len(dst) values of type t from src into dst. len(dst)
// must be a whole number of t's blocks and len(src) exactly the bytes those
// blocks take (t.RowSize(len(dst))); otherwise it returns an error and
// leaves dst untouched.
func Dequantize(t DType, src []byte, dst []float32) error {
	kernel := dequantizer(t)
	if kernel == nil {
		return fmt.Errorf("dequantize %s: %w", t, ErrUnsupportedType)
	}
	want, err := t.RowSize(len(dst))
	if err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	if len(src) != want {
		return fmt.Errorf("dequantize %s: %d values need %d bytes, got %d", t, len(dst), want, len(src))
	}
	kernel(src, dst)
	return nil
}

// DequantizeRow decodes row i of t (t.Cols() values) into dst, which must
// hold exactly t.Cols() values.
func DequantizeRow(t *Tensor, i int, dst []float32) error {
	if dequantizer(t.Type) == nil {
		return fmt.Errorf("dequantize %q (%s): %w", t.Name, t.Type, ErrUnsupportedType)
	}
	if len(t.Shape) == 0 {
		return fmt.Errorf("dequantize %q: tensor has no shape", t.Name)
	}
	if i < 0 || i >= t.Rows() {
		return fmt.Errorf("dequantize %q: row %d out of range [0, %d)", t.Name, i, t.Rows())
	}
	if len(dst) != t.Cols() {
		return fmt.Errorf("dequantize %q: dst holds %d values, row has %d", t.Name, len(dst), t.Cols())
	}
	rb, err := t.Type.RowSize(t.Cols())
	if err != nil {
		return fmt.Errorf("dequantize %q: %w", t.Name, err)
	}
	if len(t.Data) < (i+1)*rb {
		return fmt.Errorf("dequantize %q: row %d ends at byte %d, data has %d", t.Name, i, (i+1)*rb, len(t.Data))
	}
	if err := Dequantize(t.Type, t.Data[i*rb:(i+1)*rb], dst); err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return nil
}

// dequantizer returns the kernel for t, or nil. A kernel may assume
// len(src) == t.RowSize(len(dst)).
func dequantizer(t DType) func(src []byte, dst []float32) {
	switch t {
	case F32:
		return dequantF32
	case F16:
		return dequantF16
	case BF16:
		return dequantBF16
	case Q4_0:
		return dequantQ4_0
	case Q4_1:
		return dequantQ4_1
	case Q5_0:
		return dequantQ5_0
	case Q5_1:
		return dequantQ5_1
	case Q8_0:
		return dequantQ8_0
	case Q2_K:
		return dequantQ2K
	case Q3_K:
		return dequantQ3K
	case Q4_K:
		return dequantQ4K
	case Q5_K:
		return dequantQ5K
	case Q6_K:
		return dequantQ6K
	case Q8_K:
		return dequantQ8K
	case IQ4_NL:
		return dequantIQ4NL
	case IQ4_XS:
		return dequantIQ4XS
	}
	return nil
}

// f16At reads the little-endian half at b[0:2] as float32.
func f16At(b []byte) float32 { return FP16ToFP32(binary.LittleEndian.Uint16(b)) }

func dequantF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func dequantF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = f16At(src[2*i:])
	}
}

func dequantBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = BF16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// Q4_0 block (18 bytes): d f16, qs[16]. Value j is (low nibble of qs[j]) − 8,
// value j+16 the high nibble − 8, each times d.
func dequantQ4_0(src []byte, dst []float32) {
	for i := range len(dst) / 32 {
		b := (*[18]byte)(src[i*18:])
		y := (*[32]float32)(dst[i*32:])
		d := f16At(b[0:])
		for j := range 16 {
			q := b[2+j]
			y[j] = float32(int(q&0x0f)-8) * d
			y[j+16] = float32(int(q>>4)-8) * d
		}
	}
}

// Q4_1 block (20 bytes): d f16, m f16, qs[16]; value = q·d + m.
func dequantQ4_1(src []byte, dst []float32) {
	for i := range len(dst) / 32 {
		b := (*[20]byte)(src[i*20:])
		y := (*[32]float32)(dst[i*32:])
		d, m := f16At(b[0:]), f16At(b[2:])
		for j := range 16 {
			q := b[4+j]
			y[j] = float32(float32(q&0x0f)*d) + m
			y[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

// Q5_0 block (22 bytes): d f16, qh u32, qs[16]. Bit j of qh is the fifth bit
// of value j; value = (q − 16)·d.
func dequantQ5_0(src []byte, dst []float32) {
	for i := range len(dst) / 32 {
		b := (*[22]byte)(src[i*22:])
		y := (*[32]float32)(dst[i*32:])
		d := f16At(b[0:])
		qh := binary.LittleEndian.Uint32(b[2:])
		for j := range 16 {
			xh0 := byte(qh>>j<<4) & 0x10
			xh1 := byte(qh>>(j+12)) & 0x10
			q := b[6+j]
			y[j] = float32(int32(q&0x0f|xh0)-16) * d
			y[j+16] = float32(int32(q>>4|xh1)-16) * d
		}
	}
}

// Q5_1 block (24 bytes): d f16, m f16, qh u32, qs[16]; value = q·d + m.
func dequantQ5_1(src []byte, dst []float32) {
	for i := range len(dst) / 32 {
		b := (*[24]byte)(src[i*24:])
		y := (*[32]float32)(dst[i*32:])
		d, m := f16At(b[0:]), f16At(b[2:])
		qh := binary.LittleEndian.Uint32(b[4:])
		for j := range 16 {
			xh0 := byte(qh>>j<<4) & 0x10
			xh1 := byte(qh>>(j+12)) & 0x10
			q := b[8+j]
			y[j] = float32(float32(q&0x0f|xh0)*d) + m
			y[j+16] = float32(float32(q>>4|xh1)*d) + m
		}
	}
}

// Q8_0 block (34 bytes): d f16, qs int8[32]; value = q·d.
func dequantQ8_0(src []byte, dst []float32) {
	for i := range len(dst) / 32 {
		b := (*[34]byte)(src[i*34:])
		y := (*[32]float32)(dst[i*32:])
		d := f16At(b[0:])
		for j := range 32 {
			y[j] = float32(int8(b[2+j])) * d
		}
	}
}
