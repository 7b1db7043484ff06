package server

import (
	"testing"

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
		"phi3":    "<|system|>\nS<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nYo<|end|>\n<|user|>\nQ<|end|>\n<|assistant|>\n",
		"vicuna":  "S\nUSER: Hi\nASSISTANT: Yo</s>\nUSER: Q\nASSISTANT:",
		"zephyr":  "<|system|>\nS</s>\n<|user|>\nHi</s>\n<|assistant|>\nYo</s>\n<|user|>\nQ</s>\n<|assistant|>\n",
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
