package server

import (
	"strings"
	"testing"
)

// TestChooseGGUF: the file a hf.co/OWNER/REPO[:TAG] name picks, or the
// user's error.
func TestChooseGGUF(t *testing.T) {
	bartowski := []string{".gitattributes", "README.md", "Llama-3.2-1B-Instruct-Q8_0.gguf", "Llama-3.2-1B-Instruct-Q4_K_M.gguf",
		"Llama-3.2-1B-Instruct-Q4_K_L.gguf", "Llama-3.2-1B-Instruct-IQ4_XS.gguf", "Llama-3.2-1B-Instruct-f16.gguf", "Llama-3.2-1B-Instruct-Q4_0.gguf"}
	ggmlorg := []string{"README.md", "gemma-3-4b-it-Q4_K_M.gguf", "gemma-3-4b-it-Q8_0.gguf", "mmproj-model-f16.gguf"}
	lower := []string{"qwen2.5-0.5b-instruct-q8_0.gguf", "qwen2.5-0.5b-instruct-q5_k_m.gguf", "qwen2.5-0.5b-instruct-fp16.gguf"}
	split := []string{"big-Q4_K_M-00001-of-00002.gguf", "big-Q4_K_M-00002-of-00002.gguf", "big-Q8_0.gguf"}
	unsloth := []string{"Qwen3-UD-Q4_K_XL.gguf", "Qwen3-Q4_K_M.gguf", "BF16/Qwen3-BF16-00001-of-00002.gguf", "BF16/Qwen3-BF16-00002-of-00002.gguf"}
	for _, tc := range []struct {
		name  string
		files []string
		tag   string
		want  string // the file, or "error: " and a part of the message
	}{
		{"no tag: Q4_K_M", bartowski, "", "Llama-3.2-1B-Instruct-Q4_K_M.gguf"},
		{"latest is no tag", bartowski, "latest", "Llama-3.2-1B-Instruct-Q4_K_M.gguf"},
		{"a tag", bartowski, "Q8_0", "Llama-3.2-1B-Instruct-Q8_0.gguf"},
		{"any case", bartowski, "q4_0", "Llama-3.2-1B-Instruct-Q4_0.gguf"},
		{"Q4_K is not Q4_K_M", bartowski, "Q4_K", "error: no Q4_K file; its quants: F16, IQ4_XS, Q4_0, Q4_K_L, Q4_K_M, Q8_0"},
		{"IQ", bartowski, "iq4_xs", "Llama-3.2-1B-Instruct-IQ4_XS.gguf"},
		{"F16", bartowski, "F16", "Llama-3.2-1B-Instruct-f16.gguf"},
		{"mmproj left out", ggmlorg, "F16", "error: no F16 file; its quants: Q4_K_M, Q8_0"},
		{"lower-case names", lower, "Q5_K_M", "qwen2.5-0.5b-instruct-q5_k_m.gguf"},
		{"no Q4_K_M: the first of the order", lower, "", "qwen2.5-0.5b-instruct-q5_k_m.gguf"},
		{"a split file is refused", split, "q4_k_m", "error: split in 2 parts"},
		{"its other parts are not listed", split, "Q2_K", "error: its quants: Q4_K_M, Q8_0"},
		{"unsloth's UD-", unsloth, "UD-Q4_K_XL", "Qwen3-UD-Q4_K_XL.gguf"},
		{"UD- found without it", unsloth, "q4_k_xl", "Qwen3-UD-Q4_K_XL.gguf"},
		{"a split file in a folder", unsloth, "BF16", "error: BF16/Qwen3-BF16-00001-of-00002.gguf is split in 2 parts"},
		{"no quant in the name", []string{"model.gguf", "README.md"}, "", "model.gguf"},
		{"no quant: listed by name", []string{"model.gguf"}, "Q4_0", "error: its quants: model.gguf"},
		{"model_Q4_K_M", []string{"model_Q4_K_M.gguf"}, "Q4_K_M", "model_Q4_K_M.gguf"},
		{"no GGUF", []string{"config.json", "model.safetensors"}, "", "error: acme/x has no GGUF file"},
		{"only a projector", []string{"mmproj-f16.gguf"}, "", "error: acme/x has no GGUF file"},
		{"two files of one quant", []string{"a-Q4_0.gguf", "b-Q4_0.gguf"}, "Q4_0", "error: several Q4_0 files (a-Q4_0.gguf, b-Q4_0.gguf)"},
	} {
		got, err := chooseGGUF("acme/x", tc.files, tc.tag)
		if want, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q, %v; want an error with %q", tc.name, got, err, want)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestChooseProjector: among a repository's mmproj files the F16 one is
// picked (llama-server's -hf), else the first by name; none: "".
func TestChooseProjector(t *testing.T) {
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{"gemma-3-4b-it-Q4_K_M.gguf", "mmproj-model-f16.gguf"}, "mmproj-model-f16.gguf"},
		{[]string{"m.gguf", "mmproj-BF16.gguf", "mmproj-F16.gguf", "mmproj-F32.gguf"}, "mmproj-F16.gguf"},
		{[]string{"m.gguf", "mmproj-Q8_0.gguf", "mmproj-BF16.gguf"}, "mmproj-BF16.gguf"},
		{[]string{"m.gguf", "README.md"}, ""},
	} {
		if got := ChooseProjector(tc.files); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.files, got, tc.want)
		}
	}
}
