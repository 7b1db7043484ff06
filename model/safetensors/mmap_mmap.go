//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package safetensors

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of f read-only. size is at least 1.
func mapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapFile(b []byte) error { return syscall.Munmap(b) }
