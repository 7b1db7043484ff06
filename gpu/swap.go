package gpu

import (
	"fmt"
	"unsafe"

	"github.com/troupe-llm/troupe/gpu/cuda"
)

// BlockCopy names a source and a destination block.
type BlockCopy struct{ Src, Dst int32 }

// NumBlocks, BlockSize and NumHostBlocks give the cache's shape.
func (g *Model) NumBlocks() int     { return g.cache.NumBlocks }
func (g *Model) BlockSize() int     { return g.cache.BlockSize }
func (g *Model) NumHostBlocks() int { return g.cache.NumHostBlocks }
func (g *Model) VocabSize() int     { return g.cfg.VocabSize }

// SwapOut copies device blocks (Src) to host blocks (Dst), every layer's K
// and V. The copies are queued on the Model's stream and the call returns:
// the next Forward's kernels run after them, and a later SwapIn reads the
// host blocks only after they landed (one stream orders both).
func (g *Model) SwapOut(copies []BlockCopy) error { return g.swap(copies, true) }

// SwapIn copies host blocks (Src) to device blocks (Dst), queued as SwapOut.
func (g *Model) SwapIn(copies []BlockCopy) error { return g.swap(copies, false) }

func (g *Model) swap(copies []BlockCopy, out bool) error {
	if g.cache.NumHostBlocks == 0 {
		return fmt.Errorf("gpu: swap with no host tier")
	}
	src, dst := g.cache.NumBlocks, g.cache.NumHostBlocks
	if !out {
		src, dst = dst, src
	}
	for _, c := range copies {
		if c.Src < 0 || int(c.Src) >= src || c.Dst < 0 || int(c.Dst) >= dst {
			return fmt.Errorf("gpu: block copy %d -> %d outside %d -> %d blocks", c.Src, c.Dst, src, dst)
		}
	}
	blockBytes := 2 * g.cache.BlockSize * g.cfg.KVDim()
	for l := range g.cfg.Layers {
		for _, pair := range [2]struct {
			dev  cuda.DevicePtr
			host unsafe.Pointer
		}{{g.kc[l], g.hostK[l]}, {g.vc[l], g.hostV[l]}} {
			for _, c := range copies {
				var err error
				if out {
					err = g.dev.CopyDtoH(unsafe.Add(pair.host, int(c.Dst)*blockBytes), pair.dev+cuda.DevicePtr(int(c.Src)*blockBytes), blockBytes, g.stream)
				} else {
					err = g.dev.CopyHtoD(pair.dev+cuda.DevicePtr(int(c.Dst)*blockBytes), unsafe.Add(pair.host, int(c.Src)*blockBytes), blockBytes, g.stream)
				}
				if err != nil {
					return fmt.Errorf("gpu: swap layer %d block %d -> %d: %w", l, c.Src, c.Dst, err)
				}
			}
		}
	}
	return nil
}
