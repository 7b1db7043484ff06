package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// golden is testdata/golden.json, written by scripts/chat-template-golden.py:
// Python jinja2's renderings of every template in ../shared/models/templates
// on a set of conversations.
type golden struct {
	BOSToken      string    `json:"bos_token"`
	EOSToken      string    `json:"eos_token"`
	Now           string    `json:"now"`
	now           time.Time // Now parsed
	Conversations map[string]struct {
		Messages            []Message                  `json:"messages"`
		Tools               []json.RawMessage          `json:"tools"`
		AddGenerationPrompt bool                       `json:"add_generation_prompt"`
		Kwargs              map[string]json.RawMessage `json:"chat_template_kwargs"`
	} `json:"conversations"`
	Templates map[string]struct {
		Source          string `json:"source"`
		ObjectArguments bool   `json:"object_arguments"`
	} `json:"templates"`
	Cases []struct {
		Template     string  `json:"template"`
		Conversation string  `json:"conversation"`
		Expected     *string `json:"expected"`
		Error        string  `json:"error"`
	} `json:"cases"`
	ConstructMessages []Message `json:"construct_messages"`
	Constructs        []struct {
		Source   string  `json:"source"`
		Expected *string `json:"expected"`
		Error    string  `json:"error"`
	} `json:"constructs"`
}

func loadGolden(t *testing.T) *golden { return loadGoldenFile(t, "golden.json") }

// loadGoldenFile reads testdata/name, a file of chat-template-golden.py's.
func loadGoldenFile(t *testing.T, name string) *golden {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) == 0 || len(g.Templates) == 0 {
		t.Fatalf("%s has no cases", name)
	}
	if g.Now != "" {
		if g.now, err = time.Parse("2006-01-02T15:04:05", g.Now); err != nil {
			t.Fatal(err)
		}
	}
	return &g
}

// options are the render options of conversation conv, as Python's
// rendering had them.
func (g *golden) options(conv string, now time.Time) Options {
	c := g.Conversations[conv]
	o := Options{
		AddGenerationPrompt: c.AddGenerationPrompt,
		BOSToken:            g.BOSToken,
		EOSToken:            g.EOSToken,
		Now:                 func() time.Time { return now },
	}
	for _, tool := range c.Tools {
		o.Tools = append(o.Tools, tool)
	}
	if c.Kwargs != nil {
		o.Extra = map[string]any{}
		for k, v := range c.Kwargs {
			o.Extra[k] = v
		}
	}
	return o
}

// checkRendering compares Render's result with Python's: the same text, or
// an error where Python raised (with the message, for raise_exception).
func checkRendering(t *testing.T, got string, err error, expected *string, pyError string) {
	t.Helper()
	switch {
	case expected == nil && err == nil:
		t.Fatalf("Python raised %q; Render returned\n%s", pyError, got)
	case expected == nil:
		var te *TemplateError
		if msg, ok := strings.CutPrefix(pyError, "TemplateError: "); ok && (!errors.As(err, &te) || te.Message != msg) {
			t.Fatalf("Python raised %q; Render: %v", pyError, err)
		}
	case err != nil:
		t.Fatalf("Render: %v", err)
	case got != *expected:
		t.Fatalf("rendering differs from Python's\n%s", diff(*expected, got))
	}
}

// TestGolden renders every golden case and compares with Python's output
// byte for byte; where Python raised, Render must fail too.
func TestGolden(t *testing.T) {
	g := loadGolden(t)
	parsed := map[string]*Template{}
	for name, tpl := range g.Templates {
		p, err := Parse(tpl.Source)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.objectArguments != tpl.ObjectArguments {
			t.Errorf("%s: object arguments %v, Python's probe found %v", name, p.objectArguments, tpl.ObjectArguments)
		}
		parsed[name] = p
	}
	matched := 0
	for _, c := range g.Cases {
		t.Run(c.Template+"/"+c.Conversation, func(t *testing.T) {
			tpl := parsed[c.Template]
			if tpl == nil {
				t.Fatal("template did not parse")
			}
			got, err := tpl.Render(g.Conversations[c.Conversation].Messages, g.options(c.Conversation, g.now))
			checkRendering(t, got, err, c.Expected, c.Error)
			matched++
		})
	}
	t.Logf("%d of %d template × conversation cases match Python's jinja2 (%d templates)",
		matched, len(g.Cases), len(g.Templates))
}

// knownDivergent are constructs gonja's parser cannot express: its tree for
// a chained comparison is the same as for (a < b) < c, so a < b < c is
// evaluated as the latter, not as Python's a < b and b < c.
var knownDivergent = map[string]string{
	"{{ 3 > 2 > 1 }}": "chained comparison",
}

// TestConstructs renders small templates, a few jinja2 constructs each, and
// compares with Python's output.
func TestConstructs(t *testing.T) {
	g := loadGolden(t)
	matched := 0
	for i, c := range g.Constructs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if why, ok := knownDivergent[c.Source]; ok {
				t.Skipf("known divergence (%s): %s", why, c.Source)
			}
			tpl, err := Parse(c.Source)
			if err != nil {
				t.Fatalf("%s\n%v", c.Source, err)
			}
			got, err := tpl.Render(g.ConstructMessages, Options{
				BOSToken: g.BOSToken, EOSToken: g.EOSToken, Now: func() time.Time { return g.now },
			})
			t.Log(c.Source)
			checkRendering(t, got, err, c.Expected, c.Error)
			matched++
		})
	}
	t.Logf("%d of %d constructs match Python's jinja2", matched, len(g.Constructs))
}

// diff shows where got first departs from want.
func diff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("first difference at byte %d (of %d want, %d got)\n--- want\n%q\n--- got\n%q",
		i, len(want), len(got), want[from:min(len(want), i+80)], got[from:min(len(got), i+80)])
}

// TestGoldenCoversTemplates checks that golden.json is current: the same
// templates, with the same sources, as ../shared/models/templates.
func TestGoldenCoversTemplates(t *testing.T) {
	dir := testmodels.Path(t, "templates")
	files, _ := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if len(files) == 0 {
		t.Fatalf("no templates in %s", dir)
	}
	g := loadGolden(t)
	var names []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jinja")
		names = append(names, name)
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if tpl, ok := g.Templates[name]; !ok || tpl.Source != string(src) {
			t.Errorf("%s: not in golden.json or changed since; rerun scripts/chat-template-golden.py", name)
		}
	}
	if len(names) != len(g.Templates) {
		sort.Strings(names)
		t.Errorf("golden.json has %d templates, %s has %d: %v", len(g.Templates), dir, len(names), names)
	}
}
