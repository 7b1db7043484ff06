package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Bytes from other nodes are decoded only after checkBounds: msgpack v5.4.1
// allocates a slice of the length an array header declares before reading
// its elements (its allocation limit is never applied), so a 16-byte
// message declaring 2^31 chunks would allocate 32 GiB; and its Skip of
// unknown fields recurses once per nesting level. The cluster port is
// unauthenticated, so a malformed or hostile message must cost no more than
// its own size.

// maxDepth bounds how deeply a message's arrays and maps nest: troupe's
// messages nest a few levels.
const maxDepth = 32

// decode checks b's bounds, then decodes it into v.
func decode(b []byte, v any) error {
	if err := checkBounds(b); err != nil {
		return err
	}
	return msgpack.Unmarshal(b, v)
}

// checkBounds walks the msgpack value in b without decoding it: every
// string, binary and extension fits in what is left of b, every array and
// map declares no more elements than bytes are left (an element takes at
// least one), containers nest at most maxDepth deep, and one value fills b.
func checkBounds(b []byte) error {
	pending := []int{1} // per open container, the elements still to read
	pos := 0
	for len(pending) > 0 {
		if pending[len(pending)-1] == 0 {
			pending = pending[:len(pending)-1]
			continue
		}
		pending[len(pending)-1]--
		if pos >= len(b) {
			return fmt.Errorf("truncated at byte %d", pos)
		}
		items, skip, head, err := element(b[pos:])
		if err != nil {
			return fmt.Errorf("byte %d: %v", pos, err)
		}
		pos += head
		left := len(b) - pos
		if skip > left || items > left {
			return fmt.Errorf("byte %d declares %d elements or %d bytes, %d are left", pos-head, items, skip, left)
		}
		pos += skip
		if items > 0 {
			if len(pending) > maxDepth {
				return fmt.Errorf("nested deeper than %d", maxDepth)
			}
			pending = append(pending, items)
		}
	}
	if pos != len(b) {
		return fmt.Errorf("%d bytes after the value", len(b)-pos)
	}
	return nil
}

// element reads the header of the msgpack element at the start of b: the
// elements it contains (arrays: n, maps: 2n), the payload bytes to skip
// after the header, and the header's own length.
func element(b []byte) (items, skip, head int, err error) {
	c := b[0]
	// size reads a big-endian length of n bytes after the type byte.
	size := func(n int) (int, error) {
		if len(b) < 1+n {
			return 0, errors.New("truncated length")
		}
		switch n {
		case 1:
			return int(b[1]), nil
		case 2:
			return int(binary.BigEndian.Uint16(b[1:])), nil
		}
		return int(binary.BigEndian.Uint32(b[1:])), nil
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3: // fixints, nil, bools
		return 0, 0, 1, nil
	case c <= 0x8f: // fixmap
		return 2 * int(c&0x0f), 0, 1, nil
	case c <= 0x9f: // fixarray
		return int(c & 0x0f), 0, 1, nil
	case c <= 0xbf: // fixstr
		return 0, int(c & 0x1f), 1, nil
	}
	switch c {
	case 0xcc, 0xd0: // uint8, int8
		return 0, 1, 1, nil
	case 0xcd, 0xd1:
		return 0, 2, 1, nil
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return 0, 4, 1, nil
	case 0xcb, 0xcf, 0xd3:
		return 0, 8, 1, nil
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16: type byte + data
		return 0, 1 + 1<<(c-0xd4), 1, nil
	case 0xc4, 0xd9: // bin8, str8
		n, err := size(1)
		return 0, n, 2, err
	case 0xc5, 0xda:
		n, err := size(2)
		return 0, n, 3, err
	case 0xc6, 0xdb:
		n, err := size(4)
		return 0, n, 5, err
	case 0xc7, 0xc8, 0xc9: // ext 8, 16, 32: length, type byte, data
		w := 1 << (c - 0xc7)
		n, err := size(w)
		return 0, n + 1, 1 + w, err
	case 0xdc, 0xde: // array16, map16
		n, err := size(2)
		if c == 0xde {
			n *= 2
		}
		return n, 0, 3, err
	case 0xdd, 0xdf: // array32, map32
		n, err := size(4)
		if c == 0xdf {
			n *= 2
		}
		return n, 0, 5, err
	}
	return 0, 0, 0, fmt.Errorf("type byte 0x%02x is not msgpack", c)
}
