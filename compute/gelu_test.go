package compute

import (
	"math"
	"testing"
)

// TestGeGLU checks GeGLU against ggml_vec_geglu_f32 (values from llama.cpp
// b10573's ggml_table_gelu_f16, which the table equals in all 65536 entries):
// the table entry at x = −1.999 is the one GCC's fused multiply-add in
// ggml_gelu_f32 changes; beyond ±10 the table is not used.
func TestGeGLU(t *testing.T) {
	for _, tc := range []struct {
		gate, up float32
		want     uint32 // float32 bits
	}{
		{FP16ToFP32(0xbfff), 1, 0xbd3a6000}, // table[0xbfff] = 0xa9d3
		{0.5, 2, math.Float32bits(FP16ToFP32(FP32ToFP16(geluTanh(0.5))) * 2)},
		{-10, 3, 0},
		{-12, 3, 0},
		{10, 3, math.Float32bits(30)},
		{11.5, -2, math.Float32bits(-23)},
	} {
		got := make([]float32, 1)
		GeGLU(got, []float32{tc.gate}, []float32{tc.up})
		if math.Float32bits(got[0]) != tc.want {
			t.Errorf("geglu(%g, %g) = %08x, want %08x", tc.gate, tc.up, math.Float32bits(got[0]), tc.want)
		}
	}
}
