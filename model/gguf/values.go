package gguf

import "math"

// String returns a string value.
func (f *File) String(key string) (string, bool) {
	s, ok := f.kv[key].(string)
	return s, ok
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) {
	b, ok := f.kv[key].(bool)
	return b, ok
}

// Uint returns an integer value that is not negative, whatever its width.
func (f *File) Uint(key string) (uint64, bool) { return asUint(f.kv[key]) }

// Int returns an integer value, whatever its width (uint64 values above
// math.MaxInt64 are refused).
func (f *File) Int(key string) (int64, bool) { return asInt(f.kv[key]) }

// Float returns a float value; integer values convert.
func (f *File) Float(key string) (float64, bool) {
	switch v := f.kv[key].(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	case uint64:
		return float64(v), true
	}
	if i, ok := asInt(f.kv[key]); ok {
		return float64(i), true
	}
	return 0, false
}

// Strings returns an array of strings. Slices returned by the getters are
// the File's own: callers must not modify them.
func (f *File) Strings(key string) ([]string, bool) {
	s, ok := f.kv[key].([]string)
	return s, ok
}

// Float32s returns an array of float32 values (float64 arrays convert).
func (f *File) Float32s(key string) ([]float32, bool) {
	switch v := f.kv[key].(type) {
	case []float32:
		return v, true
	case []float64:
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out, true
	}
	return nil, false
}

// Int32s returns an integer array of any width as int32 values; it fails when
// a value does not fit.
func (f *File) Int32s(key string) ([]int32, bool) {
	var out []int32
	conv := func(n int, at func(int) (int64, bool)) bool {
		out = make([]int32, n)
		for i := range out {
			x, ok := at(i)
			if !ok || x < math.MinInt32 || x > math.MaxInt32 {
				return false
			}
			out[i] = int32(x)
		}
		return true
	}
	var ok bool
	switch v := f.kv[key].(type) {
	case []int32:
		return v, true
	case []uint8:
		ok = conv(len(v), func(i int) (int64, bool) { return int64(v[i]), true })
	case []int8:
		ok = conv(len(v), func(i int) (int64, bool) { return int64(v[i]), true })
	case []uint16:
		ok = conv(len(v), func(i int) (int64, bool) { return int64(v[i]), true })
	case []int16:
		ok = conv(len(v), func(i int) (int64, bool) { return int64(v[i]), true })
	case []uint32:
		ok = conv(len(v), func(i int) (int64, bool) { return int64(v[i]), true })
	case []int64:
		ok = conv(len(v), func(i int) (int64, bool) { return v[i], true })
	case []uint64:
		ok = conv(len(v), func(i int) (int64, bool) { return int64(v[i]), v[i] <= math.MaxInt64 })
	}
	if !ok {
		return nil, false
	}
	return out, true
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

func asUint(v any) (uint64, bool) {
	if x, ok := v.(uint64); ok {
		return x, true
	}
	i, ok := asInt(v)
	if !ok || i < 0 {
		return 0, false
	}
	return uint64(i), true
}
