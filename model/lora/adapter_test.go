package lora

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// adapterFile builds an adapter image: keys, then tensors name -> shape (F32 zeros).
func adapterFile(t *testing.T, kv map[string]any, tensors map[string][]int) *gguf.File {
	t.Helper()
	w := gguf.NewWriter(3)
	for k, v := range kv {
		w.SetKV(k, v)
	}
	for name, shape := range tensors {
		if err := w.AddTensor(name, compute.F32, shape, make([]byte, 4*shape[0]*shape[1])); err != nil {
			t.Fatal(err)
		}
	}
	f, err := w.Parse("adapter.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestAdapterFile: a well-formed adapter is read (pairs, alpha, scale as
// llama.cpp's get_scale); each kind of bad file is ErrAdapter naming the
// problem.
func TestAdapterFile(t *testing.T) {
	good := map[string]any{"general.type": "adapter", "adapter.type": "lora", "general.architecture": "llama", "adapter.lora.alpha": float32(16)}
	pair := map[string][]int{"blk.0.attn_q.weight.lora_a": {64, 8}, "blk.0.attn_q.weight.lora_b": {8, 32}}
	a, err := fromFile(adapterFile(t, good, pair))
	if err != nil {
		t.Fatal(err)
	}
	p := a.Weights["blk.0.attn_q.weight"]
	if a.Arch != "llama" || a.Alpha != 16 || p == nil || p.Rank() != 8 || p.Scale(a.Alpha, 0.5) != 1 || p.Scale(0, 0.5) != 0.5 {
		t.Errorf("read %+v, pair %+v", a, p)
	}
	w := &compute.Tensor{Name: "blk.0.attn_q.weight", Type: compute.F32, Shape: []int{64, 32}}
	lookup := func(name string) *compute.Tensor {
		if name == w.Name {
			return w
		}
		return nil
	}
	if err := a.Check("llama", lookup); err != nil {
		t.Errorf("Check: %v", err)
	}
	narrow := &compute.Tensor{Name: w.Name, Type: compute.F32, Shape: []int{48, 32}}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"other arch", a.Check("qwen2", lookup), `an adapter for "llama", the model is "qwen2"`},
		{"other width", a.Check("llama", func(string) *compute.Tensor { return narrow }), "is (32, 48), the adapter's update (32, 64)"},
		{"unknown weight", a.Check("llama", func(string) *compute.Tensor { return nil }), "no weight"},
	} {
		if !errors.Is(tc.err, ErrAdapter) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrAdapter with %q", tc.name, tc.err, tc.want)
		}
	}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		kv      map[string]any
		tensors map[string][]int
		want    string
	}{
		{"a model", with("general.type", "model"), pair, `general.type is "model"`},
		{"no type", with("general.type", nil), pair, `general.type is ""`},
		{"not lora", with("adapter.type", "control_vector"), pair, `adapter.type is "control_vector"`},
		{"alpha NaN", with("adapter.lora.alpha", float32(math.NaN())), pair, "adapter.lora.alpha"},
		{"alpha text", with("adapter.lora.alpha", "x"), pair, "adapter.lora.alpha"},
		{"alora", with("adapter.alora.invocation_tokens", []uint32{1, 2}), pair, "activated LoRA"},
		{"no tensors", good, nil, "no lora_a/lora_b tensors"},
		{"half a pair", good, map[string][]int{"blk.0.attn_q.weight.lora_a": {64, 8}}, "only one of lora_a and lora_b"},
		{"ranks differ", good, map[string][]int{"blk.0.attn_q.weight.lora_a": {64, 8}, "blk.0.attn_q.weight.lora_b": {4, 32}}, "lora_a has rank 8, lora_b 4"},
		{"stray tensor", good, map[string][]int{"blk.0.attn_q.weight": {64, 32}}, "neither NAME.lora_a nor NAME.lora_b"},
	} {
		_, err := fromFile(adapterFile(t, tc.kv, tc.tensors))
		if !errors.Is(err, ErrAdapter) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrAdapter with %q", tc.name, err, tc.want)
		}
	}
}
