package model_test

import "testing"

// TestGptOssMXFP4Parity is TestGptOssParity on gpt-oss-tiny with gpt-oss's
// own expert type: `troupe synth --type MXFP4_MOE` (experts MXFP4, every
// other matrix Q8_0), with llama.cpp's references from scripts/make-refs.py.
func TestGptOssMXFP4Parity(t *testing.T) {
	const name = "synth-gpt-oss-tiny-MXFP4_MOE"
	m := synthModel(t, "gpt-oss-tiny", "MXFP4_MOE", "stories260K.gguf", 1)
	refParity(t, m, name, 1e-4, true)
}
