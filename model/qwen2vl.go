package model

import (
	"fmt"
	"math"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// Qwen2-VL and Qwen2.5-VL's language model (llama.cpp's qwen2vl) is qwen2
// with multimodal rope (M-RoPE, ggml_rope_multi in GGML_ROPE_TYPE_MROPE
// mode): each token has a (t, h, w) position, and the rotated pairs take
// their angles from t, h or w by rope.dimension_sections (Qwen2.5-VL 3B:
// 16, 24, 24 of 64 pairs). A text token sits at (p, p, p), which gives
// plain rotate-half rope bit for bit; an image's rows at (p0, p0+row,
// p0+column) (vision.Prepared.Positions), as mtmd lays them out.
// Batch.RopePositions carries them; the cache and the causal mask keep the
// batch's Positions (the rows in order), as llama.cpp's 2-D causal mask
// over an image's rows amounts to.

// qwen2vlConfig reads rope.dimension_sections.
func qwen2vlConfig(f *gguf.File, r *ggufKeys, c *Config) {
	key := r.arch + ".rope.dimension_sections"
	secs, ok := f.Int32s(key)
	if !ok || len(secs) == 0 || len(secs) > 4 {
		if r.err == nil {
			r.err = fmt.Errorf("model: %s: %s: want 1 to 4 integers", f.Path, key)
		}
		return
	}
	for i, v := range secs {
		c.RopeSections[i] = int(v)
	}
}

// validateMRoPE checks the sections: not negative, at least one pair.
func (c *Config) validateMRoPE() error {
	if c.RopeSections == [4]int{} {
		return nil
	}
	sum := 0
	for _, v := range c.RopeSections {
		if v < 0 || v > c.RopeDim {
			return fmt.Errorf("model: rope sections %v: each must be in 0..%d", c.RopeSections, c.RopeDim)
		}
		sum += v
	}
	if sum == 0 || sum > c.RopeDim {
		return fmt.Errorf("model: rope sections %v: want 1 to %d pairs in all", c.RopeSections, c.RopeDim)
	}
	if c.RopeFactors != nil || c.RopeYaRN != nil {
		return fmt.Errorf("model: rope sections with rope factors or YaRN are not supported")
	}
	return nil
}

// mropeTable is ggml_mrope_cache_init without independent sections: the
// t, h, w (and fourth, 0) angles each start at their position and are
// multiplied by theta_scale at every pair, and pair i takes the one its
// sector (i mod the sections' sum) falls in.
func (c *Config) mropeTable(cs []float32, pos [3]int32) {
	nRot := len(cs)
	thetaScale := float32(math.Pow(float64(c.RopeBase), float64(float32(-2)/float32(nRot))))
	sec := c.RopeSections
	sw := sec[0] + sec[1]
	se := sw + sec[2]
	dims := se + sec[3]
	t, h, w, e := float32(pos[0]), float32(pos[1]), float32(pos[2]), float32(0)
	for i := range nRot / 2 {
		theta := t
		switch s := i % dims; {
		case s >= sec[0] && s < sw:
			theta = h
		case s >= sw && s < se:
			theta = w
		case s >= se:
			theta = e
		}
		theta = c.RopeScale * theta
		cs[2*i], cs[2*i+1] = compute.Cosf(theta), compute.Sinf(theta)
		t *= thetaScale
		h *= thetaScale
		w *= thetaScale
		e *= thetaScale
	}
}
