package chat

import (
	"strings"
	"testing"
)

// TestContinueFinal: the rendered chat is cut after the final message's
// content, as transformers does: its leading space trimmed, its trailing
// space kept when the template kept it, the last place it appears.
func TestContinueFinal(t *testing.T) {
	for _, tc := range []struct {
		out, final, want string
		ok               bool
	}{
		{"<u>hi</u><a>Once upon</a>\n", "Once upon", "<u>hi</u><a>Once upon", true},
		{"<a>Once upon </a>", "Once upon ", "<a>Once upon ", true}, // the template kept the space
		{"<a>Once upon</a>", "Once upon  ", "<a>Once upon", true},  // it trimmed it
		{"<a> x</a><a>x</a>", " x", "<a> x</a><a>x", true},         // the last place
		{"<u>hi</u><a>HELLO</a>", "hello", "", false},              // the template changed it
		{"<a>ok</a>", "", "<a>ok</a>", true},                       // as Python's rindex("")
	} {
		got, err := continueFinal(tc.out, tc.final)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("continueFinal(%q, %q) = %q, %v; want %q (ok %v)", tc.out, tc.final, got, err, tc.want, tc.ok)
		}
	}
}

func TestRenderContinueFinalMessage(t *testing.T) {
	tpl, err := Parse(`{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}`)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: " Once upon "}}
	got, err := tpl.Render(msgs, Options{ContinueFinalMessage: true})
	if want := "<|user|>Hi<|end|><|assistant|>Once upon"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if _, err := tpl.Render(msgs, Options{ContinueFinalMessage: true, AddGenerationPrompt: true}); err == nil || !strings.Contains(err.Error(), "add_generation_prompt") {
		t.Errorf("both set: error %v", err)
	}
}
