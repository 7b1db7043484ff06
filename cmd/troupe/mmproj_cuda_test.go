package main

import (
	"slices"
	"strings"
	"testing"
)

// TestRunImageCUDA: troupe run --mmproj --image on --device cuda (the CUDA
// emulator where there is no GPU) answers, the model on the GPU and the
// image encoder on the CPU, which stderr says once; the prompt is the CPU
// device's, which says nothing of it.
func TestRunImageCUDA(t *testing.T) {
	emulated := cudaTroupe(t) // device_test.go
	stories, proj, pic := imageFixture(t)
	run := func(device string) (runOutput, string) {
		t.Helper()
		stdout, stderr := emulated(t, nil, "run", "-m", stories, "--mmproj", proj, "--image", pic, "-p", "Look: <__media__> Once upon a time",
			"-n", "8", "--temp", "0", "--output", "json", "--device", device)
		a := decodeRun(t, stdout)
		if len(a.IDs) != 8 {
			t.Fatalf("--device %s: %s", device, stdout)
		}
		return a, stderr
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
