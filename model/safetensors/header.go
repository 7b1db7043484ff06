package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// maxHeaderSize bounds the JSON header; real headers are a few hundred KB.
const maxHeaderSize = 100 << 20

// dtypeBits is the element size in bits of every dtype the format defines.
// Only F32, F16 and BF16 convert to compute types; the others are listed and
// size-checked but Tensor refuses them.
var dtypeBits = map[string]uint64{
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
	"I16": 16, "U16": 16, "F16": 16, "BF16": 16,
	"I32": 32, "U32": 32, "F32": 32,
	"I64": 64, "U64": 64, "F64": 64, "C64": 64,
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

// header is one file's parsed header. Offsets in tensors are absolute
// positions in the file.
type header struct {
	tensors  map[string]*entry
	metadata map[string]string
}

// entry is one tensor as its header describes it.
type entry struct {
	name       string
	dtype      string
	shape      []int64 // safetensors order: slowest-varying dimension first
	begin, end uint64  // absolute byte range in the file
	file       *mappedFile
}

// rawEntry is a header value as written.
type rawEntry struct {
	DType       *string  `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// parseHeader parses and validates the header of a whole file held in buf.
// Errors do not name the file; the caller adds it.
func parseHeader(buf []byte) (*header, error) {
	if len(buf) < 8 {
		return nil, fmt.Errorf("file is %d bytes, too short for the 8-byte header length", len(buf))
	}
	n := binary.LittleEndian.Uint64(buf)
	if n > maxHeaderSize {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit", n, maxHeaderSize)
	}
	if n > uint64(len(buf)-8) {
		return nil, fmt.Errorf("header length %d runs past the end of the file (%d bytes)", n, len(buf))
	}
	dataStart := 8 + n
	dataLen := uint64(len(buf)) - dataStart

	h := &header{tensors: map[string]*entry{}, metadata: map[string]string{}}
	dec := json.NewDecoder(bytes.NewReader(buf[8:dataStart]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("header is not a JSON object")
	}
	seenMeta := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("header JSON: %w", err)
		}
		name, _ := tok.(string) // object keys are always strings
		if name == "__metadata__" {
			if seenMeta {
				return nil, fmt.Errorf("header has two __metadata__ entries")
			}
			seenMeta = true
			if err := dec.Decode(&h.metadata); err != nil {
				return nil, fmt.Errorf("header __metadata__: %w", err)
			}
			continue
		}
		var raw rawEntry
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("header tensor %q: %w", name, err)
		}
		if _, dup := h.tensors[name]; dup {
			return nil, fmt.Errorf("header names tensor %q twice", name)
		}
		e, err := checkEntry(name, &raw, dataLen)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		e.begin += dataStart
		e.end += dataStart
		h.tensors[name] = e
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, fmt.Errorf("header JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("header has data after its JSON object")
	}
	if h.metadata == nil { // "__metadata__": null
		h.metadata = map[string]string{}
	}
	return h, nil
}

// checkEntry validates one header entry against a data section of dataLen
// bytes and returns it with offsets relative to that section.
func checkEntry(name string, raw *rawEntry, dataLen uint64) (*entry, error) {
	if name == "" {
		return nil, errors.New("empty tensor name")
	}
	if raw.DType == nil || *raw.DType == "" {
		return nil, errors.New("no dtype")
	}
	if raw.Shape == nil {
		return nil, errors.New("no shape")
	}
	if len(raw.DataOffsets) != 2 {
		return nil, fmt.Errorf("data_offsets has %d values, want 2", len(raw.DataOffsets))
	}
	begin, end := raw.DataOffsets[0], raw.DataOffsets[1]
	if begin > end {
		return nil, fmt.Errorf("data_offsets [%d, %d] begin after end", begin, end)
	}
	if end > dataLen {
		return nil, fmt.Errorf("data_offsets [%d, %d] run past the end of the data (%d bytes)", begin, end, dataLen)
	}
	elems := uint64(1)
	for _, d := range raw.Shape {
		if d < 0 {
			return nil, fmt.Errorf("shape %v has a negative dimension", raw.Shape)
		}
		hi, lo := bits.Mul64(elems, uint64(d))
		if hi != 0 {
			return nil, fmt.Errorf("shape %v overflows", raw.Shape)
		}
		elems = lo
	}
	if b, ok := dtypeBits[*raw.DType]; ok {
		hi, nbits := bits.Mul64(elems, b)
		if hi != 0 || nbits%8 != 0 || nbits/8 != end-begin {
			return nil, fmt.Errorf("%s shape %v needs %d × %d bits, but data_offsets [%d, %d] hold %d bytes",
				*raw.DType, raw.Shape, elems, b, begin, end, end-begin)
		}
	}
	return &entry{name: name, dtype: *raw.DType, shape: raw.Shape, begin: begin, end: end}, nil
}
