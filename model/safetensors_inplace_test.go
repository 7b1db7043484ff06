package model_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model"
)

// hfTensorName maps the GGUF tensor names loadWeights asks for to a Hugging
// Face checkpoint's (the inverse of model's hfNames).
func hfTensorName(name string) string {
	switch name {
	case "token_embd.weight":
		return "model.embed_tokens.weight"
	case "output_norm.weight":
		return "model.norm.weight"
	case "output.weight":
		return "lm_head.weight"
	}
	var layer int
	var rest string
	if _, err := fmt.Sscanf(name, "blk.%d.%s", &layer, &rest); err != nil {
		return ""
	}
	part, suffix, _ := strings.Cut(rest, ".")
	hf := map[string]string{
		"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
		"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
		"attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
		"ffn_down": "mlp.down_proj",
	}[part]
	if hf == "" {
		return ""
	}
	return fmt.Sprintf("model.layers.%d.%s.%s", layer, hf, suffix)
}

// writeHFDir writes the llama GGUF model at src as a Hugging Face directory
// (config.json and one model.safetensors) in dir, tensors in their GGUF
// types, q and k rows put back in rotate-half order (undoing the GGUF
// converter's permutation).
func writeHFDir(src, dir string) error {
	m, f, err := model.LoadGGUF(src)
	if err != nil {
		return err
	}
	defer m.Close()
	c := &m.Config
	if c.Arch != "llama" {
		return fmt.Errorf("%s: arch %s, want llama", src, c.Arch)
	}
	cfg := map[string]any{
		"model_type": "llama", "architectures": []string{"LlamaForCausalLM"},
		"hidden_size": c.Dim, "intermediate_size": c.FFNDim, "num_attention_heads": c.Heads,
		"num_hidden_layers": c.Layers, "num_key_value_heads": c.KVHeads, "head_dim": c.HeadDim,
		"rms_norm_eps": c.NormEps, "rope_theta": c.RopeBase, "vocab_size": c.VocabSize,
		"max_position_embeddings": c.ContextLen, "tie_word_embeddings": c.TiedOutput,
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		return err
	}
	dtypes := map[compute.DType]string{compute.F32: "F32", compute.F16: "F16", compute.BF16: "BF16"}
	type entry struct {
		name  string
		t     *compute.Tensor
		heads int // > 0: permute rows back from GGUF's q/k order
	}
	var entries []entry
	for _, ti := range f.Tensors() {
		hf := hfTensorName(ti.Name)
		if hf == "" {
			continue
		}
		t, err := f.Tensor(ti.Name)
		if err != nil {
			return err
		}
		if _, ok := dtypes[t.Type]; !ok {
			return fmt.Errorf("%s: tensor %s of type %v", src, ti.Name, t.Type)
		}
		e := entry{name: hf, t: t}
		switch {
		case strings.HasSuffix(ti.Name, "attn_q.weight"):
			e.heads = c.Heads
		case strings.HasSuffix(ti.Name, "attn_k.weight"):
			e.heads = c.KVHeads
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for _, e := range entries {
		shape := slices.Clone(e.t.Shape)
		slices.Reverse(shape)
		hdr[e.name] = map[string]any{"dtype": dtypes[e.t.Type], "shape": shape, "data_offsets": []int{off, off + len(e.t.Data)}}
		off += len(e.t.Data)
	}
	hj, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	out, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return err
	}
	defer out.Close()
	if err := binary.Write(out, binary.LittleEndian, uint64(len(hj))); err != nil {
		return err
	}
	if _, err := out.Write(hj); err != nil {
		return err
	}
	for _, e := range entries {
		data := e.t.Data
		if e.heads > 0 { // GGUF row h·hd + 2i + s holds HF row h·hd + s·hd/2 + i
			rb, hd := e.t.RowBytes(), e.t.Rows()/e.heads
			data = make([]byte, len(e.t.Data))
			for h := range e.heads {
				for i := range hd / 2 {
					for s := range 2 {
						g, r := h*hd+2*i+s, h*hd+s*hd/2+i
						copy(data[r*rb:(r+1)*rb], e.t.Data[g*rb:(g+1)*rb])
					}
				}
			}
		}
		if _, err := out.Write(data); err != nil {
			return err
		}
	}
	return out.Close()
}

// TestSafetensorsInPlace writes the F16 and BF16 synthetic GGUF models as
// Hugging Face directories and checks that loading one copies no weight
// matrix (each is a view of the mapped file) and that it computes the
// GGUF model's logits.
func TestSafetensorsInPlace(t *testing.T) {
	for _, typ := range []string{"F16", "BF16"} {
		t.Run(typ, func(t *testing.T) {
			src := filepath.Join(modelsDir(t), "synthetic", "synth-llama-tiny256-"+typ+".gguf")
			dir := t.TempDir()
			if err := writeHFDir(src, dir); err != nil {
				t.Fatal(err)
			}
			m, st, err := model.LoadSafetensors(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			// The file's mapped bytes: every matrix must lie inside them.
			fi, err := os.Stat(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			emb, err := st.Tensor("model.embed_tokens.weight")
			if err != nil {
				t.Fatal(err)
			}
			info, err := st.Info("model.embed_tokens.weight")
			if err != nil {
				t.Fatal(err)
			}
			start := uintptr(unsafe.Pointer(&emb.Data[0])) - uintptr(fileOffset(t, dir, info.Name))
			inFile := func(name string, w *compute.Tensor) {
				p := uintptr(unsafe.Pointer(&w.Data[0]))
				if p < start || p+uintptr(len(w.Data)) > start+uintptr(fi.Size()) {
					t.Errorf("%s: data at %#x is not in the mapped file [%#x, %#x)", name, p, start, start+uintptr(fi.Size()))
				}
			}
			wts := m.Weights
			inFile("token_embd", wts.TokEmbd)
			inFile("output", wts.Output)
			for i, l := range wts.Layers {
				for j, w := range []*compute.Tensor{l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down} {
					inFile(fmt.Sprintf("layer %d matrix %d", i, j), w)
				}
			}

			g, _, err := model.LoadGGUF(src)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			ids := []int32{1, 400, 3, 77, 100, 5, 9, 250, 31, 64, 12, 300}
			want := teacherForced(t, g, 5, ids)
			got := teacherForced(t, m, 5, ids)
			vocab := m.Config.VocabSize
			var worst float64
			for r := range len(want) / vocab {
				row := want[r*vocab : (r+1)*vocab]
				std := stdDev(row)
				for i, v := range row {
					worst = max(worst, math.Abs(float64(got[r*vocab+i]-v))/std)
				}
			}
			t.Logf("max |Δ|/std against the GGUF model: %.2e", worst)
			if worst > 1e-4 {
				t.Errorf("logits differ from the GGUF model's by %.2e of their spread", worst)
			}
		})
	}
}

// fileOffset returns where tensor name's data starts in dir's
// model.safetensors.
func fileOffset(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint64(b))
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var e struct {
		Offsets []int `json:"data_offsets"`
	}
	if err := json.Unmarshal(hdr[name], &e); err != nil {
		t.Fatal(err)
	}
	return 8 + n + e.Offsets[0]
}

// TestWriteHFDir writes a Hugging Face directory from a llama GGUF file, for
// measurements by hand: TROUPE_HF_FROM_GGUF=src.gguf:dir go test ./model -run TestWriteHFDir
func TestWriteHFDir(t *testing.T) {
	arg := os.Getenv("TROUPE_HF_FROM_GGUF")
	if arg == "" {
		t.Skip("set TROUPE_HF_FROM_GGUF=src.gguf:dir to write a directory")
	}
	src, dir, ok := strings.Cut(arg, ":")
	if !ok {
		t.Fatalf("TROUPE_HF_FROM_GGUF=%q, want src.gguf:dir", arg)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeHFDir(src, dir); err != nil {
		t.Fatal(err)
	}
}
