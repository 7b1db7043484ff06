package compute

import (
	"encoding/binary"
	"math"
	"sync"
)

// Weight panels. The assembly kernels read quantized weights repacked in
// panels of panelRows rows, interleaved so that one 256-bit vector holds four
// consecutive quants of each of the eight rows: a VPDPBUSD (or PMADDUBSW +
// PMADDWD) against four broadcast activation bytes then leaves one int32
// partial sum per row in each lane, as ggml's repacked q4_0_8x8 kernels do.
// Each output row is a vector lane, so a block adds its scaled integer sum
// to the row's float accumulator with one FMA and no horizontal sum; and the
// float arithmetic of every output is a fixed sequence over the blocks,
// whatever the number of activation rows, which keeps the product
// batch-invariant.
//
// A tensor is packed once, when its kernel is bound (kernel.go), into
// memory of its own (the mapped file is left as it is). Rows past the last whole panel stay with the
// reference kernels.

// panelRows is the number of weight rows interleaved in a panel.
const panelRows = 8

// packed is a tensor's panel form for one kernel family.
type packed struct {
	data     []byte // panels, each nb blocks of blockSz bytes; or rows
	panels   int    // whole panels; rows from panels·panelRows on stay unpacked
	nb       int    // blocks per row
	blockSz  int    // bytes of one panel block
	rowBytes int    // bytes per weight row in data (a panel's share for panels)
}

// packQ4_0 interleaves whole panels of Q4_0 rows. A panel block is 144
// bytes: the eight rows' f16 scales (16 bytes), then four 32-byte chunks;
// chunk c holds bytes qs[4c : 4c+4] of each row in turn, so its low nibbles
// are values 4c..4c+3 and its high nibbles values 16+4c..16+4c+3 (Q4_0
// keeps value j in the low nibble of qs[j] and value j+16 in the high one).
func packQ4_0(t *Tensor) *packed {
	const bs = 18
	return interleave(t, bs, 16+4*32, func(dst []byte, blocks [panelRows][]byte) {
		for r, b := range blocks {
			binary.LittleEndian.PutUint16(dst[2*r:], binary.LittleEndian.Uint16(b))
		}
		for c := range 4 {
			for r, b := range blocks {
				binary.LittleEndian.PutUint32(dst[16+32*c+4*r:], binary.LittleEndian.Uint32(b[2+4*c:]))
			}
		}
	})
}

// packMXFP4 interleaves whole panels of MXFP4 rows. A panel block is 144
// bytes: the eight rows' scales 2^(e−128) as bf16 (the float32's upper
// half: its lower half is zero for every e, so the value is exact), then
// Q4_0's four 32-byte chunks (see packQ4_0): chunk c holds bytes
// qs[4c : 4c+4] of each row in turn.
func packMXFP4(t *Tensor) *packed {
	const bs = 17
	return interleave(t, bs, 16+4*32, func(dst []byte, blocks [panelRows][]byte) {
		for r, b := range blocks {
			binary.LittleEndian.PutUint16(dst[2*r:], uint16(math.Float32bits(e8m0Half(b[0]))>>16))
		}
		for c := range 4 {
			for r, b := range blocks {
				binary.LittleEndian.PutUint32(dst[16+32*c+4*r:], binary.LittleEndian.Uint32(b[1+4*c:]))
			}
		}
	})
}

// interleave builds t's panels: for each whole panel and each block index,
// fill writes the panel block (blockSz bytes) from the eight rows' source
// blocks of bs bytes.
func interleave(t *Tensor, bs, blockSz int, fill func(dst []byte, blocks [panelRows][]byte)) *packed {
	nb := t.Cols() / t.Type.BlockSize()
	rb := t.RowBytes()
	p := &packed{panels: t.Rows() / panelRows, nb: nb, blockSz: blockSz, rowBytes: nb * blockSz / panelRows}
	p.data = make([]byte, p.panels*nb*p.blockSz)
	for pi := range p.panels {
		for ib := range nb {
			var blocks [panelRows][]byte
			for r := range blocks {
				row := t.Data[(pi*panelRows+r)*rb:]
				blocks[r] = row[ib*bs : (ib+1)*bs]
			}
			fill(p.data[(pi*nb+ib)*p.blockSz:(pi*nb+ib+1)*p.blockSz], blocks)
		}
	}
	return p
}

// Prepare binds each tensor's kernel for this machine (kernel.go), on up
// to workers goroutines, so that the first forward pass does not pay for
// it: the kernels that read the weights in a layout of their own pack them
// now. After packing a tensor it calls packed(t) (if not nil) from that
// goroutine: the tensor's Data is then read only by the reference paths.
func Prepare(ts []*Tensor, workers int, packed func(*Tensor)) {
	work := make(chan *Tensor)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for t := range work {
				if t.bind(hostISA).packed() && packed != nil {
					packed(t)
				}
			}
		})
	}
	for _, t := range ts {
		if t != nil && t.Type.Known() {
			work <- t
		}
	}
	close(work)
	wg.Wait()
}
