package chat

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// big is a template prelude: s, a string of 4 MB (under the value cap).
const big = `{% set s = "x" * 4000000 %}`

// hostile are templates that would run for hours or build gigabytes
// without the render's budget; each must fail with the budget it exceeds.
var hostile = []struct{ name, src, resource string }{
	{"nested loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, "steps"},
	{"exponential macro", `{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}`, "steps"},
	{"repeat", `{{ "x" * 1000000000000 }}`, "value"},
	{"repeat 10**9", `{{ "x" * 10**9 }}`, "value"},
	{"doubling", `{% set ns = namespace(s="xx") %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}`, "value"},
	{"concat doubling", `{% set ns = namespace(s="xx") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`, "value"},
	{"join", `{{ range(100000)|join("y" * 1000000) }}`, "value"},
	{"replace", `{{ ("x" * 1000000)|replace("x", "y" * 1000) }}`, "value"},
	{"indent", `{{ ("\n" * 1000000)|indent(1000) }}`, "value"},
	{"format", `{{ ("%(a)999999s" * 100)|format(a=1) }}`, "value"},
	{"output", `{% for i in range(100000) %}{{ "z" * 1000 }}{% endfor %}`, "value"},
	{"set block", `{% set x %}{% for i in range(100000) %}{{ "z" * 1000 }}{% endfor %}{% endset %}`, "value"},
	// Each step below stays under the value cap; their sum is the cost.
	{"copy in a loop", big + `{% for i in range(100000) %}{% set t = s ~ "" %}{% endfor %}`, "memory"},
	{"compare in a loop", big + `{% for i in range(100000) %}{% if s == s %}{% endif %}{% endfor %}`, "work"},
	{"index in a loop", big + `{% for i in range(100000) %}{% set c = s[0] %}{% endfor %}`, "work"},
	{"method in a loop", big + `{% for i in range(100000) %}{% set c = s.upper() %}{% endfor %}`, "memory"},
	{"big ranges", `{% for i in range(100000) %}{% set r = range(100000) %}{% endfor %}`, "memory"},
	{"nested joins", big + `{% for i in range(100000) %}{% set j = [[s]|join, s]|join %}{% endfor %}`, "memory"},
	{"tojson in a loop", big + `{% for i in range(100000) %}{% set j = s|tojson %}{% endfor %}`, "memory"},
	{"macro output", big + `{% macro f() %}{{ s }}{% endmacro %}{% for i in range(100000) %}{% set j = f() %}{% endfor %}`, "memory"},
	{"list growth", `{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}`, "memory"},
	// One step that would build gigabytes from values under the cap.
	{"repr of refs", big + `{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = ns.l + [s] %}{% endfor %}{{ ns.l }}`, "value"},
	{"tojson of refs", big + `{{ [s, s, s]|tojson }}`, "value"},
	{"join method", big + `{{ "".join([s, s, s]) }}`, "value"},
	{"replace method", `{{ ("x" * 1000000).replace("x", "y" * 1000) }}`, "value"},
	{"format method", big + `{{ "{0}{0}{0}".format(s) }}`, "value"},
	{"tojson indent", `{{ [1]|tojson(indent=10**12) }}`, "value"},
}

// TestHostileTemplates renders each hostile template: a *BudgetError
// naming the budget it exceeded, never a hang or an out-of-memory crash.
func TestHostileTemplates(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			tpl, err := Parse(h.src)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			out, err := tpl.Render(nil, Options{})
			var be *BudgetError
			if !errors.As(err, &be) || be.Resource != h.resource {
				t.Fatalf("got %d bytes, error %v; want the %s budget exceeded", len(out), err, h.resource)
			}
			if !strings.Contains(err.Error(), "the chat template exceeded its "+h.resource+" budget") {
				t.Errorf("message %q", err)
			}
		})
	}
}

// TestBigRequestIsNotTheTemplates renders a conversation whose own
// content passes the value cap: a MemoryError the request caused (a
// *RenderError, the request's fault), not the template's budget.
func TestBigRequestIsNotTheTemplates(t *testing.T) {
	tpl := mustParse(t, `{% for m in messages %}{{ m.content }}{{ m.content }}{% endfor %}`)
	_, err := tpl.Render([]Message{{Role: "user", Content: strings.Repeat("x", maxString/2+1)}}, Options{})
	var re *RenderError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "MemoryError") || errors.As(err, new(*BudgetError)) {
		t.Fatalf("got %v; want a MemoryError", err)
	}
}

// TestBudgetFitsRealTemplates renders every golden template on every
// golden conversation, as it is and with each message's content repeated
// 2000 times (about 270 KB): none exceeds its budget, and none spends
// more than half the allowance per input byte.
func TestBudgetFitsRealTemplates(t *testing.T) {
	for _, file := range []string{"golden.json", "golden-more.json", "golden-families.json", "golden-harmony.json"} {
		g := loadGoldenFile(t, file)
		for name, src := range g.Templates {
			tpl, err := Parse(src.Source)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for conv, c := range g.Conversations {
				for _, times := range []int{1, 2000} {
					msgs := slices.Clone(c.Messages)
					for i := range msgs {
						msgs[i].Content = strings.Repeat(msgs[i].Content, times)
					}
					_, b, err := tpl.renderBudget(msgs, g.options(conv, time.Now()), tpl.objectArguments)
					if errors.As(err, new(*BudgetError)) {
						t.Fatalf("%s on %s ×%d: %v", name, conv, times, err)
					}
					work, mem := b.workMax-b.work, b.memMax-b.memory
					if times > 1 && (work > workPerInputByte/2*int64(b.input) || mem > memoryPerInputByte/2*int64(b.input)) {
						t.Errorf("%s on %s ×%d: %d input bytes cost %d of work and %d of memory", name, conv, times, b.input, work, mem)
					}
				}
			}
		}
	}
}

// FuzzRender parses and renders arbitrary template sources over a short
// conversation: never a panic, and the output stays within maxString
// whatever the source does (the seeds include every hostile template and
// the real models' templates).
func FuzzRender(f *testing.F) {
	for _, h := range hostile {
		// Only the one-step blow-ups seed the fuzzer. The loops cut by the
		// step, work or memory bound take up to seconds each (gonja's calls
		// through reflection), and under fuzzing's coverage on a loaded
		// machine their workers were lost as hung (the step-bound ones) or
		// ended with exit status 2 ("method in a loop"); TestHostileTemplates
		// runs every one of them.
		if h.resource == "value" && !strings.Contains(h.src, "{% for") {
			f.Add(h.src)
		}
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
