package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/imagetest"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// imageFixture is the image tests' files: stories260K, a synthetic
// gemma3-tiny projector of its width and a 30×20 PNG (both in a temp dir).
func imageFixture(t *testing.T) (stories, proj, pic string) {
	t.Helper()
	stories = testmodels.Path(t, "stories260K.gguf")
	dir := t.TempDir()
	proj = synthProjectorFile(t, filepath.Join(dir, "mmproj.gguf"), 64)
	pic = filepath.Join(dir, "pic.png")
	writePNG(t, pic, 30, 20)
	return stories, proj, pic
}

// synthProjectorFile writes a gemma3-tiny projector of output width
// textDim (stories260K's: 64) to path and returns it.
func synthProjectorFile(t *testing.T, path string, textDim int) string {
	t.Helper()
	if _, errOut, code := troupe(t, "synth", "--projector", "gemma3-tiny", "--text-dim", strconv.Itoa(textDim), "-o", path); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, errOut)
	}
	return path
}

// writePNG writes a w×h PNG (imagetest.Ramp's, step 5) to path.
func writePNG(t *testing.T, path string, w, h int) {
	t.Helper()
	if err := os.WriteFile(path, imagetest.PNG(t, imagetest.Ramp(w, h, 5)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunImage: troupe run --mmproj F --image P with the real projector (a
// synthetic gemma3-tiny mmproj, stories260K's width): the prompt gets the
// image's 16 rows where <__media__> stands, the answer is greedy and
// repeatable; a projector of another width, a marker count that does not
// match, --image without --mmproj and a file that is no image are errors.
func TestRunImage(t *testing.T) {
	stories, proj, pic := imageFixture(t)
	dir := filepath.Dir(pic)
	args := []string{"-m", stories, "--mmproj", proj, "--image", pic, "-p", "Look: <__media__> Once upon a time", "-n", "8"}
	var first runOutput
	for i := range 2 {
		a, _ := greedyRun(t, args...)
		if len(a.IDs) != 8 {
			t.Errorf("%d tokens, want 8", len(a.IDs))
		}
		// Gemma 3's 64-pixel image: 8×8 patches pooled 2×2, 16 rows, each
		// a placeholder id 0 between the marker texts' tokens.
		zeros := 0
		for _, id := range a.PromptIDs {
			if id == 0 {
				zeros++
			}
		}
		at := slices.Index(a.PromptIDs, 0)
		if zeros != 16 || at < 0 || !slices.Equal(a.PromptIDs[at:at+16], make([]int32, 16)) {
			t.Errorf("prompt %v: want one run of 16 image rows", a.PromptIDs)
		}
		if i == 0 {
			first = a
		} else if !slices.Equal(a.IDs, first.IDs) {
			t.Errorf("greedy answers differ: %v then %v", first.IDs, a.IDs)
		}
	}
	// Text mode prints the answer.
	stdout, errOut, code := troupe(t, append(append([]string{"run"}, args...), "--temp", "0")...)
	if code != 0 || strings.TrimSpace(stdout) == "" {
		t.Errorf("text output: exit %d, stdout %q, stderr %s", code, stdout, errOut)
	}

	wide := synthProjectorFile(t, filepath.Join(dir, "wide.gguf"), 96)
	notImage := filepath.Join(dir, "note.png")
	os.WriteFile(notImage, []byte("not an image at all"), 0o644)
	checkExits(t, []exitCase{
		{"other width", []string{"run", "-m", stories, "--mmproj", wide, "--image", pic, "-p", "x"}, 1, "--mmproj"},
		{"markers", []string{"run", "-m", stories, "--mmproj", proj, "--image", pic, "-p", "<__media__> and <__media__>"}, 2, "2 image markers"},
		{"no mmproj", []string{"run", "-m", stories, "--image", pic, "-p", "x"}, 2, "--image needs a projector"},
		{"not an image", []string{"run", "-m", stories, "--mmproj", proj, "--image", notImage, "-p", "x"}, 1, "--image " + notImage},
	})
}

// TestServeImage: troupe serve --mmproj with the real (synthetic
// gemma3-tiny) projector answers an OpenAI image_url and an Ollama images
// chat, greedy the same on a repeat (the image then cached), and /api/show
// lists vision.
func TestServeImage(t *testing.T) {
	stories, proj, pic := imageFixture(t)
	data := readFile(t, pic)
	b64 := base64.StdEncoding.EncodeToString(data)
	_, url, _ := startServe(t, "-m", stories, "--mmproj", proj, "--temp", "0", "-c", "512", "-t", "1")
	openai := `{"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "text", "text": "Look:"},
		{"type": "image_url", "image_url": {"url": "data:image/png;base64,` + b64 + `"}}]}]}`
	ollama := `{"model": "stories260K", "stream": false, "options": {"num_predict": 8, "temperature": 0},
		"messages": [{"role": "user", "content": "Look:", "images": ["` + b64 + `"]}]}`
	for _, tc := range []struct{ path, body, text string }{
		{"/v1/chat/completions", openai, `"content"`},
		{"/api/chat", ollama, `"message"`},
	} {
		code, a := post(t, url+tc.path, tc.body)
		code2, b := post(t, url+tc.path, tc.body)
		if code != 200 || code2 != 200 || !strings.Contains(string(a), tc.text) {
			t.Fatalf("%s: %d %s, then %d", tc.path, code, a, code2)
		}
		var first, second struct {
			Choices []struct{ Message struct{ Content string } } `json:"choices"`
			Message struct{ Content string }                     `json:"message"`
		}
		json.Unmarshal(a, &first)
		json.Unmarshal(b, &second)
		if fmt.Sprint(first) != fmt.Sprint(second) {
			t.Errorf("%s: greedy answers differ: %s then %s", tc.path, a, b)
		}
	}
	if code, b := post(t, url+"/api/show", `{"model": "stories260K"}`); code != 200 || !strings.Contains(string(b), `"vision"`) {
		t.Errorf("/api/show: %d %s", code, b)
	}
}
