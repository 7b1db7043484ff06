package kv

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// TestCacheTypes: a stored row reads back as its f16 values (F16) or
// within half a quantization step of each block (Q8_0), in the slot it was
// stored to and no other; the sizes follow the type; bad configurations
// and names are errors.
func TestCacheTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		typ      CacheType
		rowBytes int
	}{{F16, 2 * 96}, {Q8_0, 3 * 34}} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			c, err := NewCache(CacheConfig{Layers: 2, KVDim: 96, BlockSize: 4, NumBlocks: 3, Type: tc.typ})
			if err != nil {
				t.Fatal(err)
			}
			if c.RowBytes() != tc.rowBytes || c.Bytes() != int64(3*2*2*4*tc.rowBytes) {
				t.Fatalf("row %d bytes, cache %d; want %d, %d", c.RowBytes(), c.Bytes(), tc.rowBytes, 3*2*2*4*tc.rowBytes)
			}
			if back, err := ParseCacheType(tc.typ.String()); err != nil || back != tc.typ {
				t.Errorf("ParseCacheType(%q) = %v, %v", tc.typ, back, err)
			}
			k, v := make([]float32, 96), make([]float32, 96)
			for i := range k {
				k[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*4)
			}
			c.Store(1, 5, k, v)
			gk, gv := make([]float32, 96), make([]float32, 96)
			c.Load(1, 5, gk, gv)
			for _, p := range []struct{ in, out []float32 }{{k, gk}, {v, gv}} {
				for b := 0; b < 96; b += 32 {
					var amax float64
					for _, x := range p.in[b : b+32] {
						amax = max(amax, math.Abs(float64(x)))
					}
					for i := b; i < b+32; i++ {
						want, bound := float64(compute.RoundF16(p.in[i])), 0.0
						if tc.typ == Q8_0 {
							want, bound = float64(p.in[i]), amax/127/2+amax/2048
						}
						if d := math.Abs(float64(p.out[i]) - want); d > bound {
							t.Fatalf("[%d] stored %g, read %g (bound %g)", i, p.in[i], p.out[i], bound)
						}
					}
				}
			}
			for _, at := range [][2]int{{0, 5}, {1, 4}} { // another layer, another slot: untouched
				c.Load(at[0], at[1], gk, gv)
				for i := range gv {
					if gk[i] != 0 || gv[i] != 0 {
						t.Fatalf("layer %d slot %d holds %g, %g at %d", at[0], at[1], gk[i], gv[i], i)
					}
				}
			}
		})
	}
	for _, tc := range []struct {
		cfg CacheConfig
		msg string
	}{
		{CacheConfig{Layers: 1, KVDim: 40, NumBlocks: 1, Type: Q8_0}, "multiple of 32"},
		{CacheConfig{Layers: 1, KVDim: 64, NumBlocks: 1, Type: 7}, "unknown cache type"},
		{CacheConfig{Layers: 1, KVDim: 64}, "need at least one"},
	} {
		if _, err := NewCache(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc.cfg, err, tc.msg)
		}
	}
	if _, err := ParseCacheType("q4_0"); err == nil {
		t.Error(`ParseCacheType("q4_0"): no error`)
	}
}
