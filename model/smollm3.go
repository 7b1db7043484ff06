package model

// SmolLM3 is llama with rope left out of every fourth layer (layers 3, 7,
// 11, …: llama.cpp's n_no_rope_layer_step, fixed at 4 in
// src/models/smollm3.cpp; the GGUF has no key for it).

// smollm3NoRopeStep is how often a layer goes without rope.
const smollm3NoRopeStep = 4

// smollm3Config sets SmolLM3's layers without rope.
func smollm3Config(c *Config) {
	if c.Layers <= 0 || c.Layers > 1024 {
		return // Validate reports it
	}
	c.NoRopeLayers = make([]bool, c.Layers)
	for l := range c.NoRopeLayers {
		c.NoRopeLayers[l] = (l+1)%smollm3NoRopeStep == 0
	}
}
