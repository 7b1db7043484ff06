package model

import (
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/kv"
)

// kvRotation returns the orders of the Walsh-Hadamard rotations llama.cpp
// applies around a quantized KV cache (0: none), for head sizes that are a
// multiple of 64 (llama-kv-cache.cpp, attn_rot_k/attn_rot_v; its
// LLAMA_ATTN_ROT_DISABLE turns them off). q and k are rotated by blocks of
// nk values, the largest power of two dividing the head size; v, and the
// attention output back, by blocks of nv = 64. The rotations are
// orthonormal, so the scores and outputs change only by rounding, but they
// spread outliers over the block before Q8_0 quantization.
func kvRotation(c *Config, t kv.CacheType) (nk, nv int) {
	if t != kv.Q8_0 || c.HeadDim%64 != 0 {
		return 0, 0
	}
	nk = 64
	for c.HeadDim%(2*nk) == 0 {
		nk *= 2
	}
	return nk, 64
}

// rotate applies compute.FWHT to each block of n values of x.
func rotate(x []float32, n int) {
	for i := 0; i+n <= len(x); i += n {
		compute.FWHT(x[i : i+n])
	}
}
