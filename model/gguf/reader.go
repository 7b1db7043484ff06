package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrCorrupt is wrapped by every error about a malformed file.
var ErrCorrupt = errors.New("corrupt gguf")

// ValueType is the type tag of a metadata value.
type ValueType uint32

const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

// Limits that keep a corrupt header from asking for absurd allocations. They
// are far above anything a real model holds.
const (
	maxStringLen  = 64 << 20
	maxArrayLen   = 1 << 28
	maxKVCount    = 1 << 20
	maxTensors    = 1 << 20
	maxDims       = 4
	maxArrayDepth = 8
)

// cursor reads little-endian values from a byte slice with bounds checks.
type cursor struct {
	buf []byte
	off int
	err error
}

func (c *cursor) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: at byte %d: %s", ErrCorrupt, c.off, fmt.Sprintf(format, args...))
	}
}

func (c *cursor) take(n int, what string) []byte {
	if c.err != nil {
		return nil
	}
	if n < 0 || n > len(c.buf)-c.off {
		c.fail("%s: need %d bytes, %d left (file truncated?)", what, n, len(c.buf)-c.off)
		return nil
	}
	b := c.buf[c.off : c.off+n]
	c.off += n
	return b
}

func (c *cursor) u8(what string) uint8 {
	if b := c.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (c *cursor) u16(what string) uint16 {
	if b := c.take(2, what); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (c *cursor) u32(what string) uint32 {
	if b := c.take(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (c *cursor) u64(what string) uint64 {
	if b := c.take(8, what); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// count reads a length: u64 in v2/v3 (v1, with u32 lengths, is not supported).
func (c *cursor) count(what string, max uint64) int {
	n := c.u64(what)
	if c.err == nil && n > max {
		c.fail("%s: %d exceeds the limit %d", what, n, max)
		return 0
	}
	return int(n)
}

func (c *cursor) str(what string) string {
	n := c.count(what+" length", maxStringLen)
	return string(c.take(n, what))
}

// value reads one metadata value of type t. Arrays become typed slices
// ([]uint8 … []float64, []bool, []string); arrays of arrays become []any.
func (c *cursor) value(t ValueType, depth int) any {
	switch t {
	case TypeUint8:
		return c.u8("uint8")
	case TypeInt8:
		return int8(c.u8("int8"))
	case TypeUint16:
		return c.u16("uint16")
	case TypeInt16:
		return int16(c.u16("int16"))
	case TypeUint32:
		return c.u32("uint32")
	case TypeInt32:
		return int32(c.u32("int32"))
	case TypeUint64:
		return c.u64("uint64")
	case TypeInt64:
		return int64(c.u64("int64"))
	case TypeFloat32:
		return math.Float32frombits(c.u32("float32"))
	case TypeFloat64:
		return math.Float64frombits(c.u64("float64"))
	case TypeBool:
		b := c.u8("bool")
		if c.err == nil && b > 1 {
			c.fail("bool value %d", b)
		}
		return b == 1
	case TypeString:
		return c.str("string")
	case TypeArray:
		if depth >= maxArrayDepth {
			c.fail("arrays nested deeper than %d", maxArrayDepth)
			return nil
		}
		et := ValueType(c.u32("array element type"))
		n := c.count("array length", maxArrayLen)
		if c.err != nil {
			return nil
		}
		return c.array(et, n, depth+1)
	default:
		c.fail("unknown value type %d", uint32(t))
		return nil
	}
}

// elemSize is the fixed size of scalar types, 0 for strings and arrays.
func elemSize(t ValueType) int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

func (c *cursor) array(et ValueType, n int, depth int) any {
	// A fixed-size array must fit in what is left before we allocate it.
	if sz := elemSize(et); sz > 0 && n > (len(c.buf)-c.off)/sz {
		c.fail("array of %d %d-byte values runs past the end of the file", n, sz)
		return nil
	}
	switch et {
	case TypeUint8:
		return collect(c, n, func() uint8 { return c.u8("uint8") })
	case TypeInt8:
		return collect(c, n, func() int8 { return int8(c.u8("int8")) })
	case TypeUint16:
		return collect(c, n, func() uint16 { return c.u16("uint16") })
	case TypeInt16:
		return collect(c, n, func() int16 { return int16(c.u16("int16")) })
	case TypeUint32:
		return collect(c, n, func() uint32 { return c.u32("uint32") })
	case TypeInt32:
		return collect(c, n, func() int32 { return int32(c.u32("int32")) })
	case TypeUint64:
		return collect(c, n, func() uint64 { return c.u64("uint64") })
	case TypeInt64:
		return collect(c, n, func() int64 { return int64(c.u64("int64")) })
	case TypeFloat32:
		return collect(c, n, func() float32 { return math.Float32frombits(c.u32("float32")) })
	case TypeFloat64:
		return collect(c, n, func() float64 { return math.Float64frombits(c.u64("float64")) })
	case TypeBool:
		return collect(c, n, func() bool { return c.value(TypeBool, depth) == true })
	case TypeString:
		// Each string takes at least its 8-byte length.
		if n > (len(c.buf)-c.off)/8 {
			c.fail("array of %d strings runs past the end of the file", n)
			return nil
		}
		return collect(c, n, func() string { return c.str("string") })
	case TypeArray:
		if n > (len(c.buf)-c.off)/12 {
			c.fail("array of %d arrays runs past the end of the file", n)
			return nil
		}
		return collect(c, n, func() any { return c.value(TypeArray, depth) })
	default:
		c.fail("unknown array element type %d", uint32(et))
		return nil
	}
}

func collect[T any](c *cursor, n int, read func() T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = read()
		if c.err != nil {
			return nil
		}
	}
	return out
}
