package server_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model/gguf"
	"github.com/troupe-llm/troupe/model/vision"
	"github.com/troupe-llm/troupe/server"
)

// countingProjector is a real *vision.Projector that counts its encodes.
type countingProjector struct {
	*vision.Projector
	encodes atomic.Int64
}

func (c *countingProjector) Encode(mm *compute.MatMuler, p *vision.Prepared) ([]float32, error) {
	c.encodes.Add(1)
	return c.Projector.Encode(mm, p)
}

// realProjector writes a synthetic projector of shape name for a text
// model of width textDim and opens it.
func realProjector(t *testing.T, name string, textDim int) *countingProjector {
	t.Helper()
	p := synthtest.Projector(t, name, textDim, 3)
	shape, _ := synth.LookupProjectorShape(name)
	if err := p.Check(textDim * (1 + len(shape.Deepstack))); err != nil { // the model's input width (Qwen3-VL: with the deepstack slices)
		t.Fatal(err)
	}
	return &countingProjector{Projector: p}
}

// synthTextModel writes a Q8_0 model of shape with stories260K's
// vocabulary (and chat template) and returns its path.
func synthTextModel(t *testing.T, shape synth.Shape) string {
	t.Helper()
	vf, err := gguf.Open(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer vf.Close()
	ft, _ := synth.LookupFileType("Q8_0")
	path := filepath.Join(t.TempDir(), shape.Name+".gguf")
	if _, err := synth.WriteFile(path, synth.Options{Shape: shape, Type: ft, Vocab: vf, Seed: 11, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	return path
}

type chatAnswer struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// chatAnswerOf posts a chat request; its error says what went wrong (for
// goroutines, which may not call t.Fatal).
func chatAnswerOf(t *testing.T, url string, body any) (chatAnswer, error) {
	b, _ := json.Marshal(body)
	resp, out := post(t, url+"/v1/chat/completions", string(b))
	if resp.StatusCode != http.StatusOK {
		return chatAnswer{}, fmt.Errorf("status %d: %s", resp.StatusCode, out)
	}
	var a chatAnswer
	if err := json.Unmarshal(out, &a); err != nil || len(a.Choices) != 1 {
		return chatAnswer{}, fmt.Errorf("answer %s: %v", out, err)
	}
	return a, nil
}

func chatOK(t *testing.T, url string, body any) chatAnswer {
	t.Helper()
	a, err := chatAnswerOf(t, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRealProjectorChat runs the real projector (model/vision, a synthetic
// mmproj of each type) through the runtime and the server: an image chat
// answers 200; the same image again in a longer conversation finds its
// prefix cached and is not encoded again; the greedy answer is the same
// alone and among concurrent text-only requests.
func TestRealProjectorChat(t *testing.T) {
	tiny, _ := synth.LookupShape("gemma3-tiny")
	for _, tc := range []struct {
		name, projector string
		model           func(t *testing.T) (string, int) // path ("" stories260K) and its width
	}{
		{"stories260K+gemma3-tiny", "gemma3-tiny", func(*testing.T) (string, int) { return "", stories260KDim }},
		{"synth-gemma3+idefics3-tiny", "idefics3-tiny", func(t *testing.T) (string, int) { return synthTextModel(t, tiny), tiny.Dim }},
		{"synth-qwen2vl+qwen2vl-tiny", "qwen2vl-tiny", func(t *testing.T) (string, int) {
			qwen, _ := synth.LookupShape("qwen2vl-tiny")
			return synthTextModel(t, qwen), qwen.Dim
		}},
		{"synth-qwen2vl+qwen2.5vl-tiny", "qwen2.5vl-tiny", func(t *testing.T) (string, int) {
			qwen, _ := synth.LookupShape("qwen2vl-tiny")
			return synthTextModel(t, qwen), qwen.Dim
		}},
		{"synth-qwen3vl+qwen3vl-tiny", "qwen3vl-tiny", func(t *testing.T) (string, int) {
			qwen, _ := synth.LookupShape("qwen3vl-tiny")
			return synthTextModel(t, qwen), qwen.Dim
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, dim := tc.model(t)
			proj := realProjector(t, tc.projector, dim)
			f := newFixture(t, options{model: path, rt: actors.Config{Encoder: proj}, srv: server.Config{Media: server.MediaConfig{MaxImages: 2}}})
			checkImageCached(t, f, proj)
			checkImageDialects(t, f, proj)
			checkImageAmongText(t, f)
		})
	}
}

// greedyChat is a greedy chat request of msgs for 8 tokens.
func greedyChat(msgs ...map[string]any) map[string]any {
	return map[string]any{"model": modelName, "max_tokens": 8, "temperature": 0, "messages": msgs}
}

// checkImageCached: an image chat answers 200, the image encoded once;
// the same image again in a longer conversation finds its prefix cached
// and is not encoded again.
func checkImageCached(t *testing.T, f *fixture, proj *countingProjector) {
	t.Helper()
	img := dataURL("image/png", pngBytes(t, 40, 24))
	user := map[string]any{"role": "user", "content": []map[string]any{
		{"type": "text", "text": "Look:"},
		{"type": "image_url", "image_url": map[string]any{"url": img}},
		{"type": "text", "text": "What is it?"},
	}}
	first := chatOK(t, f.url, greedyChat(user))
	if n := proj.encodes.Load(); n != 1 {
		t.Fatalf("%d encodes after the first request", n)
	}
	prep, err := proj.Prepare(pngBytes(t, 40, 24))
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.PromptTokens <= prep.Rows() {
		t.Errorf("prompt tokens %d, the image alone has %d rows", first.Usage.PromptTokens, prep.Rows())
	}
	answer := first.Choices[0].Message.Content
	second := chatOK(t, f.url, greedyChat(user, map[string]any{"role": "assistant", "content": answer},
		map[string]any{"role": "user", "content": "And its color?"}))
	if n := proj.encodes.Load(); n != 1 {
		t.Errorf("the same image was encoded %d times", n)
	}
	t.Logf("image rows %d; first turn %d prompt tokens; second turn %d, %d of them cached",
		prep.Rows(), first.Usage.PromptTokens, second.Usage.PromptTokens, second.Usage.PromptTokensDetails.CachedTokens)
	// The first turn's prompt, image and all, is cached but for its
	// last partial block (and a block at most held back for the
	// prefill of the rest).
	if c := second.Usage.PromptTokensDetails.CachedTokens; c < first.Usage.PromptTokens-2*kv.DefaultBlockSize || c <= prep.Rows() {
		t.Errorf("second turn: %d cached tokens of %d, want about the first turn's %d",
			c, second.Usage.PromptTokens, first.Usage.PromptTokens)
	}
}

// checkImageDialects: Anthropic's image block and Ollama's images carry
// the image of checkImageCached: answered, and still not encoded again.
func checkImageDialects(t *testing.T, f *fixture, proj *countingProjector) {
	t.Helper()
	b64 := base64.StdEncoding.EncodeToString(pngBytes(t, 40, 24))
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"` + modelName + `","max_tokens":4,"temperature":0,"messages":[{"role":"user","content":[` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}},{"type":"text","text":"What is this?"}]}]}`},
		{"/api/chat", `{"model":"` + modelName + `","stream":false,"options":{"num_predict":4,"temperature":0},` +
			`"messages":[{"role":"user","content":"What is this?","images":["` + b64 + `"]}]}`},
	} {
		if resp, body := post(t, f.url+c.path, c.body); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d: %s", c.path, resp.StatusCode, body)
		}
	}
	if n := proj.encodes.Load(); n != 1 {
		t.Errorf("after Anthropic's and Ollama's requests: %d encodes", n)
	}
}

// checkImageAmongText: the greedy answer to a fresh image (encoded and
// prefilled anew) is the same alone and among text-only requests.
func checkImageAmongText(t *testing.T, f *fixture) {
	t.Helper()
	other := dataURL("image/png", pngBytes(t, 17, 33))
	imgReq := greedyChat(map[string]any{"role": "user", "content": []map[string]any{
		{"type": "image_url", "image_url": map[string]any{"url": other}},
		{"type": "text", "text": "Describe it."},
	}})
	alone := chatOK(t, f.url, imgReq).Choices[0].Message.Content
	mixed := make([]string, 3)
	parallel(6, func(i int) {
		body := greedyChat(map[string]any{"role": "user", "content": fmt.Sprintf("Tell me story %d.", i)})
		if i%2 == 0 {
			body = imgReq
		}
		a, err := chatAnswerOf(t, f.url, body)
		if err != nil {
			t.Error(err)
		} else if i%2 == 0 {
			mixed[i/2] = a.Choices[0].Message.Content
		}
	})
	for i, m := range mixed {
		if m != alone {
			t.Errorf("mixed request %d answered %q, alone %q", i, m, alone)
		}
	}
}
