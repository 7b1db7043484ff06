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
	if c.Deepstack < 0 || c.Deepstack >= c.Layers {
		return fmt.Errorf("model: %d deepstack layers: want 0 to %d", c.Deepstack, c.Layers-1)
	}
	if c.RopeSections == [4]int{} {
		if c.RopeInterleaved {
			return fmt.Errorf("model: interleaved M-RoPE without rope sections")
		}
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
		s := i % dims
		switch {
		case c.RopeInterleaved: // ggml's is_imrope
			switch {
			case s%3 == 1 && s < 3*sec[1]:
				theta = h
			case s%3 == 2 && s < 3*sec[2]:
				theta = w
			case s%3 == 0 && s < 3*sec[0]:
				theta = t
			default:
				theta = e
			}
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

// Qwen3-VL's language model (llama.cpp's qwen3vl) is qwen3 with
// interleaved M-RoPE (GGML_ROPE_TYPE_IMROPE: pair i takes t, h or w by
// i mod 3 while within 3·its section, else the fourth position, 0; so a
// text token at (p, p, p, 0) is not plain rope: sections 24, 20, 20 leave
// pairs 61 and 62 unrotated) and deepstack: an image's row carries
// Dim·(1+Deepstack) values (llama.cpp's n_embd_inp, the projector's
// merger then its deepstack layers' outputs); the first Dim are its
// embedding, and slice j+1 is added to the row's hidden state after layer
// j, for j < Deepstack. A text token's extra slices are zero (llama.cpp
// pads its embedding), so only rows with Batch.Embeds take them.

// InputDim is the width of an input embedding (Batch.Embeds): Dim, or
// Dim·(1+Deepstack) for qwen3vl.
func (c *Config) InputDim() int { return c.Dim * (1 + c.Deepstack) }

// deepstack adds each image row's slice l+1 to its hidden state after
// layer l (l < Deepstack), as llama.cpp's qwen3vl graph's deepstack_out.
func (m *Model) deepstack(s *State, b *Batch, l int) {
	dim := m.Config.Dim
	for i, e := range b.Embeds {
		if e != nil {
			compute.Add(s.x[i*dim:(i+1)*dim], e[(l+1)*dim:(l+2)*dim])
		}
	}
}
