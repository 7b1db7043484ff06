package chat

import (
	"testing"
	"time"
)

// TestGoldenHarmony is TestGolden for testdata/golden-harmony.json: Python
// jinja2's renderings of gpt-oss's chat template (the harmony format), on
// golden.json's conversations and on conversations that reach what only
// this template reads: reasoning_effort, model_identity and builtin_tools,
// a developer message, an assistant's reasoning ("thinking") beside its
// tool call, tool results, a final turn rendered for training, and its
// raise_exception checks. Written by
//
//	python3 scripts/chat-template-golden-harmony.py
//
// The template fails on a tool call's content None (it tests `"..." in
// message.content`), so the messages carry "" there (StringContent), as
// the server passes them where NeedsStringContent says so; and the
// probes that find this and the object arguments must agree with Python's.
func TestGoldenHarmony(t *testing.T) {
	rendered := 0
	for _, n := range runGoldenProbed(t, "golden-harmony.json") {
		rendered += n
	}
	if rendered < 20 {
		t.Errorf("golden-harmony.json renders %d conversations; want at least 20", rendered)
	}
}

// TestToolDescriptions: gpt-oss's template raises on a tool without a
// description (jinja2's "// " + undefined); NeedsToolDescription finds
// it, and with ToolDescriptions the tool renders as Python renders it with
// an empty description (llama.cpp's rendering). Templates that do without
// are left alone.
func TestToolDescriptions(t *testing.T) {
	g := loadGoldenFile(t, "golden-harmony.json")
	var tpl *Template
	for _, src := range g.Templates {
		var err error
		if tpl, err = Parse(src.Source); err != nil {
			t.Fatal(err)
		}
	}
	if !tpl.NeedsToolDescription() {
		t.Fatal("gpt-oss's template: NeedsToolDescription false")
	}
	var want *string
	for _, c := range g.Cases {
		if c.Conversation == "harmony_tool_empty_description" {
			want = c.Expected
		}
	}
	if want == nil {
		t.Fatal("no harmony_tool_empty_description case")
	}
	now := func() time.Time { return time.Date(2024, 9, 5, 14, 30, 15, 0, time.UTC) }
	bare := g.options("harmony_tool_without_description", now())
	msgs := g.Conversations["harmony_tool_without_description"].Messages
	if _, err := tpl.Render(msgs, bare); err == nil {
		t.Error("a tool without a description rendered without ToolDescriptions")
	}
	bare.ToolDescriptions = true
	got, err := tpl.Render(msgs, bare)
	checkRendering(t, got, err, want, "")

	other, err := Parse(`{% for t in tools %}{{ t.function.description is defined }}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	if other.NeedsToolDescription() {
		t.Error("a template that renders a tool without a description: NeedsToolDescription true")
	}
}
