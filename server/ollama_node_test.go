package server_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestNodeOllamaClient drives the /api routes with the official npm ollama
// client: generate and chat, streamed and not, list, show, ps, version, an
// unknown model, a stream the client aborts, embed; greedy output equals
// llama.cpp's.
func TestNodeOllamaClient(t *testing.T) {
	mods := filepath.Dir(testmodels.NPMPackage(t, "ollama"))
	f := newFixture(t, options{})
	rc := loadCases(t)[0]
	cmd := exec.Command("node", "testdata/ollama-client.cjs", f.url, modelName, rc.Prompt, strconv.Itoa(len(rc.GreedyIDs)))
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	type final struct {
		Done            bool   `json:"done"`
		DoneReason      string `json:"done_reason"`
		EvalCount       int    `json:"eval_count"`
		PromptEvalCount int    `json:"prompt_eval_count"`
		TotalDuration   int64  `json:"total_duration"`
	}
	var got struct {
		Generate, GenerateStreamed, Chat, ChatStreamed, ChatRole, Version string
		GenerateFinal, GenerateStreamedFinal                              final
		GenerateParts                                                     int
		List                                                              []struct{ Name, Family string }
		Show                                                              struct {
			Family, Arch string
			Capabilities []string
		}
		Ps []struct {
			Name          string
			ContextLength int `json:"context_length"`
		}
		Error *struct {
			Name, Message string
			Status        int
		}
		Aborted bool
		Embed   *struct{ Count, Dim int }
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := f.text(rc.GreedyIDs)
	if got.Generate != want || got.GenerateStreamed != want {
		t.Errorf("generate %q, streamed %q; want %q", got.Generate, got.GenerateStreamed, want)
	}
	if g := got.GenerateFinal; !g.Done || g.DoneReason != "length" || g.EvalCount != len(rc.GreedyIDs) || g.PromptEvalCount != len(rc.PromptIDs) || g.TotalDuration <= 0 {
		t.Errorf("generate's final object %+v", g)
	}
	if g := got.GenerateStreamedFinal; !g.Done || g.EvalCount != len(rc.GreedyIDs) || got.GenerateParts < 3 {
		t.Errorf("streamed generate: %d parts, the last %+v", got.GenerateParts, g)
	}
	if got.Chat == "" || got.ChatStreamed != got.Chat || got.ChatRole != "assistant" {
		t.Errorf("chat %q (role %q), streamed %q", got.Chat, got.ChatRole, got.ChatStreamed)
	}
	if len(got.List) != 1 || got.List[0].Name != "stories:latest" || got.List[0].Family != "llama" {
		t.Errorf("list %+v", got.List)
	}
	if got.Show.Family != "llama" || got.Show.Arch != "llama" || len(got.Show.Capabilities) == 0 {
		t.Errorf("show %+v", got.Show)
	}
	if len(got.Ps) != 1 || got.Ps[0].Name != "stories:latest" || got.Ps[0].ContextLength != f.rt.MaxModelLen() {
		t.Errorf("ps %+v", got.Ps)
	}
	if got.Version == "" {
		t.Error("no version")
	}
	if e := got.Error; e == nil || e.Name != "ResponseError" || e.Status != 404 || e.Message != "model 'nope' not found" {
		t.Errorf("error %+v", got.Error)
	}
	if !got.Aborted {
		t.Error("the aborted stream did not end with an AbortError")
	}
	if got.Embed == nil || got.Embed.Count != 2 || got.Embed.Dim != f.m.Config.Dim {
		t.Errorf("embed %+v", got.Embed)
	}
	f.waitIdle(t)
}
