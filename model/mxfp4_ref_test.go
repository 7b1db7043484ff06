package model_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/model/gguf"
)

// TestMXFP4MatchesGGML checks troupe's MXFP4 quantizer and dequantizer
// against ggml's on the expert tensors of qwen3moe-tiny: the bytes troupe
// synth writes as MXFP4_MOE must be the bytes llama-quantize made from the
// same values in F32, and troupe's dequantization of them ggml's
// dequantize_row_mxfp4 (SHA-256 digests in ggml-quants.json, made by
// scripts/make-refs-mxfp4.py).
func TestMXFP4MatchesGGML(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "reference", "synth-qwen3moe-tiny-MXFP4_MOE", "ggml-quants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var refs map[string]struct {
		Type      string `json:"type"`
		Bytes     int    `json:"bytes"`
		SHA256    string `json:"sha256"`
		F32SHA256 string `json:"f32_sha256"`
	}
	if err := json.Unmarshal(raw, &refs); err != nil {
		t.Fatal(err)
	}
	if len(refs) == 0 {
		t.Fatal("no reference tensors")
	}
	f, err := gguf.Open(synthtest.Write(t, "qwen3moe-tiny", "MXFP4_MOE", "stories260K.gguf", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, ref := range refs {
		w, err := f.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		if w.Type.String() != ref.Type || len(w.Data) != ref.Bytes {
			t.Fatalf("%s: %s, %d bytes; reference %s, %d", name, w.Type, len(w.Data), ref.Type, ref.Bytes)
		}
		if got := sha256.Sum256(w.Data); hex.EncodeToString(got[:]) != ref.SHA256 {
			t.Errorf("%s: quantized bytes differ from llama-quantize's", name)
		}
		vals := make([]float32, w.Elems())
		if err := compute.Dequantize(w.Type, w.Data, vals); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		if got := sha256.Sum256(buf); hex.EncodeToString(got[:]) != ref.F32SHA256 {
			t.Errorf("%s: dequantized values differ from ggml's", name)
		}
	}
}
