package synth

import (
	"bufio"
	"cmp"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// FileType is a llama-quantize file type: the base type of the weight
// matrices and the rules that give some tensors more bits.
type FileType struct {
	Name string
	ID   uint32        // general.file_type (llama_ftype)
	Base compute.DType // the type of most matrices
}

// FileTypes lists the types Write can produce.
var FileTypes = []FileType{
	{"F32", 0, compute.F32}, {"F16", 1, compute.F16}, {"BF16", 32, compute.BF16},
	{"Q8_0", 7, compute.Q8_0}, {"Q4_0", 2, compute.Q4_0},
	{"Q4_K_S", 14, compute.Q4_K}, {"Q4_K_M", 15, compute.Q4_K},
	{"Q5_K_S", 16, compute.Q5_K}, {"Q5_K_M", 17, compute.Q5_K}, {"Q6_K", 18, compute.Q6_K},
	{"IQ4_NL", 25, compute.IQ4_NL}, {"IQ4_XS", 30, compute.IQ4_XS},
	{"MXFP4_MOE", 38, compute.MXFP4}, {"MXFP4", 38, compute.MXFP4}, // see mxfp4.go
}

// LookupFileType returns the file type called name ("Q4_K_M").
func LookupFileType(name string) (FileType, bool) {
	i := slices.IndexFunc(FileTypes, func(f FileType) bool { return strings.EqualFold(f.Name, name) })
	if i < 0 {
		return FileType{}, false
	}
	return FileTypes[i], true
}

// useMoreBits is llama-quantize's choice of the layers whose attn_v and
// ffn_down get more bits in the _M types: the first and last eighth, and
// every third layer between.
func useMoreBits(layer, n int) bool {
	return layer < n/8 || layer >= 7*n/8 || (layer-n/8)%3 == 2
}

// TensorType is the type llama-quantize (llama_tensor_get_type, no
// importance matrix) gives a matrix of ncols columns: kind is "output"
// (also a tied token_embd), "token_embd", "attn_v", "ffn_down" or any
// other matrix; gqa is the model's query heads per KV head.
func (ft FileType) TensorType(kind string, layer, nLayers, ncols, gqa int) compute.DType {
	t := ft.Base
	if kind == "ffn_gate_inp" {
		return compute.F32 // llama-quantize leaves the MoE routers as they are
	}
	if ft.isMXFP4() {
		return ft.mxfp4Type(kind, false)
	}
	if t == compute.F32 || t == compute.F16 || t == compute.BF16 {
		return t // not quantized: every matrix in the file's type
	}
	switch kind {
	case "output":
		if ncols%compute.QK_K != 0 {
			t = compute.Q8_0
		} else if t != compute.Q8_0 {
			t = compute.Q6_K
		}
	case "attn_v", "ffn_down":
		// _M: Q6_K where useMoreBits; Q4_K_S: Q5_K for the first four attn_v
		// and the first eighth of the ffn_down.
		firstS := 4
		if kind == "ffn_down" {
			firstS = nLayers / 8
		}
		iq4 := ft.Base == compute.IQ4_NL || ft.Base == compute.IQ4_XS
		switch {
		case iq4 && kind == "attn_v" && gqa >= 4, iq4 && kind == "ffn_down" && layer < nLayers/8:
			t = compute.Q5_K
		case (ft.Name == "Q4_K_M" || ft.Name == "Q5_K_M") && useMoreBits(layer, nLayers):
			t = compute.Q6_K
		case ft.Name == "Q4_K_S" && layer < firstS:
			t = compute.Q5_K
		}
	}
	if ncols%compute.QK_K != 0 { // llama-quantize's fallbacks for K-quants
		switch t {
		case compute.Q4_K:
			t = compute.Q5_0
		case compute.Q5_K:
			t = compute.Q5_1
		case compute.Q6_K:
			t = compute.Q8_0
		case compute.IQ4_XS:
			t = compute.IQ4_NL
		}
	}
	return t
}

// Options configures Write.
type Options struct {
	Shape   Shape
	Type    FileType
	Vocab   *gguf.File // the tokenizer.* keys are copied from it
	Seed    uint64
	Workers int // goroutines that generate and quantize rows (at least 1)

	// ExpertType, when set, is the type of a mixture of experts' 3-D expert
	// tensors (a ggml type name, e.g. "F16"), in place of Type's choice.
	ExpertType string
}

// matrix is one tensor to write: name, kind (see TensorType), layer, and
// shape [cols, rows]; rows == 0 marks a vector.
type matrix struct {
	name        string
	kind        string
	layer       int
	cols, rows  int
	experts     int     // 3-D expert tensors: experts matrices of rows×cols; 0: none
	fill        float32 // vectors: values are fill ± 1%; matrices: N(0, 0.02²)
	typ         compute.DType
	seedPerName uint64
}

// setSeedAndType seeds m's values by its name and gives it the type ft
// gives its kind (F32 for vectors and the plain kind, which stays float).
func (m *matrix) setSeedAndType(ft FileType, layers, gqa int, plain string) {
	h := fnv.New64a()
	h.Write([]byte(m.name))
	m.seedPerName = h.Sum64()
	m.typ = compute.F32
	if m.rows > 0 && m.kind != plain {
		m.typ = ft.TensorType(m.kind, m.layer, layers, m.cols, gqa)
	}
}

// tensors lists the model's tensors in llama.cpp's order.
func tensors(s Shape, ft FileType, vocab int) []matrix {
	qDim, kvDim := s.Heads*s.headDim(), s.KVHeads*s.headDim()
	gemma := s.Arch == "gemma2" || s.Arch == "gemma3"
	fused := s.Arch == "phi3"
	m := []matrix{{name: "token_embd.weight", kind: "token_embd", cols: s.Dim, rows: vocab}}
	if s.Tied {
		m[0].kind = "output"
	}
	if s.LongRope {
		m = append(m,
			matrix{name: "rope_factors_long.weight", cols: s.ropeDim() / 2, fill: 5},
			matrix{name: "rope_factors_short.weight", cols: s.ropeDim() / 2, fill: 1.5})
	}
	for l := range s.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		first := len(m)
		m = append(m, matrix{name: p + "attn_norm.weight", cols: s.Dim, fill: 1})
		if fused {
			m = append(m, matrix{name: p + "attn_qkv.weight", kind: "attn_qkv", cols: s.Dim, rows: qDim + 2*kvDim})
		} else {
			m = append(m,
				matrix{name: p + "attn_q.weight", kind: "attn_q", cols: s.Dim, rows: qDim},
				matrix{name: p + "attn_k.weight", kind: "attn_k", cols: s.Dim, rows: kvDim},
				matrix{name: p + "attn_v.weight", kind: "attn_v", cols: s.Dim, rows: kvDim})
		}
		if s.QKVBias {
			m = append(m,
				matrix{name: p + "attn_q.bias", cols: qDim},
				matrix{name: p + "attn_k.bias", cols: kvDim},
				matrix{name: p + "attn_v.bias", cols: kvDim})
		}
		if s.Arch == "gemma3" || s.Arch == "qwen3" || s.Arch == "qwen3vl" {
			m = append(m,
				matrix{name: p + "attn_q_norm.weight", cols: s.headDim(), fill: 1},
				matrix{name: p + "attn_k_norm.weight", cols: s.headDim(), fill: 1})
		}
		m = append(m,
			matrix{name: p + "attn_output.weight", kind: "attn_output", cols: qDim, rows: s.Dim})
		if gemma {
			m = append(m, matrix{name: p + "post_attention_norm.weight", cols: s.Dim, fill: 1})
		}
		m = append(m, matrix{name: p + "ffn_norm.weight", cols: s.Dim, fill: 1})
		if fused {
			m = append(m, matrix{name: p + "ffn_up.weight", kind: "ffn_up", cols: s.Dim, rows: 2 * s.FFN})
		} else {
			m = append(m,
				matrix{name: p + "ffn_gate.weight", kind: "ffn_gate", cols: s.Dim, rows: s.FFN},
				matrix{name: p + "ffn_up.weight", kind: "ffn_up", cols: s.Dim, rows: s.FFN})
		}
		m = append(m, matrix{name: p + "ffn_down.weight", kind: "ffn_down", cols: s.FFN, rows: s.Dim})
		if s.Experts > 0 { // experts in place of the dense FFN
			m = append(m[:len(m)-3], moeTensors(s, p)...)
		}
		if gemma {
			m = append(m, matrix{name: p + "post_ffw_norm.weight", cols: s.Dim, fill: 1})
		}
		if s.Arch == "gpt-oss" {
			m = append(m[:first], gptossLayer(s, p)...)
		}
		for i := first; i < len(m); i++ {
			m[i].layer = l
		}
	}
	m = append(m, matrix{name: "output_norm.weight", cols: s.Dim, fill: 1})
	if !s.Tied {
		m = append(m, matrix{name: "output.weight", kind: "output", cols: s.Dim, rows: vocab})
	}
	m = append(m, rankTensors(s)...)
	for i := range m {
		m[i].setSeedAndType(ft, s.Layers, s.Heads/s.KVHeads, "bias")
		if m[i].experts > 0 && ft.isMXFP4() {
			m[i].typ = ft.mxfp4Type(m[i].kind, true)
		}
	}
	return m
}

