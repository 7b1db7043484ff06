package chat

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestGoldenMore is TestGolden for testdata/golden-more.json: Python
// jinja2's renderings of chat templates of the 2025–2026 families that the
// model core runs (Gemma 4's for Gemma, SmolLM3's), from
// ../shared/models/templates-more, written by
//
//	mkdir /tmp/more && cp ../shared/models/templates-more/{google-gemma-4-31B-it,HuggingFaceTB-SmolLM3-3B}.jinja /tmp/more
//	python3 scripts/chat-template-golden.py /tmp/more server/chat/testdata/golden-more.json
//
// (Gemma 2's template is in golden.json; Gemma 3's shares its turn markup.)
func TestGoldenMore(t *testing.T) { runGolden(t, "golden-more.json") }

// TestGoldenPhi4 is TestGolden for testdata/golden-phi4.json: Python
// jinja2's renderings of Phi-4-mini's chat template as llama.cpp ships it
// (models/templates/llama-cpp-microsoft-Phi-4-mini-instruct.jinja, b10573's
// tree; Phi-3.5-mini's template is in golden.json). Written by
//
//	mkdir /tmp/phi-tpl && cp <llama.cpp>/models/templates/llama-cpp-microsoft-Phi-4-mini-instruct.jinja /tmp/phi-tpl
//	python3 scripts/chat-template-golden.py /tmp/phi-tpl server/chat/testdata/golden-phi4.json
//
// The template iterates tools whenever the variable is defined, so with
// tools None (transformers' value when a request has none) Python raises
// on every conversation without tools; the renderer must raise there too.
func TestGoldenPhi4(t *testing.T) {
	if runGolden(t, "golden-phi4.json") == 0 {
		t.Error("golden-phi4.json renders no conversation")
	}
}

// runGolden is TestGolden for testdata/name: it renders every case and
// compares it with Python's; it returns how many cases render (Python
// raised on the others).
func runGolden(t *testing.T, name string) (rendered int) {
	g := loadGoldenFile(t, name)
	for _, c := range g.Cases {
		if c.Error == "" {
			rendered++
		}
		t.Run(c.Template+"/"+c.Conversation, func(t *testing.T) {
			tpl, err := Parse(g.Templates[c.Template].Source)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.Render(g.Conversations[c.Conversation].Messages, g.options(c.Conversation, g.now))
			checkRendering(t, got, err, c.Expected, c.Error)
		})
	}
	return rendered
}

// runGoldenProbed is runGolden for the files whose templates also carry
// Python's probes: each template's object arguments and string content
// (the server's NeedsStringContent) must be what Python found, and the
// messages carry "" for a None content where the template needs it, as
// the server passes them. It returns how many cases render, per template.
func runGoldenProbed(t *testing.T, name string) map[string]int {
	g := loadGoldenFile(t, name)
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var probes struct {
		Templates map[string]struct {
			StringContent bool `json:"string_content"`
		} `json:"templates"`
	}
	if err := json.Unmarshal(data, &probes); err != nil {
		t.Fatal(err)
	}
	parsed := map[string]*Template{}
	for name, src := range g.Templates {
		tpl, err := Parse(src.Source)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tpl.objectArguments != src.ObjectArguments || tpl.NeedsStringContent() != probes.Templates[name].StringContent {
			t.Errorf("%s: object arguments %v, string content %v; Python's probes found %v, %v", name,
				tpl.objectArguments, tpl.NeedsStringContent(), src.ObjectArguments, probes.Templates[name].StringContent)
		}
		parsed[name] = tpl
	}
	rendered := map[string]int{}
	for _, c := range g.Cases {
		if c.Error == "" {
			rendered[c.Template]++
		}
		t.Run(c.Template+"/"+c.Conversation, func(t *testing.T) {
			tpl := parsed[c.Template]
			msgs := slices.Clone(g.Conversations[c.Conversation].Messages)
			for i := range msgs {
				msgs[i].StringContent = tpl.NeedsStringContent()
			}
			got, err := tpl.Render(msgs, g.options(c.Conversation, g.now))
			checkRendering(t, got, err, c.Expected, c.Error)
		})
	}
	return rendered
}
