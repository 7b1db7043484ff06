package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	_ "image/gif"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/imagetest"
	"github.com/troupe-llm/troupe/model/vision"
	"github.com/troupe-llm/troupe/server"
)

// fakeProjector stands in for a projector: it reads a file's header with
// the standard library's decoders (PNG, GIF), refuses anything else as
// vision.ErrFormat and a declared size past 4096 as vision.ErrTooLarge, and
// gives 6 rows between two marker texts, a function of the pixels' bytes.
type fakeProjector struct {
	dim     int
	encodes atomic.Int64
}

func (f *fakeProjector) Dim() int { return f.dim }

func (f *fakeProjector) Prepare(data []byte) (*vision.Prepared, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", vision.ErrFormat, err)
	}
	if cfg.Width > 4096 || cfg.Height > 4096 {
		return nil, fmt.Errorf("%w: %dx%d", vision.ErrTooLarge, cfg.Width, cfg.Height)
	}
	if _, _, err := image.Decode(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("%w: %v", vision.ErrFormat, err)
	}
	return &vision.Prepared{Chunks: []vision.Chunk{{Text: "<img>"}, {Embeds: 6}, {Text: "</img>"}},
		Hash: sha256.Sum256(data), Width: cfg.Width, Height: cfg.Height}, nil
}

func (f *fakeProjector) Encode(mm *compute.MatMuler, p *vision.Prepared) ([]float32, error) {
	f.encodes.Add(1)
	out := make([]float32, p.Rows()*f.dim)
	for i := range out {
		out[i] = float32(0.2 * math.Sin(float64(p.Hash[0])+float64(i)))
	}
	return out, nil
}

// pngBytes is a w×h PNG (imagetest.Ramp's, step 7).
func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	return imagetest.PNG(t, imagetest.Ramp(w, h, 7))
}

// hugePNG is a PNG whose header declares 30000×30000 pixels (no data
// behind it worth decoding).
func hugePNG(t testing.TB) []byte {
	b := pngBytes(t, 1, 1)
	ihdr := b[8+8 : 8+8+13] // after the signature and IHDR's length and type
	binary.BigEndian.PutUint32(ihdr[0:], 30000)
	binary.BigEndian.PutUint32(ihdr[4:], 30000)
	binary.BigEndian.PutUint32(b[8+8+13:], crc32.ChecksumIEEE(b[8+4:8+8+13]))
	return b
}

func dataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

func chatWithImages(urls ...string) string {
	parts := []map[string]any{{"type": "text", "text": "What is in this picture?"}}
	for _, u := range urls {
		parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": u, "detail": "low"}})
	}
	b, _ := json.Marshal(map[string]any{"model": modelName, "max_tokens": 4, "temperature": 0,
		"messages": []map[string]any{{"role": "user", "content": parts}}})
	return string(b)
}

// visionFixture serves stories260K with the fake projector.
func visionFixture(t *testing.T, media server.MediaConfig) (*fixture, *fakeProjector) {
	t.Helper()
	fp := &fakeProjector{dim: stories260KDim}
	return newFixture(t, options{rt: actors.Config{Encoder: fp}, srv: server.Config{Media: media}}), fp
}

// stories260KDim is stories260K's embedding width (actors.Start refuses
// an encoder of another).
const stories260KDim = 64

func errorParam(t *testing.T, body []byte) (string, string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not an OpenAI error: %s", body)
	}
	p := ""
	if e.Error.Param != nil {
		p = *e.Error.Param
	}
	return p, e.Error.Message
}

