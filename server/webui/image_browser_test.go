package webui_test

import (
	"encoding/base64"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/imagetest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/model/vision"
	"github.com/troupe-llm/troupe/server"
)

// testPNG is a w×h PNG of a gradient seeded by seed.
func testPNG(t *testing.T, w, h, seed int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x*7 + seed), uint8(y*5 + 3*seed), uint8((x + y) * seed), 255})
		}
	}
	return imagetest.PNG(t, img)
}

// countingProjector is a real projector that counts its encodes.
type countingProjector struct {
	*vision.Projector
	encodes atomic.Int64
}

func (c *countingProjector) Encode(mm *compute.MatMuler, p *vision.Prepared) ([]float32, error) {
	c.encodes.Add(1)
	return c.Projector.Encode(mm, p)
}

// synthProjector writes and opens a random gemma3-tiny projector for
// stories260K's width (64).
func synthProjector(t *testing.T) *countingProjector {
	t.Helper()
	return &countingProjector{Projector: synthtest.Projector(t, "gemma3-tiny", 64, 5)}
}

func imagePart(png []byte) map[string]any {
	return map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}}
}

// TestBrowserImage: an image pasted into the prompt, and one picked with
// the file picker in a later turn, reach a model served with a projector
// as image_url parts: the page's greedy answers and prompt token counts are
// the API's for the same conversation, the image is encoded once (the
// API's request with the same pixels finds it cached), and the images show
// in the conversation. On a model without a projector the server's 400
// shows on the reply, and the next text-only message is answered without
// the failed one.
func TestBrowserImage(t *testing.T) {
	proj := synthProjector(t)
	vis := newTestServerWith(t, server.Config{}, actors.Config{Encoder: proj})
	plain := newTestServer(t, server.Config{})
	bctx := startBrowser(t, 1100, 800) // after the servers: closed before them
	p := newPage(t, bctx)

	p.run("load", chromedp.Navigate(vis.url+"/"), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	p.wait("the model taking images", `document.getElementById('model').textContent.includes('takes images') && document.getElementById('model-select').hidden`)

	// Turn 1: a pasted image.
	first := testPNG(t, 40, 24, 1)
	if !p.pasteImage(first) {
		t.Errorf("pasting an image alone: the paste's text default not prevented")
	}
	p.wait("the pasted image attached", `document.querySelectorAll('#attachments img').length === 1 && !document.getElementById('attachments').hidden`)
	const q1, q2, maxTokens = "What is in the picture?", "And in this one?", 8
	r1 := p.send(q1, maxTokens, 1)
	if r1.Error != "" {
		t.Fatalf("the image chat failed: %s", r1.Error)
	}
	if n := proj.encodes.Load(); n != 1 {
		t.Errorf("%d encodes after the page's request, want 1", n)
	}
	user1 := map[string]any{"role": "user", "content": []map[string]any{imagePart(first), {"type": "text", "text": q1}}}
	want1 := apiChat(t, vis.url, "", map[string]any{"messages": []any{user1}, "temperature": 0, "max_tokens": maxTokens})
	if r1.Content != want1.Content || r1.Usage.PromptTokens != want1.PromptTokens || want1.Content == "" {
		t.Errorf("turn 1: the page got %q (%d prompt tokens), the API %q (%d)", r1.Content, r1.Usage.PromptTokens, want1.Content, want1.PromptTokens)
	}
	if n := proj.encodes.Load(); n != 1 {
		t.Errorf("the API's request with the page's image encoded it again (%d encodes): the page sent other pixels", n)
	}
	p.wait("the image in the conversation, the attachments cleared", `document.querySelectorAll('#attachments img').length === 0 &&
		document.querySelector('.msg.user .images img').src.startsWith('data:image/png;base64,')`)

	// Turn 2: an image from the file picker, the first still in the history.
	second := testPNG(t, 17, 33, 2)
	file := filepath.Join(t.TempDir(), "picked.png")
	if err := os.WriteFile(file, second, 0o644); err != nil {
		t.Fatal(err)
	}
	p.run("pick a file", chromedp.SetUploadFiles(chromedp.CSS("#image-input"), []string{file}))
	p.wait("the picked image attached", `document.querySelectorAll('#attachments img').length === 1`)
	r2 := p.send(q2, maxTokens, 3)
	if r2.Error != "" {
		t.Fatalf("the second image chat failed: %s", r2.Error)
	}
	want2 := apiChat(t, vis.url, "", map[string]any{"messages": []any{user1, map[string]any{"role": "assistant", "content": want1.Content},
		map[string]any{"role": "user", "content": []map[string]any{imagePart(second), {"type": "text", "text": q2}}}}, "temperature": 0, "max_tokens": maxTokens})
	if r2.Content != want2.Content || r2.Usage.PromptTokens != want2.PromptTokens {
		t.Errorf("turn 2: the page got %q (%d prompt tokens), the API %q (%d)", r2.Content, r2.Usage.PromptTokens, want2.Content, want2.PromptTokens)
	}
	if n := proj.encodes.Load(); n != 2 {
		t.Errorf("%d encodes after two images, want 2", n)
	}
	p.wait("both images shown", `document.querySelectorAll('.msg.user .images img').length === 2`)
	p.shoot("image")

	// A model without a projector: the server's 400 on the reply.
	q := newPage(t, bctx)
	q.run("load the text-only server", chromedp.Navigate(plain.url+"/"), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	q.wait("the model's name", `document.getElementById('model').textContent.startsWith('stories') && !document.getElementById('model').textContent.includes('images')`)
	q.pasteImage(first)
	q.wait("the pasted image attached", `document.querySelectorAll('#attachments img').length === 1`)
	refused := q.send(q1, maxTokens, 1)
	if !strings.Contains(refused.Error, "400") || !strings.Contains(refused.Error, "takes no images") || !strings.Contains(refused.Error, "--mmproj") {
		t.Errorf("an image on a model without a projector: reply error %q", refused.Error)
	}
	var note string
	q.eval("the note", `document.querySelector('.msg.assistant.error .note').textContent`, &note)
	if !strings.Contains(note, "takes no images") {
		t.Errorf("the reply's note %q does not say the model takes no images", note)
	}
	q.shoot("image-refused")
	const story = "Tell me a story."
	after := q.send(story, maxTokens, 3)
	want := apiChat(t, plain.url, "", map[string]any{"messages": []any{map[string]any{"role": "user", "content": story}}, "temperature": 0, "max_tokens": maxTokens})
	if after.Error != "" || after.Content != want.Content {
		t.Errorf("after the refused image: the page got %q (error %q), the API alone %q", after.Content, after.Error, want.Content)
	}
	for _, e := range append(p.console.take(), q.console.take()...) {
		if !strings.Contains(e, "400") { // the refused request's failed load
			t.Errorf("console: %s", e)
		}
	}
}
