package server

import (
	"maps"
	"slices"
)

// FallbackTemplate is the built-in template serve uses for a model that
// has no chat template of its own, as llama-server does.
const FallbackTemplate = "chatml"

// builtinTemplates are well-known chat formats by name (serve's
// --chat-template NAME). Formats whose models take no system role (llama2,
// mistral, gemma) put the system message in front of the first user
// message, as llama.cpp's built-in formats do.
var builtinTemplates = map[string]string{
	// ChatML: Qwen, SmolLM, Hermes, Yi, and the fallback.
	"chatml": `{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}`,

	// Llama 2 chat, as Meta's tokenizer_config.json writes it.
	"llama2": `{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}{%- set loop_messages = messages[1:] %}
{%- else %}{%- set system_message = '' %}{%- set loop_messages = messages %}{%- endif %}
{%- for message in loop_messages %}
{%- set content = message['content'] %}
{%- if loop.index0 == 0 and system_message != '' %}{%- set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + content %}{%- endif %}
{%- if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content | trim + ' [/INST]' }}
{%- elif message['role'] == 'assistant' %}{{ ' ' + content | trim + ' ' + eos_token }}{%- endif %}
{%- endfor %}`,

	// Llama 3 and 3.x instruct, without tools.
	"llama3": `{{- bos_token }}
{%- for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}
{%- if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}`,

	// Mistral 7B Instruct (v0.1-v0.3) and Mixtral.
	"mistral": `{{- bos_token }}
{%- set ns = namespace(system='') %}
{%- for message in messages %}
{%- if message['role'] == 'system' %}{%- set ns.system = ns.system + message['content'] + '\n\n' %}
{%- elif message['role'] == 'user' %}{{ '[INST] ' + ns.system + message['content'] + ' [/INST]' }}{%- set ns.system = '' %}
{%- elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{%- endif %}
{%- endfor %}`,

	// Gemma and Gemma 2 instruct.
	"gemma": `{{- bos_token }}
{%- set ns = namespace(system='') %}
{%- for message in messages %}
{%- if message['role'] == 'system' %}{%- set ns.system = ns.system + message['content'] | trim + '\n\n' %}
{%- else %}
{%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}
{{- '<start_of_turn>' + role + '\n' + ns.system + message['content'] | trim + '<end_of_turn>\n' }}{%- set ns.system = '' %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{%- endif %}`,

	// Gemma 3 instruct: google/gemma-3-*-it's own template (tokenizer_config.json),
	// which folds a system message into the first user turn and raises when
	// the roles do not alternate.
	"gemma3": `{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '

' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '

' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '
' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>
' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model
'}}
{%- endif -%}
`,

	// Phi-4 (14B), as llama.cpp's built-in phi4.
	"phi4": `{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + '<|im_end|>' }}{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{%- endif %}`,

	// Phi-4-mini instruct without tools: Phi-3's tags without the newlines.
	"phi4-mini": `{%- for message in messages %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{%- endfor %}
{%- if add_generation_prompt %}{{ '<|assistant|>' }}{%- else %}{{ eos_token }}{%- endif %}`,

	// Phi-3 and Phi-3.5 instruct.
	"phi3": `{%- for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{ '<|assistant|>\n' }}{%- else %}{{ eos_token }}{%- endif %}`,

	// Zephyr (HuggingFaceH4/zephyr-7b-beta).
	"zephyr": `{%- for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{ '<|assistant|>\n' }}{%- endif %}`,

	// Vicuna v1.1 and later.
	"vicuna": `{%- for message in messages %}
{%- if message['role'] == 'system' %}{{ message['content'] + '\n' }}
{%- elif message['role'] == 'user' %}{{ 'USER: ' + message['content'] + '\n' }}
{%- elif message['role'] == 'assistant' %}{{ 'ASSISTANT: ' + message['content'] + eos_token + '\n' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{ 'ASSISTANT:' }}{%- endif %}`,
}

// BuiltinTemplate returns the Jinja source of the built-in chat template
// called name.
func BuiltinTemplate(name string) (string, bool) {
	src, ok := builtinTemplates[name]
	return src, ok
}

// BuiltinTemplateNames lists the built-in chat templates, sorted.
func BuiltinTemplateNames() []string { return slices.Sorted(maps.Keys(builtinTemplates)) }
