package vision

import (
	"fmt"
	"sync"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// Qwen2-VL (clip.cpp's clip_graph_qwen2vl with PROJECTOR_TYPE_QWEN2VL):
// Qwen2.5-VL's graph and preprocessing (qwen.go's encodeQwen, qwenNorm
// and plainFFN take Qwen2-VL's differences) with NORM_TYPE_NORMAL
// where Qwen2.5-VL has NORM_TYPE_RMS (layer norms with biases, the
// merger's ln_q as v.post_ln), a feed-forward without a gate whose
// activation is the file's (clip.use_gelu, else quick GELU, as Qwen2-VL's
// converted files have), and no n_wa_pattern: every layer attends to the
// whole image, the patches in 2×2 groups row by row (as Qwen3-VL's).

// qwen2FFN is a Qwen2-VL file's feed-forward width, from its tensors as
// clip.cpp takes it: the converter writes the vision config's hidden_size
// (the merger's output width) as clip.vision.feed_forward_length. It is
// ffn_down's input width, or ffn_up's when the names are swapped as
// clip.cpp detects it (ffn_down's rows of the ViT's width d).
func qwen2FFN(f *gguf.File, d int) (int, error) {
	t, err := f.Tensor("v.blk.0.ffn_down.weight")
	if err != nil || len(t.Shape) != 2 {
		return 0, fmt.Errorf("tensor %q: want a matrix (%v)", "v.blk.0.ffn_down.weight", err)
	}
	ffn := t.Shape[0]
	if ffn == d {
		ffn = t.Shape[1]
	}
	if ffn < 1 || ffn > 1<<20 {
		return 0, fmt.Errorf("feed-forward width %d: out of range", ffn)
	}
	return ffn, nil
}

// geluQuick is ggml_vec_gelu_quick_f32 with GGML_GELU_QUICK_FP16: each
// value rounded to half and looked up in ggml's half table of
// x·(1/(1+e^(−1.702·x))), widened.
func geluQuick(x []float32) { geluQuickF16().Lookup(x) }

// geluQuickF16 is ggml's ggml_table_gelu_quick_f16, built on first use:
// for every half h, the half nearest ggml_gelu_quick_f32(float(h)), with
// glibc's expf (compute.Expf) as ggml's CPU backend calls it.
var geluQuickF16 = sync.OnceValue(func() *compute.HalfTable {
	return compute.MakeHalfTable(func(v float32) float32 { return v * (1 / (1 + compute.Expf(-1.702*v))) })
})
