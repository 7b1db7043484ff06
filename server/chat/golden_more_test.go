package chat

import (
	"encoding/json"
	"os"
	"testing"
	"time"
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
func TestGoldenMore(t *testing.T) {
	data, err := os.ReadFile("testdata/golden-more.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) == 0 || len(g.Templates) == 0 {
		t.Fatal("golden-more.json has no cases")
	}
	now, err := time.Parse("2006-01-02T15:04:05", g.Now)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range g.Cases {
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
}
