package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/hub/hubtest"
	"github.com/troupe-llm/troupe/internal/synth"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/lora"
	"github.com/troupe-llm/troupe/model/vision"
	"github.com/troupe-llm/troupe/server"
	"github.com/troupe-llm/troupe/server/servetest"
)

// managed is a Manager serving a directory with two models: "small"
// (stories260K) and "tiny" (TinyStories-656K), on an injected clock.
type managed struct {
	url string
	m   *server.Manager
	dir string
	now atomic.Int64 // nanoseconds since the clock's epoch

	// answers maps a copy or an adapter to the model name its responses
	// carry (the model's own, as for --served-model-name's aliases).
	answers map[string]string

	mu    sync.Mutex
	loads map[string]int
	gates map[string]chan struct{} // a load of this model waits for the channel to close
}

func (f *managed) advance(d time.Duration) { f.now.Add(int64(d)) }

func (f *managed) loadCount(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loads[name]
}

func (f *managed) gate(name string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan struct{})
	f.gates[name] = c
	return c
}

// load opens spec's model and adapters on the CPU, counting the loads.
func (f *managed) load(_ context.Context, sys *actor.ActorSystem, spec server.LoadSpec) (*actors.Runtime, func(), error) {
	f.mu.Lock()
	f.loads[spec.Name]++
	g := f.gates[spec.Name]
	f.mu.Unlock()
	if g != nil {
		<-g
	}
	m, err := model.Open(spec.Path)
	if err != nil {
		return nil, nil, err
	}
	var set []lora.Scaled
	closeAll := func() {
		for _, s := range set {
			s.Adapter.Close()
		}
		m.Close()
	}
	for _, a := range spec.Adapters {
		ad, err := lora.Open(a.Path)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		set = append(set, lora.Scaled{Adapter: ad, Scale: a.Scale})
	}
	if err := m.SetAdapters(set); err != nil {
		closeAll()
		return nil, nil, err
	}
	var encoder actors.ImageEncoder
	if spec.Projector != "" { // as serve's loadManaged opens it
		p, err := vision.Open(spec.Projector)
		if err == nil {
			err = p.Check(m.Config.InputDim())
		}
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		encoder = p
		closeModel := closeAll
		closeAll = func() {
			closeModel()
			p.Close()
		}
	}
	rt, err := actors.Start(sys, m, actors.Config{NewBackend: backend.For(m, backend.DeviceCPU), MaxModelLen: spec.MaxModelLen, Encoder: encoder})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return rt, closeAll, nil
}

// modelBytes are the bytes of the test models' file name.
func modelBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(testmodels.Path(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// linkStories links each of paths to the test models' stories260K.gguf.
func linkStories(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Symlink(testmodels.Path(t, "stories260K.gguf"), p); err != nil {
			t.Fatal(err)
		}
	}
}

func newManaged(t *testing.T, tweak func(*server.ManagerConfig)) *managed {
	t.Helper()
	f := &managed{dir: t.TempDir(), loads: map[string]int{}, gates: map[string]chan struct{}{}, answers: map[string]string{}}
	for name, file := range map[string]string{"small": "stories260K.gguf", "tiny": "TinyStories-656K-Q8_0.gguf"} {
		if err := os.Symlink(testmodels.Path(t, file), filepath.Join(f.dir, name+".gguf")); err != nil {
			t.Fatal(err)
		}
	}
	sys := servetest.QuietSystem(t)
	cfg := server.ManagerConfig{Dir: f.dir, KeepAlive: 5 * time.Minute, Load: f.load,
		Now: func() time.Time { return time.Unix(1e9, f.now.Load()) }}
	if tweak != nil {
		tweak(&cfg)
	}
	m, err := server.NewManager(sys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	ts := httptest.NewServer(m.Handler())
	t.Cleanup(func() {
		ts.Close()
		m.Close()
	})
	f.url = ts.URL
	return f
}

// complete asks model name for a greedy completion; it returns the status
// and the text (or the body, on an error).
func (f *managed) complete(t *testing.T, name, extra string) (int, string) {
	t.Helper()
	resp, b := post(t, f.url+"/v1/completions", `{"model":"`+name+`","prompt":"Once upon a time","max_tokens":12,"temperature":0`+extra+`}`)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(b)
	}
	var out struct {
		Model   string
		Choices []struct{ Text string }
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("%s: %s", name, b)
	}
	want := name
	if a, ok := f.answers[name]; ok {
		want = a
	}
	if out.Model != want {
		t.Errorf("asked %q, answered by %q", name, out.Model)
	}
	return resp.StatusCode, out.Choices[0].Text
}

// psNames are the models /api/ps lists.
func (f *managed) psNames(t *testing.T) []string {
	t.Helper()
	var ps struct {
		Models []struct {
			Name      string    `json:"name"`
			ExpiresAt time.Time `json:"expires_at"`
		}
	}
	resp, b := get(t, f.url+"/api/ps")
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &ps) != nil {
		t.Fatalf("/api/ps: %d %s", resp.StatusCode, b)
	}
	var out []string
	for _, m := range ps.Models {
		out = append(out, m.Name)
	}
	return out
}

