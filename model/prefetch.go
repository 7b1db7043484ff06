package model

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefetch asks the OS to start reading the pages of the step's routed
// experts (those whose run in start is not empty) when they are read in
// place from the mapped file (MADV_WILLNEED): the reads of the experts
// that are not in memory then overlap the products of those that are,
// instead of each page fault waiting in turn. A no-op for repacked experts.
func (w *MoEWeights) prefetch(start []int) {
	if len(w.Gate) == 0 || !w.Gate[0].InPlace {
		return
	}
	for e := range w.Gate {
		if start[e+1] > start[e] {
			willNeed(w.Gate[e].Data)
			willNeed(w.Up[e].Data)
			willNeed(w.Down[e].Data)
		}
	}
}

// willNeed advises MADV_WILLNEED on the pages that hold b.
func willNeed(b []byte) {
	if len(b) == 0 {
		return
	}
	page := os.Getpagesize()
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % uintptr(page)) // into its first page
	lo := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), -off)
	_ = unix.Madvise(unsafe.Slice((*byte)(lo), off+len(b)), unix.MADV_WILLNEED)
}