// TestChatImages: an image_url part with a data URL generates; the same
// image again hits the prefix cache and is not encoded twice; each bad
// image is a 400 naming its part.
func TestChatImages(t *testing.T) {
	f, fp := visionFixture(t, server.MediaConfig{MaxImages: 3})
	good := dataURL("image/png", pngBytes(t, 8, 8))
	for range 2 {
		resp, body := post(t, f.url+"/v1/chat/completions", chatWithImages(good))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	if n := fp.encodes.Load(); n != 1 {
		t.Errorf("the same image was encoded %d times", n)
	}
	truncated := pngBytes(t, 8, 8)
	truncated = truncated[:len(truncated)-30]
	for _, tc := range []struct {
		name, body, param, msg string
	}{
		{"truncated", chatWithImages(good, dataURL("image/png", truncated)), "messages[0].content[2]", "not an image"},
		{"unsupported format", chatWithImages(dataURL("image/bmp", []byte("BM\x00\x00\x00\x00 not really"))), "messages[0].content[1]", "not an image"},
		{"not an image data URL", chatWithImages(dataURL("text/plain", []byte("hello"))), "messages[0].content[1]", "not an image"},
		{"not base64", chatWithImages("data:image/png;base64,%%%%"), "messages[0].content[1]", "base64"},
		{"huge header", chatWithImages(dataURL("image/png", hugePNG(t))), "messages[0].content[1]", "too large"},
		{"too many", chatWithImages(good, good, good, good), "messages[0].content[4]", "at most 3"},
		{"remote not allowed", chatWithImages("https://example.com/cat.png"), "messages[0].content[1]", "not allowed"},
		{"other scheme", chatWithImages("file:///etc/passwd"), "messages[0].content[1]", "data: URL"},
		{"bad detail", strings.Replace(chatWithImages(good), `"low"`, `"ultra"`, 1), "messages[0].content[1]", "detail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, f.url+"/v1/chat/completions", tc.body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
			}
			param, msg := errorParam(t, body)
			if param != tc.param || !strings.Contains(msg, tc.msg) {
				t.Errorf("param %q message %q; want param %q and a message with %q", param, msg, tc.param, tc.msg)
			}
		})
	}
}

// TestImagesWithoutProjector: an image on a model without a projector is a
// 400 naming the part, on OpenAI's and Ollama's routes; neither says vision.
func TestImagesWithoutProjector(t *testing.T) {
	f := newFixture(t, options{})
	resp, body := post(t, f.url+"/v1/chat/completions", chatWithImages(dataURL("image/png", pngBytes(t, 4, 4))))
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if param, msg := errorParam(t, body); param != "messages[0].content[1]" || !strings.Contains(msg, "--mmproj") {
		t.Errorf("param %q message %q", param, msg)
	}
	img := base64.StdEncoding.EncodeToString(pngBytes(t, 4, 4))
	resp, body = post(t, f.url+"/api/chat", `{"model":"`+modelName+`","stream":false,"messages":[{"role":"user","content":"hi","images":["`+img+`"]}]}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "messages[0].images[0]") {
		t.Errorf("/api/chat: status %d: %s", resp.StatusCode, body)
	}
	resp, body = post(t, f.url+"/api/show", `{"model":"`+modelName+`"}`)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), `"vision"`) {
		t.Errorf("/api/show without a projector: %d %s", resp.StatusCode, body)
	}
}

// TestOllamaImages: Ollama's images (base64) on /api/chat and
// /api/generate; a bad one is a 400 naming images[k]; /api/show and
// /v1/models report vision.
func TestOllamaImages(t *testing.T) {
	f, _ := visionFixture(t, server.MediaConfig{})
	img := base64.StdEncoding.EncodeToString(pngBytes(t, 4, 4))
	for _, tc := range []struct{ path, body string }{
		{"/api/chat", `{"model":"` + modelName + `","stream":false,"options":{"num_predict":3},"messages":[{"role":"user","content":"hi","images":["` + img + `"]}]}`},
		{"/api/generate", `{"model":"` + modelName + `","stream":false,"options":{"num_predict":3},"prompt":"hi","images":["` + img + `"]}`},
	} {
		resp, body := post(t, f.url+tc.path, tc.body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d: %s", tc.path, resp.StatusCode, body)
		}
	}
	bad := base64.StdEncoding.EncodeToString([]byte("GIF89a broken"))
	resp, body := post(t, f.url+"/api/generate", `{"model":"`+modelName+`","stream":false,"prompt":"hi","images":["`+img+`","`+bad+`"]}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "images[1]") {
		t.Errorf("/api/generate with a broken image: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, f.url+"/api/chat", `{"model":"`+modelName+`","stream":false,"messages":[{"role":"user","content":"hi","images":["@@@"]}]}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "messages[0].images[0]") {
		t.Errorf("/api/chat with bad base64: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, f.url+"/api/show", `{"model":"`+modelName+`"}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"vision"`) {
		t.Errorf("/api/show: %d %s", resp.StatusCode, body)
	}
	r, err := http.Get(f.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			Capabilities []string `json:"capabilities"`
		} `json:"data"`
	}
	json.NewDecoder(r.Body).Decode(&models)
	r.Body.Close()
	if len(models.Data) == 0 || !strings.Contains(strings.Join(models.Data[0].Capabilities, ","), "vision") {
		t.Errorf("/v1/models: %+v", models)
	}
}

// TestRemoteImages: an http URL is fetched from an allowed domain; a
// loopback address is refused at dial time unless private addresses are
// allowed; an image over the size bound and a failed fetch are 400s.
func TestRemoteImages(t *testing.T) {
	img := pngBytes(t, 4, 4)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cat.png":
			w.Write(img)
		case "/big.png":
			w.Header().Set("Content-Length", "999999999")
			w.Write(img)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(origin.Close)
	allowed := []string{"127.0.0.1"}
	t.Run("private refused", func(t *testing.T) {
		f, _ := visionFixture(t, server.MediaConfig{AllowedDomains: allowed})
		resp, body := post(t, f.url+"/v1/chat/completions", chatWithImages(origin.URL+"/cat.png"))
		if param, msg := errorParam(t, body); resp.StatusCode != http.StatusBadRequest || param != "messages[0].content[1]" || !strings.Contains(msg, "not public") {
			t.Errorf("status %d param %q: %s", resp.StatusCode, param, msg)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		f, _ := visionFixture(t, server.MediaConfig{AllowedDomains: allowed, AllowPrivate: true})
		resp, body := post(t, f.url+"/v1/chat/completions", chatWithImages(origin.URL+"/cat.png"))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("status %d: %s", resp.StatusCode, body)
		}
		for _, path := range []string{"/big.png", "/missing.png"} {
			resp, body = post(t, f.url+"/v1/chat/completions", chatWithImages(origin.URL+path))
			if param, _ := errorParam(t, body); resp.StatusCode != http.StatusBadRequest || param != "messages[0].content[1]" {
				t.Errorf("%s: status %d: %s", path, resp.StatusCode, body)
			}
		}
		resp, body = post(t, f.url+"/v1/chat/completions", chatWithImages("http://localhost.example/cat.png"))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "allowed-media-domains") {
			t.Errorf("a host not allowed: status %d: %s", resp.StatusCode, body)
		}
	})
}

