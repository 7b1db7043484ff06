package chat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostile are templates that would run for hours or build gigabytes
// without the render's limits; each must fail with the limit it hits.
var hostile = []struct{ name, src, kind string }{
	{"nested loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, "RuntimeError"},
	{"exponential macro", `{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}`, "RuntimeError"},
	{"repeat", `{{ "x" * 1000000000000 }}`, "MemoryError"},
	{"doubling", `{% set ns = namespace(s="xx") %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}`, "MemoryError"},
	{"concat doubling", `{% set ns = namespace(s="xx") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`, "MemoryError"},
	{"join", `{{ range(100000)|join("y" * 1000000) }}`, "MemoryError"},
	{"replace", `{{ ("x" * 1000000)|replace("x", "y" * 1000) }}`, "MemoryError"},
	{"indent", `{{ ("\n" * 1000000)|indent(1000) }}`, "MemoryError"},
	{"format", `{{ ("%(a)999999s" * 100)|format(a=1) }}`, "MemoryError"},
	{"output", `{% for i in range(100000) %}{{ "z" * 1000 }}{% endfor %}`, "MemoryError"},
	{"set block", `{% set x %}{% for i in range(100000) %}{{ "z" * 1000 }}{% endfor %}{% endset %}`, "MemoryError"},
}

// TestHostileTemplates renders each hostile template: an error naming its
// limit, never a hang or an out-of-memory crash.
func TestHostileTemplates(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			tpl, err := Parse(h.src)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			out, err := tpl.Render(nil, Options{})
			var re *RenderError
			if !errors.As(err, &re) || !strings.Contains(re.Msg, h.kind) {
				t.Fatalf("got %d bytes, error %v; want a %s", len(out), err, h.kind)
			}
		})
	}
}

// FuzzRender parses and renders arbitrary template sources over a short
// conversation: never a panic, and the output stays within maxString
// whatever the source does (the seeds include every hostile template and
// the real models' templates).
func FuzzRender(f *testing.F) {
	for _, h := range hostile {
		f.Add(h.src)
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "models", "templates", "*.jinja"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(string(b))
		}
	}
	f.Add(`{% for m in messages %}{{ m.role }}: {{ m.content|trim }}{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}`)
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi {{ there }} %s"}}
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := Parse(src)
		if err != nil {
			return
		}
		out, _ := tpl.Render(msgs, Options{AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: "</s>"})
		if len(out) > maxString {
			t.Fatalf("%q rendered %d bytes", src, len(out))
		}
	})
}
