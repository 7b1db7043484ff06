package synth

import (
	"fmt"
	"io"
)

// isEncoder reports whether s is a BERT-family shape ("bert", "nomic-bert").
func isEncoder(s Shape) bool { return s.Arch == "bert" || s.Arch == "nomic-bert" }

// bertTensors lists an encoder's tensors in llama.cpp's order (as
// convert_hf_to_gguf writes bge and nomic-embed-text): bert has absolute
// positions, separate q/k/v with biases and a GELU feed-forward with
// biases; nomic-bert rotary positions, a fused qkv and a SwiGLU
// feed-forward, without biases.
func bertTensors(s Shape, ft FileType, vocab int) []matrix {
	bert := s.Arch == "bert"
	m := []matrix{{name: "token_embd.weight", kind: "token_embd", cols: s.Dim, rows: vocab},
		{name: "token_types.weight", cols: s.Dim, rows: 2, kind: "f32"}}
	if bert {
		m = append(m, matrix{name: "position_embd.weight", cols: s.Dim, rows: s.Context, kind: "f32"})
	}
	m = append(m, matrix{name: "token_embd_norm.weight", cols: s.Dim, fill: 1}, matrix{name: "token_embd_norm.bias", cols: s.Dim})
	for l := range s.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		first := len(m)
		if bert {
			for _, x := range []string{"q", "k", "v"} {
				m = append(m, matrix{name: p + "attn_" + x + ".weight", kind: "attn_" + x, cols: s.Dim, rows: s.Dim},
					matrix{name: p + "attn_" + x + ".bias", cols: s.Dim})
			}
		} else {
			m = append(m, matrix{name: p + "attn_qkv.weight", kind: "attn_qkv", cols: s.Dim, rows: 3 * s.Dim})
		}
		m = append(m, matrix{name: p + "attn_output.weight", kind: "attn_output", cols: s.Dim, rows: s.Dim})
		if bert {
			m = append(m, matrix{name: p + "attn_output.bias", cols: s.Dim})
		}
		m = append(m, matrix{name: p + "attn_output_norm.weight", cols: s.Dim, fill: 1}, matrix{name: p + "attn_output_norm.bias", cols: s.Dim})
		if bert {
			m = append(m, matrix{name: p + "ffn_up.weight", kind: "ffn_up", cols: s.Dim, rows: s.FFN}, matrix{name: p + "ffn_up.bias", cols: s.FFN},
				matrix{name: p + "ffn_down.weight", kind: "ffn_down", cols: s.FFN, rows: s.Dim}, matrix{name: p + "ffn_down.bias", cols: s.Dim})
		} else {
			m = append(m, matrix{name: p + "ffn_up.weight", kind: "ffn_up", cols: s.Dim, rows: s.FFN},
				matrix{name: p + "ffn_gate.weight", kind: "ffn_gate", cols: s.Dim, rows: s.FFN},
				matrix{name: p + "ffn_down.weight", kind: "ffn_down", cols: s.FFN, rows: s.Dim})
		}
		m = append(m, matrix{name: p + "layer_output_norm.weight", cols: s.Dim, fill: 1}, matrix{name: p + "layer_output_norm.bias", cols: s.Dim})
		for i := first; i < len(m); i++ {
			m[i].layer = l
		}
	}
	m = append(m, rankTensors(s)...)
	for i := range m {
		m[i].setSeedAndType(ft, s.Layers, 1, "f32")
	}
	return m
}

// writeBERT is Write for an encoder shape.
func writeBERT(w io.Writer, o Options) (int, error) {
	s := o.Shape
	tokens, ok := o.Vocab.Strings("tokenizer.ggml.tokens")
	if !ok || len(tokens) == 0 {
		return 0, fmt.Errorf("synth: %s has no tokenizer.ggml.tokens", o.Vocab.Path)
	}
	if model, _ := o.Vocab.String("tokenizer.ggml.model"); model != "bert" {
		return 0, fmt.Errorf("synth: %s shape needs a WordPiece vocabulary (tokenizer.ggml.model bert), %s has %q", s.Name, o.Vocab.Path, model)
	}
	vocab := len(tokens)
	gw := newModelWriter(s)
	a := s.Arch
	pooling := uint32(2) // bge: cls
	if a == "nomic-bert" {
		pooling = 1 // nomic-embed-text: mean
	}
	if s.Rerank {
		pooling = poolingRank
	}
	gw.SetKV(a+".attention.layer_norm_epsilon", s.NormEps)
	gw.SetKV(a+".attention.causal", false)
	gw.SetKV(a+".pooling_type", pooling)
	if a == "nomic-bert" {
		gw.SetKV(a+".rope.freq_base", s.RopeBase)
	}
	setFileKV(gw, o)
	if _, ok := o.Vocab.Value("tokenizer.ggml.token_type_count"); !ok {
		gw.SetKV("tokenizer.ggml.token_type_count", uint32(2))
	}
	return vocab, writeTensors(w, gw, bertTensors(s, o.Type, vocab), o)
}
