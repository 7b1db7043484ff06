package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/hub/hubtest"
	"github.com/troupe-llm/troupe/server"
)

// TestNodeOllamaModels drives the several-models server with the official
// npm ollama client, as Ollama's workflow goes: pull from a hub on
// 127.0.0.1 with progress, list, chat with two models in turn (each answer
// the one that model gives when asked alone), ps showing both with their
// sizes, keep_alive 0 unloading a model once its chat is done, delete.
func TestNodeOllamaModels(t *testing.T) {
	mods := nodeModules(t, "ollama")
	data := modelBytes(t, "stories260K.gguf")
	h := hubtest.New(t, hubtest.Repo{ID: "acme/stories-GGUF", Files: []hubtest.File{{Name: "stories.gguf", Data: data, LFS: true}}})
	sizes := map[string]int64{"small": 3000, "tiny": 5000, "hf.co/acme/stories-GGUF/stories.gguf": 7000}
	f := newManaged(t, func(c *server.ManagerConfig) {
		useHub(t, c, h)
		c.Size = fakeSizes(sizes)
	})
	// What each model answers alone, asked before the client runs.
	alone := map[string]string{}
	for _, name := range []string{"small", "tiny"} {
		resp, b := post(t, f.url+"/api/chat", `{"model":"`+name+`","messages":[{"role":"user","content":"Once upon a time"}],"stream":false,"keep_alive":0,"options":{"num_predict":16,"temperature":0}}`)
		var c struct{ Message struct{ Content string } }
		if resp.StatusCode != 200 || json.Unmarshal(b, &c) != nil {
			t.Fatalf("%s alone: %d %s", name, resp.StatusCode, b)
		}
		alone[name] = c.Message.Content
	}
	if got := f.psNames(t); len(got) != 0 {
		t.Fatalf("keep_alive 0 left %v loaded", got)
	}

	const pulled = "hf.co/acme/stories-GGUF/stories.gguf"
	var got struct {
		Pull []struct {
			Status           string
			Total, Completed int64
		}
		ListAfterPull, ListAfterDelete, PsAfterUnload     []string
		ChatA, ChatB, ChatAAgain, ChatPulled, ChatBUnload string
		Ps                                                []struct {
			Name string
			Size int64
		}
		DeletedAnswered bool
		DeletedError    *struct {
			Status  int
			Message string
		}
	}
	runNode(t, mods, "testdata/ollama-models-client.cjs", &got, f.url, pulled, "small", "tiny")
	var statuses []string
	sawBytes := false
	for _, p := range got.Pull {
		statuses = append(statuses, p.Status)
		sawBytes = sawBytes || p.Total == int64(len(data)) && p.Completed == p.Total
	}
	if len(statuses) < 3 || statuses[0] != "pulling manifest" || statuses[len(statuses)-1] != "success" || !sawBytes {
		t.Errorf("pull progress %+v", got.Pull)
	}
	if !slices.Contains(got.ListAfterPull, pulled+":latest") && !slices.Contains(got.ListAfterPull, pulled) ||
		!slices.Contains(got.ListAfterPull, "small:latest") || !slices.Contains(got.ListAfterPull, "tiny:latest") {
		t.Errorf("list after the pull: %v", got.ListAfterPull)
	}
	if got.ChatA != alone["small"] || got.ChatAAgain != alone["small"] || got.ChatB != alone["tiny"] || got.ChatBUnload != alone["tiny"] {
		t.Errorf("chats in turn: small %q then %q, tiny %q then %q; alone small %q, tiny %q",
			got.ChatA, got.ChatAAgain, got.ChatB, got.ChatBUnload, alone["small"], alone["tiny"])
	}
	if alone["small"] == alone["tiny"] || got.ChatPulled == "" {
		t.Errorf("small and tiny answered alike (%q), or the pulled model not at all (%q)", alone["small"], got.ChatPulled)
	}
	psSizes := map[string]int64{}
	for _, m := range got.Ps {
		psSizes[m.Name] = m.Size
	}
	if psSizes["small:latest"] != 3000 || psSizes["tiny:latest"] != 5000 || psSizes[pulled+":latest"] != 7000 {
		t.Errorf("ps: %+v", got.Ps)
	}
	if slices.Contains(got.PsAfterUnload, "tiny:latest") || !slices.Contains(got.PsAfterUnload, "small:latest") {
		t.Errorf("ps after tiny's chat with keep_alive 0: %v", got.PsAfterUnload)
	}
	if slices.ContainsFunc(got.ListAfterDelete, func(n string) bool { return strings.HasPrefix(n, "hf.co/") }) ||
		len(got.ListAfterDelete) != 2 {
		t.Errorf("list after delete: %v", got.ListAfterDelete)
	}
	if got.DeletedAnswered || got.DeletedError == nil || got.DeletedError.Status != 404 {
		t.Errorf("a chat with the deleted model: answered %v, error %+v", got.DeletedAnswered, got.DeletedError)
	}
}
