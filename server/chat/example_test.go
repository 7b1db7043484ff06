package chat_test

import (
	"fmt"

	"github.com/troupe-llm/troupe/server/chat"
)

func ExampleTemplate_Render() {
	// SmolLM2's template, as its tokenizer_config.json holds it.
	tpl, err := chat.Parse("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}" +
		"{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}" +
		"{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}" +
		"{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, err := tpl.Render([]chat.Message{{Role: "user", Content: "Hello!"}}, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(prompt)
	// Output:
	// <|im_start|>system
	// You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>
	// <|im_start|>user
	// Hello!<|im_end|>
	// <|im_start|>assistant
}