// TestManagerTwoModels: both models listed before either loads; a request
// to each loads it once and is answered by it; /api/ps shows both; an
// unknown model is a 404 in each dialect's shape.
func TestManagerTwoModels(t *testing.T) {
	f := newManaged(t, nil)
	resp, b := get(t, f.url+"/v1/models")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"small"`) || !strings.Contains(string(b), `"id":"tiny"`) ||
		strings.Contains(string(b), `"loaded"`) {
		t.Fatalf("/v1/models before any request: %d %s", resp.StatusCode, b)
	}
	_, b = get(t, f.url+"/api/tags")
	if !strings.Contains(string(b), `"small:latest"`) || !strings.Contains(string(b), `"tiny:latest"`) {
		t.Fatalf("/api/tags: %s", b)
	}
	if got := f.psNames(t); len(got) != 0 {
		t.Fatalf("/api/ps before any request: %v", got)
	}
	_, small := f.complete(t, "small", "")
	_, tiny := f.complete(t, "tiny", "")
	if code, again := f.complete(t, "small", ""); code != 200 || again != small {
		t.Errorf("small again: %d %q, first %q", code, again, small)
	}
	if small == tiny {
		t.Errorf("both models answered %q: the requests did not reach different models", small)
	}
	resp, b = post(t, f.url+"/api/generate", `{"model":"tiny:latest","prompt":"Once","stream":false,"options":{"num_predict":3}}`)
	if resp.StatusCode != 200 {
		t.Errorf("/api/generate tiny:latest: %d %s", resp.StatusCode, b)
	}
	if got := f.psNames(t); !slices.Equal(got, []string{"small:latest", "tiny:latest"}) {
		t.Errorf("/api/ps: %v", got)
	}
	if f.loadCount("small") != 1 || f.loadCount("tiny") != 1 {
		t.Errorf("loads: %v, want one each", f.loads)
	}
	_, b = get(t, f.url+"/v1/models")
	if strings.Count(string(b), `"loaded"`) != 2 {
		t.Errorf("/v1/models after both loaded: %s", b)
	}

	resp, b = post(t, f.url+"/v1/completions", `{"model":"nope","prompt":"x"}`)
	var oai struct {
		Error struct{ Code, Message string }
	}
	if resp.StatusCode != 404 || json.Unmarshal(b, &oai) != nil || oai.Error.Code != "model_not_found" || !strings.Contains(oai.Error.Message, `"small"`) {
		t.Errorf("OpenAI unknown model: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, f.url+"/api/chat", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`)
	var oll struct{ Error string }
	if resp.StatusCode != 404 || json.Unmarshal(b, &oll) != nil || oll.Error == "" {
		t.Errorf("Ollama unknown model: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, f.url+"/v1/messages", `{"model":"nope","max_tokens":3,"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 404 || !strings.Contains(string(b), `"not_found_error"`) {
		t.Errorf("Anthropic unknown model: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, f.url+"/v1/completions", `{"prompt":"x"}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "model is required") {
		t.Errorf("no model with two served: %d %s", resp.StatusCode, b)
	}
}

// TestManagerKeepAlive: an idle model unloads once its keep-alive has
// passed on the injected clock (the default, a request's, 0 at once, -1
// never).
func TestManagerKeepAlive(t *testing.T) {
	f := newManaged(t, nil)
	f.complete(t, "small", "")
	f.advance(4 * time.Minute)
	f.m.Sweep()
	if got := f.psNames(t); len(got) != 1 {
		t.Fatalf("after 4 of 5 minutes: %v loaded", got)
	}
	f.advance(time.Minute)
	f.m.Sweep()
	if got := f.psNames(t); len(got) != 0 {
		t.Fatalf("after 5 of 5 minutes: %v still loaded", got)
	}

	f.complete(t, "small", `,"keep_alive":"10s"`)
	f.advance(9 * time.Second)
	f.m.Sweep()
	if len(f.psNames(t)) != 1 {
		t.Fatal("keep_alive 10s: unloaded after 9s")
	}
	f.advance(time.Second)
	f.m.Sweep()
	if len(f.psNames(t)) != 0 {
		t.Fatal("keep_alive 10s: loaded after 10s")
	}

	resp, b := post(t, f.url+"/api/generate", `{"model":"tiny","prompt":"Once","stream":false,"keep_alive":0,"options":{"num_predict":2}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("keep_alive 0: %d %s", resp.StatusCode, b)
	}
	if got := f.psNames(t); len(got) != 0 {
		t.Errorf("keep_alive 0: %v loaded after the request", got)
	}

	f.complete(t, "tiny", `,"keep_alive":-1`)
	f.advance(1000 * time.Hour)
	f.m.Sweep()
	if got := f.psNames(t); len(got) != 1 {
		t.Errorf("keep_alive -1: %v loaded after 1000h", got)
	}
	if n := f.loadCount("small"); n != 2 {
		t.Errorf("small loaded %d times, want 2", n)
	}
	resp, b = post(t, f.url+"/v1/completions", `{"model":"small","prompt":"x","keep_alive":"soon"}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "keep_alive") {
		t.Errorf("keep_alive soon: %d %s", resp.StatusCode, b)
	}
}

// TestManagerMaxLRU: at --models-max 2 a third model evicts the least
// recently used idle one; a model busy (here: loading, held by its
// request) is never evicted: past the bound with all busy and no queue
// (MaxQueue 0, --models-queue 0), 503 at once.
func TestManagerMaxLRU(t *testing.T) {
	f := newManaged(t, func(c *server.ManagerConfig) {
		c.MaxLoaded = 2
		c.Models = []server.ModelSource{{Name: "third", Path: testmodels.Path(t, "stories260K.gguf")}}
	})
	f.complete(t, "small", "")
	f.advance(time.Second)
	f.complete(t, "tiny", "")
	f.advance(time.Second)
	f.complete(t, "small", "") // tiny is now the least recently used
	f.advance(time.Second)
	f.complete(t, "third", "")
	if got := f.psNames(t); !slices.Equal(got, []string{"small:latest", "third:latest"}) {
		t.Fatalf("after small, tiny, small, third at max 2: %v", got)
	}

	f2 := newManaged(t, func(c *server.ManagerConfig) { c.MaxLoaded = 1 })
	gate, small := f2.busyLoading("small") // the request holds small while it loads
	resp, b := post(t, f2.url+"/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":1}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("tiny while small is busy at max 1: %d %s", resp.StatusCode, b)
	}
	f2.releaseThenLoad(t, gate, small, "small", "tiny")
}

// TestManagerConcurrentFirstRequests: requests that arrive while their
// model loads wait for the one load.
func TestManagerConcurrentFirstRequests(t *testing.T) {
	f := newManaged(t, nil)
	gate := f.gate("tiny")
	const n = 4
	codes := make(chan int, n)
	for range n {
		go func() {
			code, _ := f.complete(t, "tiny", "")
			codes <- code
		}()
	}
	for f.m.Busy("tiny") != n {
		runtime.Gosched()
	}
	close(gate)
	for range n {
		if code := <-codes; code != 200 {
			t.Errorf("status %d", code)
		}
	}
	if got := f.loadCount("tiny"); got != 1 {
		t.Errorf("tiny loaded %d times for %d concurrent first requests", got, n)
	}
}

// TestManagerRouterRoutes: llama-server's /models/load and /models/unload,
// and --no-models-autoload.
func TestManagerRouterRoutes(t *testing.T) {
	f := newManaged(t, func(c *server.ManagerConfig) { c.NoAutoload = true })
	resp, b := post(t, f.url+"/v1/completions", `{"model":"small","prompt":"x","max_tokens":1}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "/models/load") {
		t.Fatalf("a request for an unloaded model with no autoload: %d %s", resp.StatusCode, b)
	}
	if resp, b = post(t, f.url+"/models/load", `{"model":"small"}`); resp.StatusCode != 200 {
		t.Fatalf("/models/load: %d %s", resp.StatusCode, b)
	}
	if code, _ := f.complete(t, "small", ""); code != 200 {
		t.Fatalf("after /models/load: %d", code)
	}
	_, b = get(t, f.url+"/models")
	if !strings.Contains(string(b), `"id":"small"`) || strings.Count(string(b), `"loaded"`) != 1 {
		t.Errorf("/models: %s", b)
	}
	if resp, b = post(t, f.url+"/models/unload", `{"model":"small"}`); resp.StatusCode != 200 {
		t.Fatalf("/models/unload: %d %s", resp.StatusCode, b)
	}
	if resp, b = post(t, f.url+"/models/unload", `{"model":"small"}`); resp.StatusCode != 400 {
		t.Errorf("/models/unload of an unloaded model: %d %s", resp.StatusCode, b)
	}
	if resp, b = post(t, f.url+"/models/load", `{"model":"nope"}`); resp.StatusCode != 404 {
		t.Errorf("/models/load nope: %d %s", resp.StatusCode, b)
	}
	if resp, b = post(t, f.url+"/models/load", `{"model":"small","x":1}`); resp.StatusCode != 400 || !strings.Contains(string(b), `"x"`) {
		t.Errorf("/models/load with an unknown field: %d %s", resp.StatusCode, b)
	}
}

// TestManagerCreateCopyDelete: Ollama's /api/create (FROM a model, with
// PARAMETERs), /api/copy (another name of the same model: no second
// load) and /api/delete; unsupported Modelfile instructions are 400s.
func TestManagerCreateCopyDelete(t *testing.T) {
	f := newManaged(t, nil)
	checkCreate(t, f)
	checkCreateSystem(t, f)
	checkCopyDelete(t, f)
	checkDeleteBusy(t, f)
}

// checkCreate: /api/create FROM small with PARAMETERs makes "mine", its
// temperature and num_ctx applied; unsupported instructions are 400s.
func checkCreate(t *testing.T, f *managed) {
	t.Helper()
	resp, b := post(t, f.url+"/api/create", `{"model":"mine","modelfile":"FROM small\nPARAMETER temperature 0\nPARAMETER num_ctx 64\n","stream":false}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "success") {
		t.Fatalf("/api/create: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, f.url+"/v1/completions", `{"model":"mine","prompt":"Once upon a time","max_tokens":12}`) // no temperature: the Modelfile's 0
	if resp.StatusCode != 200 {
		t.Fatalf("mine: %d %s", resp.StatusCode, b)
	}
	_, small := f.complete(t, "small", "")
	if !strings.Contains(string(b), jsonString(small)) {
		t.Errorf("mine (small at temperature 0 by its Modelfile) answered %s; small greedy %q", b, small)
	}
	_, b = get(t, f.url+"/v1/models")
	if !strings.Contains(string(b), `"max_model_len":64`) {
		t.Errorf("num_ctx 64 not applied: %s", b)
	}
	for _, c := range []struct{ body, want string }{
		{`{"model":"x","modelfile":"FROM small\nMESSAGE user hi\n"}`, "MESSAGE"},
		{`{"model":"x","modelfile":"FROM small\nLICENSE MIT\n"}`, "LICENSE"},
		{`{"model":"x","modelfile":"FROM small\nPARAMETER mirostat 2\n"}`, "mirostat"},
		{`{"model":"x","modelfile":"FROM small\nPARAMETER temperature 9\n"}`, "temperature"},
		{`{"model":"x","modelfile":"FROM small\nTEMPLATE {{ .Prompt }\n"}`, "template"},
		{`{"model":"x","from":"nowhere"}`, "from"},
		{`{"model":"x","from":"small","quantize":"q4_0"}`, "quantize"},
		{`{"model":"small","from":"tiny"}`, "exists"},
	} {
		resp, b := post(t, f.url+"/api/create", c.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("create %s: %d %s, want 400 naming %s", c.body, resp.StatusCode, b, c.want)
		}
	}
}

// checkCreateSystem: /api/create with a system message makes "teller",
// whose prompts render it.
func checkCreateSystem(t *testing.T, f *managed) {
	t.Helper()
	resp, b := post(t, f.url+"/api/create", `{"model":"teller","from":"small","system":"You tell stories to children.","stream":false}`)
	if resp.StatusCode != 200 {
		t.Fatalf("/api/create with system: %d %s", resp.StatusCode, b)
	}
	promptTokens := func(name string) int {
		resp, b := post(t, f.url+"/v1/chat/completions", `{"model":"`+name+`","messages":[{"role":"user","content":"Hi"}],"max_tokens":1}`)
		var out struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			}
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
		}
		return out.Usage.PromptTokens
	}
	if with, without := promptTokens("teller"), promptTokens("small"); with <= without {
		t.Errorf("SYSTEM: the prompt has %d tokens, %d without: the system message is not rendered", with, without)
	}
}

// checkCopyDelete: /api/copy names tiny again (no second load); a model
// with a copy is not deleted, then the copies and the models are, their
// files with them.
func checkCopyDelete(t *testing.T, f *managed) {
	t.Helper()
	resp, b := post(t, f.url+"/api/copy", `{"source":"tiny","destination":"tiny2"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("/api/copy: %d %s", resp.StatusCode, b)
	}
	if resp, b = post(t, f.url+"/api/copy", `{"source":"nope","destination":"x"}`); resp.StatusCode != 404 {
		t.Errorf("/api/copy of nothing: %d %s", resp.StatusCode, b)
	}
	_, tiny := f.complete(t, "tiny", "")
	f.answers["tiny2"] = "tiny"
	if code, got := f.complete(t, "tiny2", ""); code != 200 || got != tiny {
		t.Errorf("tiny2: %d %q, tiny %q", code, got, tiny)
	}
	if f.loadCount("tiny") != 1 {
		t.Errorf("tiny loaded %d times for tiny and its copy", f.loadCount("tiny"))
	}
	if resp, b = deleteReq(t, f.url+"/api/delete", `{"model":"tiny"}`); resp.StatusCode != 400 || !strings.Contains(string(b), "tiny2") {
		t.Errorf("delete a model with a copy: %d %s", resp.StatusCode, b)
	}
	for _, name := range []string{"tiny2", "tiny", "mine", "teller"} {
		if resp, b = deleteReq(t, f.url+"/api/delete", `{"model":"`+name+`"}`); resp.StatusCode != 200 {
			t.Errorf("delete %s: %d %s", name, resp.StatusCode, b)
		}
	}
	if _, err := os.Lstat(filepath.Join(f.dir, "tiny.gguf")); !os.IsNotExist(err) {
		t.Errorf("tiny.gguf still there after delete: %v", err)
	}
	_, b = get(t, f.url+"/api/tags")
	if strings.Contains(string(b), "tiny") || strings.Contains(string(b), "mine") || !strings.Contains(string(b), "small") {
		t.Errorf("/api/tags after the deletes: %s", b)
	}
	if resp, b = deleteReq(t, f.url+"/api/delete", `{"model":"tiny"}`); resp.StatusCode != 404 {
		t.Errorf("delete again: %d %s", resp.StatusCode, b)
	}
}

// checkDeleteBusy: a model a request holds is a 409 to /api/delete.
func checkDeleteBusy(t *testing.T, f *managed) {
	t.Helper()
	gate := f.gate("small")
	f.m.Sweep()
	post(t, f.url+"/models/unload", `{"model":"small"}`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.complete(t, "small", "")
	}()
	for f.m.Busy("small") != 1 {
		runtime.Gosched()
	}
	if resp, b := deleteReq(t, f.url+"/api/delete", `{"model":"small"}`); resp.StatusCode != 409 {
		t.Errorf("delete a busy model: %d %s", resp.StatusCode, b)
	}
	close(gate)
	<-done
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func deleteReq(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestManagerPull: /api/pull from a fake hub on 127.0.0.1 streams NDJSON
// progress, then the model is listed and served.
func TestManagerPull(t *testing.T) {
	data := modelBytes(t, "stories260K.gguf")
	h := hubtest.New(t, hubtest.Repo{ID: "acme/stories-GGUF", Files: []hubtest.File{{Name: "stories.gguf", Data: data, LFS: true}}})
	f := newManaged(t, func(c *server.ManagerConfig) {
		useHub(t, c, h)
	})
	resp, err := http.Post(f.url+"/api/pull", "application/json", strings.NewReader(`{"model":"hf.co/acme/stories-GGUF/stories.gguf"}`))
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line struct {
			Status, Error    string
			Total, Completed int64
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("not NDJSON: %q", sc.Text())
		}
		if line.Error != "" {
			t.Fatalf("pull: %s", line.Error)
		}
		if line.Total > 0 && line.Total != int64(len(data)) {
			t.Errorf("total %d, want %d", line.Total, len(data))
		}
		statuses = append(statuses, line.Status)
	}
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/x-ndjson" || len(statuses) < 3 || statuses[0] != "pulling manifest" ||
		statuses[len(statuses)-1] != "success" {
		t.Fatalf("pull statuses %v (%s)", statuses, resp.Header.Get("Content-Type"))
	}
	_, b := get(t, f.url+"/api/tags")
	if !strings.Contains(string(b), "hf.co/acme/stories-GGUF/stories.gguf") {
		t.Errorf("/api/tags after the pull: %s", b)
	}
	if code, out := f.complete(t, "hf.co/acme/stories-GGUF/stories.gguf", ""); code != 200 {
		t.Errorf("the pulled model: %d %s", code, out)
	}
	checkPullRefused(t, f.url, map[string]string{
		`{"model":"hf.co/acme/missing-GGUF/x.gguf","stream":false}`: "pull",
		`{"model":"llama3.2","stream":false}`:                       "registry",
		`{"model":"hf.co/acme/stories-GGUF:Q4_0","stream":false}`:   "no Q4_0 file; its quants: stories.gguf",
	})
}

// checkPullRefused posts each body of refused to /api/pull: each is a 400
// whose body holds its text.
func checkPullRefused(t *testing.T, url string, refused map[string]string) {
	t.Helper()
	for body, want := range refused {
		resp, b := post(t, url+"/api/pull", body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), want) {
			t.Errorf("pull %s: %d %s, want 400 with %q", body, resp.StatusCode, b, want)
		}
	}
}

// TestManagerRuntimeLoRA: vLLM's /v1/load_lora_adapter makes the adapter a
// model name (listed with its parent) that runs the base model with it,
// as the base with lora [{id, scale 1}] does; unload removes the name.
func TestManagerRuntimeLoRA(t *testing.T) {
	off := newManaged(t, nil)
	if resp, b := post(t, off.url+"/v1/load_lora_adapter", `{"lora_name":"a","lora_path":"x"}`); resp.StatusCode != 404 ||
		!strings.Contains(string(b), "--enable-lora-runtime") {
		t.Errorf("runtime LoRA off: %d %s", resp.StatusCode, b)
	}

	f := newManaged(t, func(c *server.ManagerConfig) { c.RuntimeLoRA = true })
	path := synthtest.LoRAFile(t, testmodels.Path(t, "stories260K.gguf"), synth.LoRAOptions{Rank: 4, Alpha: 8, Seed: 1})
	_, base := f.complete(t, "small", "")
	resp, b := post(t, f.url+"/v1/load_lora_adapter", `{"lora_name":"story-lora","lora_path":"`+path+`"}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "base_model_name") {
		t.Errorf("two models and no base_model_name: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, f.url+"/v1/load_lora_adapter", `{"lora_name":"story-lora","lora_path":"`+path+`","base_model_name":"small"}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Success") {
		t.Fatalf("load_lora_adapter: %d %s", resp.StatusCode, b)
	}
	if resp, b = post(t, f.url+"/v1/load_lora_adapter", `{"lora_name":"story-lora","lora_path":"`+path+`","base_model_name":"small"}`); resp.StatusCode != 400 {
		t.Errorf("the same adapter twice: %d %s", resp.StatusCode, b)
	}
	if resp, b = post(t, f.url+"/v1/load_lora_adapter", `{"lora_name":"bad","lora_path":"`+testmodels.Path(t, "stories260K.gguf")+`","base_model_name":"small"}`); resp.StatusCode != 400 {
		t.Errorf("a model file as an adapter: %d %s", resp.StatusCode, b)
	}
	_, b = get(t, f.url+"/v1/models")
	if !strings.Contains(string(b), `"id":"story-lora"`) || !strings.Contains(string(b), `"parent":"small"`) {
		t.Errorf("/v1/models lists no adapter: %s", b)
	}
	f.answers["story-lora"] = "small"
	code, adapted := f.complete(t, "story-lora", "")
	if code != 200 {
		t.Fatalf("story-lora: %d %s", code, adapted)
	}
	if _, again := f.complete(t, "small", ""); again != base {
		t.Errorf("small after the adapter loaded %q, before %q", again, base)
	}
	if _, explicit := f.complete(t, "small", `,"lora":[{"id":0,"scale":1}]`); explicit != adapted {
		t.Errorf("story-lora %q, small with lora id 0 at 1 %q", adapted, explicit)
	}
	if adapted == base {
		t.Errorf("the adapter did not change the greedy text (%q)", base)
	}
	if resp, b = post(t, f.url+"/v1/unload_lora_adapter", `{"lora_name":"story-lora"}`); resp.StatusCode != 200 {
		t.Fatalf("unload_lora_adapter: %d %s", resp.StatusCode, b)
	}
	if code, _ := f.complete(t, "story-lora", ""); code != 404 {
		t.Errorf("story-lora after unload: %d", code)
	}
	if resp, b = post(t, f.url+"/v1/unload_lora_adapter", `{"lora_name":"story-lora"}`); resp.StatusCode != 404 {
		t.Errorf("unload twice: %d %s", resp.StatusCode, b)
	}
}
