package chat

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

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
	data, err := os.ReadFile("testdata/golden-phi4.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) == 0 || len(g.Templates) == 0 {
		t.Fatal("golden-phi4.json has no cases")
	}
	now, err := time.Parse("2006-01-02T15:04:05", g.Now)
	if err != nil {
		t.Fatal(err)
	}
	rendered := 0
	for _, c := range g.Cases {
		if c.Error == "" {
			rendered++
		}
		t.Run(c.Template+"/"+c.Conversation, func(t *testing.T) {
			tpl, err := Parse(g.Templates[c.Template].Source)
			if err != nil {
				t.Fatal(err)
			}
			conv := g.Conversations[c.Conversation]
			o := Options{
				AddGenerationPrompt: conv.AddGenerationPrompt,
				BOSToken:            g.BOSToken,
				EOSToken:            g.EOSToken,
				Now:                 func() time.Time { return now },
			}
			for _, tool := range conv.Tools {
				o.Tools = append(o.Tools, tool)
			}
			if conv.Kwargs != nil {
				o.Extra = map[string]any{}
				for k, v := range conv.Kwargs {
					o.Extra[k] = v
				}
			}
			got, err := tpl.Render(conv.Messages, o)
			checkRendering(t, got, err, c.Expected, c.Error)
		})
	}
	if rendered == 0 {
		t.Error("golden-phi4.json renders no conversation")
	}
}
