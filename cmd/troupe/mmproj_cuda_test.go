package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// TestRunImageCUDA: troupe run --mmproj --image on --device cuda (the CUDA
// emulator where there is no GPU) answers, the model on the GPU and the
// image encoder on the CPU, which stderr says once; the prompt is the CPU
// device's, which says nothing of it.
func TestRunImageCUDA(t *testing.T) {
	env, err := cudaemu.Env()
	if err != nil {
		cudaemu.Unavailable(t, err)
	}
	bin := buildTroupe(t)
	stories, proj, pic := imageFixture(t)
	type answer struct {
		PromptIDs []int32 `json:"prompt_ids"`
		IDs       []int32 `json:"ids"`
	}
	run := func(device string) (answer, string) {
		t.Helper()
		cmd := exec.Command(bin, "run", "-m", stories, "--mmproj", proj, "--image", pic, "-p", "Look: <__media__> Once upon a time",
			"-n", "8", "--temp", "0", "--output", "json", "--device", device)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("--device %s: %v; stderr:\n%s", device, err, stderr.String())
		}
		var a answer
		if err := json.Unmarshal(stdout.Bytes(), &a); err != nil || len(a.IDs) != 8 {
			t.Fatalf("--device %s: %v: %s", device, err, stdout.String())
		}
		return a, stderr.String()
	}
	onCPU, errCPU := run("cpu")
	onGPU, errGPU := run("cuda")
	if strings.Contains(errCPU, "image encoder") {
		t.Errorf("--device cpu: stderr %q speaks of the encoder", errCPU)
	}
	if lines := strings.Split(strings.TrimSpace(errGPU), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "image encoder runs on the CPU") {
		t.Errorf("--device cuda: stderr %q; want one line saying the encoder runs on the CPU", errGPU)
	}
	if !slices.Equal(onGPU.PromptIDs, onCPU.PromptIDs) {
		t.Errorf("prompt on CUDA %v, on the CPU %v", onGPU.PromptIDs, onCPU.PromptIDs)
	}
	t.Logf("greedy ids: CUDA %v, CPU %v", onGPU.IDs, onCPU.IDs)
}
