//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package safetensors

import (
	"io"
	"os"
)

// mapFile reads the file into memory where mmap is unavailable.
func mapFile(f *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

func unmapFile([]byte) error { return nil }
