package compute

// dotF32Vec is ggml_vec_dot_f32 on AVX-512, which llama.cpp's CPU backend
// uses for F32 weights when a call has one activation row (llamafile's
// sgemm, whose order dotFloat follows, takes only calls of two rows or
// more): four 16-lane accumulators over steps of 64 by fused
// multiply-adds, added as (0+2)+(1+3), the lanes summed pairwise
// (_mm512_reduce_add_ps), then the k mod 64 last products added by fused
// multiply-adds. MatMuler.GGMLBatch sends one-row F32 calls here.
func dotF32Vec(w []byte, x []float32) float32 {
	k := len(x)
	wf := f32View(w[:4*k])
	var acc [4][16]float32
	k0 := k / 64 * 64
	for c := 0; c < k0; c += 64 {
		for j := range 4 {
			for l := range 16 {
				acc[j][l] = fmaExact32(wf[c+16*j+l], x[c+16*j+l], acc[j][l])
			}
		}
	}
	var sum [16]float32
	for l := range 16 {
		sum[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	s := sumLanes(&sum) // _mm512_reduce_add_ps
	for i := k0; i < k; i++ {
		s = fmaExact32(x[i], wf[i], s)
	}
	return s
}