// TestAnthropicImages: an image block with base64 data generates on a
// model with a projector; a broken one is a 400 naming the block.
func TestAnthropicImages(t *testing.T) {
	f, fp := visionFixture(t, server.MediaConfig{})
	img := base64.StdEncoding.EncodeToString(pngBytes(t, 4, 4))
	block := func(data string) string {
		return `{"model":"` + modelName + `","max_tokens":3,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}}]}]}`
	}
	resp, body := post(t, f.url+"/v1/messages", block(img))
	if resp.StatusCode != http.StatusOK || fp.encodes.Load() != 1 {
		t.Errorf("status %d, %d encodes: %s", resp.StatusCode, fp.encodes.Load(), body)
	}
	resp, body = post(t, f.url+"/v1/messages", block(base64.StdEncoding.EncodeToString([]byte("GIF89a"))))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "messages.0.content.1") {
		t.Errorf("a broken image: status %d: %s", resp.StatusCode, body)
	}
}

// TestNodeImageClients: the official npm openai client sends an image_url
// part (whole and streamed: the same greedy text) and gets a bad image's
// 400 with its param; the npm ollama client sends images on chat and
// generate (bytes, which it base64-encodes).
func TestNodeImageClients(t *testing.T) {
	mods := nodeModules(t, "openai", "ollama")
	f, fp := visionFixture(t, server.MediaConfig{})
	var got struct {
		Chat, Streamed, Ollama, OllamaGenerate string
		PromptTokens                           int
		Error                                  *struct {
			Status int
			Param  string
		}
	}
	runNode(t, mods, "testdata/image-clients.cjs", &got, f.url, base64.StdEncoding.EncodeToString(pngBytes(t, 8, 8)))
	if got.Chat == "" || got.Chat != got.Streamed {
		t.Errorf("chat %q, streamed %q", got.Chat, got.Streamed)
	}
	if got.PromptTokens < 6 {
		t.Errorf("%d prompt tokens: the image's 6 rows are not in the prompt", got.PromptTokens)
	}
	if got.Error == nil || got.Error.Status != 400 || got.Error.Param != "messages[0].content[0]" {
		t.Errorf("error %+v", got.Error)
	}
	if got.Ollama == "" || got.OllamaGenerate == "" {
		t.Errorf("ollama chat %q, generate %q", got.Ollama, got.OllamaGenerate)
	}
	if n := fp.encodes.Load(); n != 1 {
		t.Errorf("one image sent four times was encoded %d times", n)
	}
}
