package synth

// gptossLayer lists the tensors of gpt-oss's layer p (llama.cpp's
// llama_model_openai_moe::load_arch_tensors): attention with biases on q,
// k, v and the output, a sink logit per head, the FFN norm named
// post_attention_norm, and experts whose router, gate, up and down have
// biases. Vector biases and sinks are N(0, 0.01²); the 2-D expert biases
// (kind "bias", f32) N(0, 0.02²).
func gptossLayer(s Shape, p string) []matrix {
	qDim, kvDim, n := s.Heads*s.headDim(), s.KVHeads*s.headDim(), s.Experts
	m := []matrix{
		{name: p + "attn_norm.weight", cols: s.Dim, fill: 1},
		{name: p + "attn_q.weight", kind: "attn_q", cols: s.Dim, rows: qDim},
		{name: p + "attn_k.weight", kind: "attn_k", cols: s.Dim, rows: kvDim},
		{name: p + "attn_v.weight", kind: "attn_v", cols: s.Dim, rows: kvDim},
		{name: p + "attn_q.bias", cols: qDim},
		{name: p + "attn_k.bias", cols: kvDim},
		{name: p + "attn_v.bias", cols: kvDim},
		{name: p + "attn_output.weight", kind: "attn_output", cols: qDim, rows: s.Dim},
		{name: p + "attn_output.bias", cols: s.Dim},
		{name: p + "attn_sinks.weight", cols: s.Heads},
		{name: p + "post_attention_norm.weight", cols: s.Dim, fill: 1},
	}
	m = append(m, moeTensors(s, p)...)
	return append(m,
		matrix{name: p + "ffn_gate_inp.bias", cols: n},
		matrix{name: p + "ffn_gate_exps.bias", kind: "bias", cols: s.ExpertFFN, rows: n},
		matrix{name: p + "ffn_up_exps.bias", kind: "bias", cols: s.ExpertFFN, rows: n},
		matrix{name: p + "ffn_down_exps.bias", kind: "bias", cols: s.Dim, rows: n})
}
