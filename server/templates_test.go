package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/server/chat"
)

// TestBuiltinTemplates renders each built-in chat template: a conversation
// with a system message, and one without, against the format's published
// layout (BOS <s>, EOS </s>).
func TestBuiltinTemplates(t *testing.T) {
	conv := []chat.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Yo"}, {Role: "user", Content: "Q"}}
	want := map[string]string{
		"chatml": "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nYo<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n",
		"gemma":  "<s><start_of_turn>user\nS\n\nHi<end_of_turn>\n<start_of_turn>model\nYo<end_of_turn>\n<start_of_turn>user\nQ<end_of_turn>\n<start_of_turn>model\n",
		"llama2": "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nHi [/INST] Yo </s><s>[INST] Q [/INST]",
		"llama3": "<s><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>" +
			"<|start_header_id|>assistant<|end_header_id|>\n\nYo<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nQ<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		"mistral": "<s>[INST] S\n\nHi [/INST]Yo</s>[INST] Q [/INST]",
		"gemma3":  "<s><start_of_turn>user\nS\n\nHi<end_of_turn>\n<start_of_turn>model\nYo<end_of_turn>\n<start_of_turn>user\nQ<end_of_turn>\n<start_of_turn>model\n",
		"phi4": "<|im_start|>system<|im_sep|>S<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|><|im_start|>assistant<|im_sep|>Yo<|im_end|>" +
			"<|im_start|>user<|im_sep|>Q<|im_end|><|im_start|>assistant<|im_sep|>",
		"phi4-mini": "<|system|>S<|end|><|user|>Hi<|end|><|assistant|>Yo<|end|><|user|>Q<|end|><|assistant|>",
		"phi3":      "<|system|>\nS<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nYo<|end|>\n<|user|>\nQ<|end|>\n<|assistant|>\n",
		"vicuna":    "S\nUSER: Hi\nASSISTANT: Yo</s>\nUSER: Q\nASSISTANT:",
		"zephyr":    "<|system|>\nS</s>\n<|user|>\nHi</s>\n<|assistant|>\nYo</s>\n<|user|>\nQ</s>\n<|assistant|>\n",
	}
	names := BuiltinTemplateNames()
	if len(names) != len(want) {
		t.Errorf("built-in templates %v; the test knows %d", names, len(want))
	}
	if _, ok := BuiltinTemplate(FallbackTemplate); !ok {
		t.Errorf("the fallback %q is not a built-in template", FallbackTemplate)
	}
	o := chat.Options{AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: "</s>"}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			src, _ := BuiltinTemplate(name)
			tmpl, err := chat.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(conv, o)
			if err != nil || got != want[name] {
				t.Errorf("rendered %q (%v)\nwant     %q", got, err, want[name])
			}
			if got, err := tmpl.Render(conv[1:2], o); err != nil || got == "" {
				t.Errorf("without a system message: %q, %v", got, err)
			}
		})
	}
}

// TestBuiltinTemplatesMatchModels: a built-in template renders as the
// model templates of its format do (ChatML as SmolLM2's and Qwen2.5's with
// a system message, gemma as Gemma 2's, phi3 as Phi-3.5's), with and
// without the generation prompt.
func TestBuiltinTemplatesMatchModels(t *testing.T) {
	conv := []chat.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Yo"}, {Role: "user", Content: "Q"}}
	for _, tc := range []struct {
		builtin, file string
		msgs          []chat.Message
	}{
		{"chatml", "HuggingFaceTB-SmolLM2-135M-Instruct.jinja", conv},
		{"chatml", "Qwen-Qwen2.5-7B-Instruct.jinja", conv},
		{"gemma", "google-gemma-2-2b-it.jinja", conv[1:]}, // Gemma's own refuses a system message
		{"phi3", "microsoft-Phi-3.5-mini-instruct.jinja", conv},
	} {
		src, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "templates", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		model, err := chat.Parse(string(src))
		if err != nil {
			t.Fatal(err)
		}
		builtin, _ := BuiltinTemplate(tc.builtin)
		ours, err := chat.Parse(builtin)
		if err != nil {
			t.Fatal(err)
		}
		for _, gen := range []bool{true, false} {
			o := chat.Options{AddGenerationPrompt: gen, BOSToken: "<s>", EOSToken: "</s>"}
			want, err1 := model.Render(tc.msgs, o)
			got, err2 := ours.Render(tc.msgs, o)
			if err1 != nil || err2 != nil || got != want {
				t.Errorf("%s (generation prompt %v): %q (%v)\n%s: %q (%v)", tc.builtin, gen, got, err2, tc.file, want, err1)
			}
		}
	}
}

// TestBuiltinGemma3IsGolden: the gemma3 built-in is Gemma 3's own template,
// the one server/chat's golden-families.json renders as jinja2 does.
func TestBuiltinGemma3IsGolden(t *testing.T) {
	data, err := os.ReadFile("chat/testdata/golden-families.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Templates map[string]struct{ Source string } `json:"templates"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	want := g.Templates["google-gemma-3-it"].Source
	if got, _ := BuiltinTemplate("gemma3"); want == "" || got != want {
		t.Errorf("the gemma3 built-in differs from golden-families.json's Gemma 3 template")
	}
}
