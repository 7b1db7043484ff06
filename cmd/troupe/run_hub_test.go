package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/hub/hubtest"
)

// runIDs runs `troupe run args...` (greedy, JSON output), which must exit
// 0, and returns its prompt and generated ids and its stderr.
func runIDs(t *testing.T, args ...string) (prompt, ids []int32, stderr string) {
	t.Helper()
	a, errOut := greedyRun(t, append(args, "-n", "8", "-t", "1")...)
	return a.PromptIDs, a.IDs, errOut
}

// TestRunHub: troupe run takes a hub model as serve's -m does, and as
// `ollama run hf.co/OWNER/REPO:QUANT` and `llama-cli -hf OWNER/REPO:QUANT`
// do: the GGUF of the quant (Q4_K_M without one) is downloaded once and
// generates what the local file does; the repository's projector is
// fetched and used for --image, and skipped with --no-mmproj; an unknown
// quant is exit 2 naming those there are; an unreachable hub with nothing
// cached is a one-line error, and a cached hf:// file runs without it.
func TestRunHub(t *testing.T) {
	stories, proj, pic := imageFixture(t) // mmproj_test.go
	model := readFile(t, stories)
	projData := readFile(t, proj)
	h := hubtest.New(t,
		hubtest.Repo{ID: "acme/stories-GGUF", Files: []hubtest.File{
			{Name: "stories-Q4_K_M.gguf", Data: model, LFS: true},
			{Name: "stories-Q8_0.gguf", Data: []byte("not this one"), LFS: true},
			{Name: "mmproj-stories-f16.gguf", Data: projData, LFS: true},
		}},
		hubtest.Repo{ID: "acme/plain-GGUF", Files: []hubtest.File{{Name: "plain-Q4_K_M.gguf", Data: model, LFS: true}}})
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_TOKEN", "")
	cache := t.TempDir()
	fetched := func(data []byte) int {
		n := 0
		for _, tr := range h.Transfers() {
			if tr.Path == "/repos/"+hubtest.SHA256(data) {
				n++
			}
		}
		return n
	}
	const prompt = "Once upon a time"
	_, want, _ := runIDs(t, "-m", stories, "-p", prompt)

	// --no-mmproj first: the model alone is fetched.
	_, ids, errOut := runIDs(t, "hf.co/acme/stories-GGUF:Q4_K_M", "--cache-dir", cache, "--no-mmproj", "-p", prompt)
	if !slices.Equal(ids, want) {
		t.Errorf("hf.co/acme/stories-GGUF:Q4_K_M generates %v, the local file %v", ids, want)
	}
	if fetched(model) != 1 || fetched(projData) != 0 || strings.Contains(errOut, "projector") {
		t.Errorf("--no-mmproj: model fetched %d times, projector %d; stderr %s", fetched(model), fetched(projData), errOut)
	}
	// Without it the projector comes too (the model is in the cache), and
	// with -hf and no quant the same file is chosen (Q4_K_M), fetched no more.
	for _, args := range [][]string{
		{"hf.co/acme/stories-GGUF:q4_k_m", "--cache-dir", cache},
		{"-hf", "acme/stories-GGUF", "--cache-dir", cache},
	} {
		_, ids, errOut := runIDs(t, append(args, "-p", prompt)...)
		if !slices.Equal(ids, want) {
			t.Errorf("%v generates %v, the local file %v", args, ids, want)
		}
		if !strings.Contains(errOut, "stories-Q4_K_M.gguf") || !strings.Contains(errOut, "projector mmproj-stories-f16.gguf") {
			t.Errorf("%v: stderr does not say the file and projector chosen: %s", args, errOut)
		}
	}
	if fetched(model) != 1 || fetched(projData) != 1 {
		t.Errorf("model fetched %d times, projector %d: want once each", fetched(model), fetched(projData))
	}
	// The repository's projector takes the image: 16 rows of placeholders.
	promptIDs, _, _ := runIDs(t, "-hf", "acme/stories-GGUF:Q4_K_M", "--cache-dir", cache, "--image", pic, "-p", "Look: <__media__> "+prompt)
	if zeros := len(promptIDs) - len(slices.DeleteFunc(slices.Clone(promptIDs), func(id int32) bool { return id == 0 })); zeros != 16 {
		t.Errorf("--image with the hub's projector: prompt %v, want 16 image rows", promptIDs)
	}

	checkExits(t, []exitCase{
		{"unknown quant", []string{"run", "hf.co/acme/stories-GGUF:Q9_Z", "--cache-dir", cache, "-p", "x"}, 2, "its quants: Q4_K_M, Q8_0"},
		{"image without projector", []string{"run", "hf.co/acme/plain-GGUF", "--cache-dir", cache, "--image", pic, "-p", "x"}, 2, "give one with --mmproj FILE"},
		{"image with --no-mmproj", []string{"run", "-hf", "acme/stories-GGUF", "--no-mmproj", "--image", pic, "-p", "x"}, 2, "--image with --no-mmproj"},
		{"image with a local model", []string{"run", "-m", stories, "--image", pic, "-p", "x"}, 2, "--image needs a projector: give one with --mmproj FILE"},
		{"mmproj and no-mmproj", []string{"run", "-m", stories, "--mmproj", proj, "--no-mmproj", "-p", "x"}, 2, "--no-mmproj and --mmproj"},
		{"model twice", []string{"run", stories, "-m", stories, "-p", "x"}, 2, "the model is given twice"},
		{"hf with a scheme", []string{"run", "-hf", "hf://acme/stories-GGUF", "-p", "x"}, 2, "want OWNER/REPO[:QUANT]"},
		{"serve's flag", []string{"run", "-m", stories, "-p", "x", "--port", "1"}, 2, "unknown flag --port"},
	})

	// The hub unreachable: nothing cached is one line; a cached hf:// file
	// runs (its repository not listed: text only, said in a line).
	down := hubtest.New(t)
	down.Close()
	t.Setenv("HF_ENDPOINT", down.URL)
	for _, spec := range []string{"hf.co/acme/stories-GGUF:Q4_K_M", "hf://acme/stories-GGUF/stories-Q4_K_M.gguf"} {
		_, errOut, code := troupe(t, "run", spec, "--cache-dir", t.TempDir(), "-p", "x")
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "cannot reach") {
			t.Errorf("%s offline, nothing cached: exit %d, stderr %q; want 1 and one line", spec, code, errOut)
		}
	}
	if _, ids, _ := runIDs(t, "hf://acme/stories-GGUF/stories-Q4_K_M.gguf", "--cache-dir", cache, "-p", prompt); !slices.Equal(ids, want) {
		t.Errorf("the cached file offline generates %v, want %v", ids, want)
	}
	// A name with a quant chooses among the cached files (as a pulled
	// Ollama model runs offline), saying so; a quant not cached is an error.
	_, ids, errOut = runIDs(t, "hf.co/acme/stories-GGUF:q4_k_m", "--cache-dir", cache, "-p", prompt)
	if !slices.Equal(ids, want) || !strings.Contains(errOut, "choosing among the cached files") {
		t.Errorf("the cached quant offline generates %v (stderr %q), want %v", ids, errOut, want)
	}
	if _, errOut, code := troupe(t, "run", "hf.co/acme/stories-GGUF:Q8_0", "--cache-dir", cache, "-p", "x"); code == 0 || !strings.Contains(errOut, "Q4_K_M") {
		t.Errorf("a quant not cached, offline: exit %d, stderr %q; want an error naming the cached Q4_K_M", code, errOut)
	}
}
