package troupetest

import (
	"fmt"

	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/model/gguf"
)

// The special tokens of the tiny model's vocabulary, after its 256 byte
// tokens.
const (
	endOfText = 256 + iota // <|endoftext|>
	imStart                // <|im_start|>
	imEnd                  // <|im_end|>: the end of a turn, the model's EOS
	vocabSize
)

// TinyShape is the shape WriteTinyModel writes: a two-layer llama, 64 wide.
var TinyShape = synth.Shape{Name: "troupe-tiny", Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128,
	Vocab: vocabSize, Context: 2048, RopeBase: 10000, NormEps: 1e-5}

// TinyTemplate is the tiny model's chat template: ChatML, with tools
// offered in the system turn and calls written as Hermes and Qwen write
// them (<tool_call>{"name": ..., "arguments": ...}</tool_call>), answered
// in <tool_response> blocks.
const TinyTemplate = `{%- if tools %}<|im_start|>system
{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}

{% endif %}# Tools

You may call functions. Their signatures are within <tools></tools>:
<tools>{% for tool in tools %}
{{ tool | tojson }}{% endfor %}
</tools>
Return each call within <tool_call></tool_call> tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0]['role'] == 'system' %}<|im_start|>system
{{ messages[0]['content'] }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message['role'] == 'tool' %}<|im_start|>user
<tool_response>
{{ message['content'] }}
</tool_response><|im_end|>
{% elif message['role'] != 'system' %}<|im_start|>{{ message['role'] }}
{% if message['content'] %}{{ message['content'] }}{% endif %}
{%- if message['tool_calls'] %}{% for call in message['tool_calls'] %}
<tool_call>
{"name": "{{ call['function']['name'] }}", "arguments": {{ call['function']['arguments'] | tojson }}}
</tool_call>{% endfor %}{% endif %}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

// WriteTinyModel writes a tiny random-weight GGUF model to path: TinyShape
// in F32, with weights drawn from seed (the same file for the same seed), a
// byte-level BPE vocabulary of 259 tokens (every byte, <|endoftext|>,
// <|im_start|>, <|im_end|>) and TinyTemplate. It takes a few hundred KiB
// and loads in milliseconds; its output is meaningless but runs every path
// a real model's does, embeddings included.
func WriteTinyModel(path string, seed uint64) error {
	vocab, err := tinyVocab()
	if err != nil {
		return err
	}
	ft, _ := synth.LookupFileType("F32")
	if _, err := synth.WriteFile(path, synth.Options{Shape: TinyShape, Type: ft, Vocab: vocab, Seed: seed, Workers: 1}); err != nil {
		return fmt.Errorf("troupetest: %w", err)
	}
	return nil
}

// TinyVocabSize is the tiny model's vocabulary size, and TinyEOS the
// token that ends its turn (<|im_end|>): a Script's for it is
// NewScript(TinyVocabSize, TinyEOS).
const (
	TinyVocabSize       = vocabSize
	TinyEOS       int32 = imEnd
)

// tinyVocab is the tokenizer.* keys of the tiny model, as a parsed GGUF
// file for synth.Write to copy.
func tinyVocab() (*gguf.File, error) {
	tokens := make([]string, 0, vocabSize)
	types := make([]int32, 0, vocabSize)
	for _, r := range byteRunes() {
		tokens = append(tokens, string(r))
		types = append(types, 1) // normal
	}
	tokens = append(tokens, "<|endoftext|>", "<|im_start|>", "<|im_end|>")
	types = append(types, 3, 3, 3) // control
	w := gguf.NewWriter(3)
	w.SetKV("general.architecture", "llama")
	w.SetKV("tokenizer.ggml.model", "gpt2")
	w.SetKV("tokenizer.ggml.pre", "qwen2")
	w.SetKV("tokenizer.ggml.tokens", tokens)
	w.SetKV("tokenizer.ggml.token_type", types)
	w.SetKV("tokenizer.ggml.merges", []string{}) // no merges: one token per byte (the family requires the key)
	w.SetKV("tokenizer.ggml.bos_token_id", uint32(endOfText))
	w.SetKV("tokenizer.ggml.eos_token_id", uint32(imEnd))
	w.SetKV("tokenizer.ggml.padding_token_id", uint32(endOfText))
	w.SetKV("tokenizer.ggml.add_bos_token", false)
	w.SetKV("tokenizer.chat_template", TinyTemplate)
	f, err := w.Parse("troupe-tiny-vocab")
	if err != nil {
		return nil, fmt.Errorf("troupetest: vocabulary: %w", err)
	}
	return f, nil
}

// byteRunes is GPT-2's bytes_to_unicode: the printable character that
// stands for each byte in a byte-level BPE vocabulary, in byte order.
func byteRunes() []rune {
	out := make([]rune, 256)
	next := rune(256)
	for b := range 256 {
		switch {
		case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE:
			out[b] = rune(b)
		default:
			out[b] = next
			next++
		}
	}
	return out
}
