package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Python's values as templates see them. gonja decides truthiness, `not`, and
// whether a value is nil from its Go kind, so each Python type has a Go type
// on which gonja agrees with Python:
//
//	str        string; jinja2's Markup (the result of |safe) is markup
//	int, float int, float64 (bool is bool)
//	None       (*noneType)(nil): nil to gonja, so falsy and `is none`, yet
//	           "None" when printed
//	Undefined  Go nil, an invalid reflect.Value: what gonja yields for a
//	           missing name, and what our lookups yield for a missing key
//	list       list, tuple; the generator that map, select and friends return
//	           is generator, which tojson and |length refuse as Python does
//	dict       dict: a Go map, so that an empty dict is falsy, whose keys
//	           carry their insertion order
//	namespace  *namespace
type (
	noneType  struct{}
	markup    string
	list      []any
	tuple     []any
	generator []any
	dict      map[dictKey]any
	namespace struct {
		keys []string
		vals map[string]any
	}
)

// none is Python's None.
var none *noneType

func (*noneType) String() string { return "None" }

// dictKey is a dict key with its insertion position.
type dictKey struct {
	pos int
	key any // string, int, float64 or bool
}

func (k dictKey) String() string { return pyStr(k.key) }

// set adds key or replaces its value, keeping its first position.
func (d dict) set(key, val any) {
	for k := range d {
		if pyEqual(k.key, key) {
			d[k] = val
			return
		}
	}
	d[dictKey{pos: len(d), key: key}] = val
}

func (d dict) lookup(key any) (any, bool) {
	for k, v := range d {
		if pyEqual(k.key, key) {
			return v, true
		}
	}
	return nil, false
}

// keys returns the keys in insertion order.
func (d dict) keys() []any {
	ks := make([]dictKey, 0, len(d))
	for k := range d {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].pos < ks[j].pos })
	out := make([]any, len(ks))
	for i, k := range ks {
		out[i] = k.key
	}
	return out
}

// GetItem and GetAttribute give gonja's own filters (groupby, sort…) the
// lookups of our getitem and getattr.
func (d dict) GetItem(key any) (*exec.Value, bool)          { return found(getitem(d, unwrap(key))) }
func (d dict) GetAttribute(name string) (*exec.Value, bool) { return found(getattr(d, name)) }
func (l list) GetItem(key any) (*exec.Value, bool)          { return found(getitem(l, unwrap(key))) }
func (l list) GetAttribute(name string) (*exec.Value, bool) { return found(getattr(l, name)) }
func (n *namespace) GetAttribute(name string) (*exec.Value, bool) {
	return found(getattr(n, name))
}

func found(v any, err error) (*exec.Value, bool) {
	if err != nil {
		return exec.AsValue(err), false
	}
	return exec.AsValue(v), v != nil
}

func (n *namespace) set(name string, v any) {
	if _, ok := n.vals[name]; !ok {
		n.keys = append(n.keys, name)
	}
	n.vals[name] = v
}

// unwrap returns the Go value a gonja value holds, nil for Undefined.
func unwrap(x any) any {
	for {
		v, ok := x.(*exec.Value)
		if !ok {
			break
		}
		if v == nil || !v.Val.IsValid() {
			return nil
		}
		if !v.Val.CanInterface() {
			return nil
		}
		x = v.Val.Interface()
	}
	if rv, ok := x.(reflect.Value); ok {
		if !rv.IsValid() || !rv.CanInterface() {
			return nil
		}
		return unwrap(rv.Interface())
	}
	return x
}

// toPy turns a Go value given by a caller (Options.Tools, Options.Extra) into
// a template value. json.RawMessage is decoded with its key order kept; a Go
// map has none, so its keys are sorted.
func toPy(x any) (any, error) {
	switch x := x.(type) {
	case nil:
		return none, nil
	case json.RawMessage:
		return decodeJSON(x)
	case json.Number:
		return jsonNumber(x)
	case string, bool, int, float64, dict, list, markup:
		return x, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := make(dict, len(x))
		for _, k := range keys {
			v, err := toPy(x[k])
			if err != nil {
				return nil, err
			}
			d.set(k, v)
		}
		return d, nil
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int(rv.Uint()), nil
	case reflect.Float32:
		return rv.Float(), nil
	case reflect.Slice, reflect.Array:
		l := make(list, rv.Len())
		for i := range l {
			v, err := toPy(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	}
	return nil, fmt.Errorf("chat: unsupported template value of type %T", x)
}

// decodeJSON decodes a JSON document into template values, keeping each
// object's key order and each number's kind (int or float), as Python's
// json.loads does.
func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d)
	if err != nil {
		return nil, fmt.Errorf("chat: decode JSON: %w", err)
	}
	return v, nil
}

func decodeValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			l := list{}
			for d.More() {
				v, err := decodeValue(d)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := d.Token()
			return l, err
		}
		obj := dict{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			obj.set(k.(string), v)
		}
		_, err := d.Token()
		return obj, err
	case json.Number:
		return jsonNumber(t)
	case nil:
		return none, nil
	default: // string, bool
		return t, nil
	}
}

func jsonNumber(n json.Number) (any, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return int(i), nil
	}
	return strconv.ParseFloat(string(n), 64)
}
