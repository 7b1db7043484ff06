package synth

import (
	"github.com/troupe-llm/troupe/model/gguf"
)

// moeTensors are the tensors of layer p's mixture-of-experts FFN (and, for
// qwen3moe, its q/k norms), in place of the dense gate, up and down.
func moeTensors(s Shape, p string) []matrix {
	hd, n := s.headDim(), s.Experts
	var m []matrix
	if s.Arch == "qwen3moe" {
		m = append(m,
			matrix{name: p + "attn_q_norm.weight", cols: hd, fill: 1},
			matrix{name: p + "attn_k_norm.weight", cols: hd, fill: 1})
	}
	m = append(m,
		matrix{name: p + "ffn_gate_inp.weight", kind: "ffn_gate_inp", cols: s.Dim, rows: n},
		matrix{name: p + "ffn_gate_exps.weight", kind: "ffn_gate", cols: s.Dim, rows: s.ExpertFFN, experts: n},
		matrix{name: p + "ffn_up_exps.weight", kind: "ffn_up", cols: s.Dim, rows: s.ExpertFFN, experts: n},
		matrix{name: p + "ffn_down_exps.weight", kind: "ffn_down", cols: s.ExpertFFN, rows: s.Dim, experts: n})
	if s.SharedFFN > 0 {
		m = append(m,
			matrix{name: p + "ffn_gate_inp_shexp.weight", cols: s.Dim}, // a vector: f32, N(0, 0.01²)
			matrix{name: p + "ffn_gate_shexp.weight", kind: "ffn_gate", cols: s.Dim, rows: s.SharedFFN},
			matrix{name: p + "ffn_up_shexp.weight", kind: "ffn_up", cols: s.Dim, rows: s.SharedFFN},
			matrix{name: p + "ffn_down_shexp.weight", kind: "ffn_down", cols: s.SharedFFN, rows: s.Dim})
	}
	return m
}

// setMoEKV writes the experts' metadata of a mixture-of-experts shape.
func setMoEKV(gw *gguf.Writer, s Shape) {
	if s.Experts == 0 {
		return
	}
	a := s.Arch
	gw.SetKV(a+".expert_count", uint32(s.Experts))
	gw.SetKV(a+".expert_used_count", uint32(s.ExpertsUsed))
	gw.SetKV(a+".expert_feed_forward_length", uint32(s.ExpertFFN))
	if s.SharedFFN > 0 {
		gw.SetKV(a+".expert_shared_feed_forward_length", uint32(s.SharedFFN))
	}
}