// WriteFile writes Write's model to a new file at path (through a buffer),
// and removes what it wrote if anything fails.
func WriteFile(path string, o Options) (int, error) {
	var n int
	err := writeFile(path, func(w io.Writer) (err error) {
		n, err = Write(w, o)
		return err
	})
	return n, err
}

// writeFile creates path and runs write on it through a buffer, removing
// the file if anything fails.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// Write writes a GGUF model of o.Shape with random weights (seeded, the
// same bytes for the same options) and o.Vocab's tokenizer, quantized to
// o.Type by troupe's ggml-identical quantizers. Rows are generated and
// quantized on o.Workers goroutines and streamed out; memory stays at a few
// rows per worker. It returns the number of tokens in the vocabulary.
func Write(w io.Writer, o Options) (int, error) {
	s := o.Shape
	if isEncoder(s) {
		return writeBERT(w, o) // bert.go
	}
	tokens, ok := o.Vocab.Strings("tokenizer.ggml.tokens")
	if !ok || len(tokens) == 0 {
		return 0, fmt.Errorf("synth: %s has no tokenizer.ggml.tokens", o.Vocab.Path)
	}
	vocab := len(tokens)
	gw := newModelWriter(s)
	a := s.Arch
	gw.SetKV(a+".attention.head_count_kv", uint32(s.KVHeads))
	gw.SetKV(a+".rope.freq_base", s.RopeBase)
	gw.SetKV(a+".attention.layer_norm_rms_epsilon", s.NormEps)
	gw.SetKV(a+".rope.dimension_count", uint32(s.ropeDim()))
	if s.MRope != [4]int{} {
		gw.SetKV(a+".rope.dimension_sections", []int32{int32(s.MRope[0]), int32(s.MRope[1]), int32(s.MRope[2]), int32(s.MRope[3])})
	}
	if s.Deepstack > 0 {
		gw.SetKV(a+".n_deepstack_layers", uint32(s.Deepstack))
	}
	if s.LongRope {
		gw.SetKV(a+".rope.scaling.attn_factor", s.AttnFactor)
		gw.SetKV(a+".rope.scaling.original_context_length", uint32(cmp.Or(s.OrigCtx, 4096)))
	}
	if s.YaRN > 0 {
		gw.SetKV(a+".rope.scaling.type", "yarn")
		gw.SetKV(a+".rope.scaling.factor", s.YaRN)
		gw.SetKV(a+".rope.scaling.original_context_length", uint32(cmp.Or(s.OrigCtx, 4096)))
	}
	if s.HeadDim > 0 {
		gw.SetKV(a+".attention.key_length", uint32(s.HeadDim))
		gw.SetKV(a+".attention.value_length", uint32(s.HeadDim))
	}
	if s.Window > 0 {
		gw.SetKV(a+".attention.sliding_window", uint32(s.Window))
	}
	if s.SWAPattern > 0 {
		gw.SetKV(a+".attention.sliding_window_pattern", uint32(s.SWAPattern))
	}
	if s.AttnSoftcap > 0 {
		gw.SetKV(a+".attn_logit_softcapping", s.AttnSoftcap)
	}
	if s.FinalCap > 0 {
		gw.SetKV(a+".final_logit_softcapping", s.FinalCap)
	}
	setMoEKV(gw, s)
	setRankKV(gw, s)
	gw.SetKV(a+".vocab_size", uint32(vocab))
	setFileKV(gw, o)
	expertType, ok := compute.ParseDType(o.ExpertType)
	if o.ExpertType != "" && !ok {
		return 0, fmt.Errorf("synth: expert type %q: not a ggml type name", o.ExpertType)
	}
	ms := tensors(s, o.Type, vocab)
	for i := range ms {
		if ms[i].experts > 0 && o.ExpertType != "" {
			ms[i].typ = expertType
		}
	}
	return vocab, writeTensors(w, gw, ms, o)
}

