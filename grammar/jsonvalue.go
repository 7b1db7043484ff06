package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// object is a JSON object with its keys in document order (a schema's
// property order is the order the output follows).
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

const maxJSONDepth = 128

// parseOrdered decodes JSON into nil, bool, json.Number, string, []any and
// *object values.
func parseOrdered(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := readValue(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("json: data after the top-level value")
	}
	return v, nil
}

func readValue(d *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("json: nested deeper than %d: %w", maxJSONDepth, ErrTooComplex)
	}
	t, err := d.Token()
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, fmt.Errorf("json: %w", err)
				}
				k := kt.(string)
				v, err := readValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			_, err := d.Token()
			return o, err
		case '[':
			a := []any{}
			for d.More() {
				v, err := readValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := d.Token()
			return a, err
		}
		return nil, fmt.Errorf("json: unexpected %v", t)
	}
	return t, nil
}

// encodeJSON writes v compactly, objects in their key order.
func encodeJSON(v any) string {
	var b bytes.Buffer
	var enc func(v any)
	enc = func(v any) {
		switch v := v.(type) {
		case *object:
			b.WriteByte('{')
			for i, k := range v.keys {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(jsonString(k))
				b.WriteByte(':')
				enc(v.vals[k])
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, x := range v {
				if i > 0 {
					b.WriteByte(',')
				}
				enc(x)
			}
			b.WriteByte(']')
		case string:
			b.WriteString(jsonString(v))
		default:
			x, _ := json.Marshal(v)
			b.Write(x)
		}
	}
	enc(v)
	return b.String()
}

// jsonString is s as a JSON string, without the HTML escapes of json.Marshal.
func jsonString(s string) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