// newModelWriter starts a model file of shape s with the keys every
// architecture has: its name and the widths and counts of s.
func newModelWriter(s Shape) *gguf.Writer {
	gw := gguf.NewWriter(3)
	a := s.Arch
	gw.SetKV("general.architecture", a)
	gw.SetKV("general.name", "troupe synthetic "+s.Name)
	gw.SetKV(a+".context_length", uint32(s.Context))
	gw.SetKV(a+".embedding_length", uint32(s.Dim))
	gw.SetKV(a+".block_count", uint32(s.Layers))
	gw.SetKV(a+".feed_forward_length", uint32(s.FFN))
	gw.SetKV(a+".attention.head_count", uint32(s.Heads))
	return gw
}

// setFileKV sets the file type keys from o.Type and copies o.Vocab's
// tokenizer keys.
func setFileKV(gw *gguf.Writer, o Options) {
	gw.SetKV("general.file_type", o.Type.ID)
	gw.SetKV("general.quantization_version", uint32(2))
	for _, k := range o.Vocab.Keys() {
		if strings.HasPrefix(k, "tokenizer.") {
			v, _ := o.Vocab.Value(k)
			gw.SetKV(k, v)
		}
	}
}

// writeTensors adds ms to gw, their rows made on o.Workers goroutines as
// gw streams them out, and writes the file to w.
func writeTensors(w io.Writer, gw *gguf.Writer, ms []matrix, o Options) error {
	workers := max(1, o.Workers)
	for _, m := range ms {
		shape := []int{m.cols}
		if m.rows > 0 {
			shape = append(shape, m.rows)
		}
		if m.experts > 0 {
			shape = append(shape, m.experts)
		}
		if err := gw.AddTensorFunc(m.name, m.typ, shape, func(out io.Writer) error {
			return writeRows(out, m, o.Seed, workers)
		}); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	if _, err := gw.WriteTo(w); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// writeGGUF writes gw to a new file at path.
func writeGGUF(path string, gw *gguf.Writer) error {
	return writeFile(path, func(w io.Writer) error {
		_, err := gw.WriteTo(w)
		return err
	})
}

// rowChunk is how many rows the workers make between writes.
const rowChunk = 64

// writeRows generates, quantizes and writes m's rows, rowChunk at a time
// spread over the workers. Row r's values come from its own generator, so
// the bytes do not depend on the number of workers.
func writeRows(out io.Writer, m matrix, seed uint64, workers int) error {
	rows := max(1, m.rows) * max(1, m.experts)
	rb, err := m.typ.RowSize(m.cols)
	if err != nil {
		return err
	}
	buf := make([]byte, rowChunk*rb)
	xs := make([][]float32, workers)
	for i := range xs {
		xs[i] = make([]float32, m.cols)
	}
	errs := make([]error, workers)
	for r0 := 0; r0 < rows; r0 += rowChunk {
		n := min(rowChunk, rows-r0)
		var wg sync.WaitGroup
		for wi := range workers {
			wg.Go(func() {
				x := xs[wi]
				for r := wi; r < n; r += workers {
					rng := rand.New(rand.NewPCG(seed^m.seedPerName, uint64(r0+r)))
					for i := range x {
						if m.rows == 0 {
							x[i] = m.fill + float32(rng.NormFloat64()*0.01)
						} else {
							x[i] = float32(rng.NormFloat64() * 0.02)
						}
					}
					if err := compute.QuantizeRow(m.typ, x, buf[r*rb:(r+1)*rb]); err != nil {
						errs[wi] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		if _, err := out.Write(buf[:n*rb]); err != nil {
			return err
		}
	}
	return nil
}
