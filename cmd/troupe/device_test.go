package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/cudaemu"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestDeviceAutoFallback runs `troupe run --device auto` on the CUDA
// emulator made to fail at each stage of putting the model on the GPU (the
// driver, NVRTC, allocation, loading the kernels): each run gives the CPU's
// output, with one line on stderr that says why. Without a failure it runs
// on the emulator and says nothing.
func TestDeviceAutoFallback(t *testing.T) {
	emulated := cudaTroupe(t)
	stories := testmodels.Path(t, "stories260K.gguf")
	args := []string{"run", "-m", stories, "-p", "Once upon a time", "-n", "12", "--temp", "0"}
	want, errOut, code := troupe(t, append(args, "--device", "cpu")...)
	if code != 0 {
		t.Fatalf("--device cpu: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct{ fail, why string }{
		{"cuInit", "cuInit"},
		{"nvrtcCompileProgram", "nvrtcCompileProgram"},
		{"cuMemAlloc", "cuMemAlloc"},
		{"cuModuleLoadData", "cuModuleLoadData"},
		{"", ""}, // CUDA on the emulator
	} {
		t.Run("fail="+tc.fail, func(t *testing.T) {
			stdout, stderr := emulated(t, []string{cudaemu.EnvFail + "=" + tc.fail}, append(args, "--device", "auto")...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if tc.fail == "" {
				if stderr != "" {
					t.Errorf("stderr %q; want nothing (CUDA on the emulator)", stderr)
				}
				return
			}
			if len(lines) != 1 || !strings.Contains(lines[0], "running on the CPU") || !strings.Contains(lines[0], tc.why) {
				t.Errorf("stderr %q; want one line saying the CPU runs it because of %s", stderr, tc.why)
			}
			if stdout != want {
				t.Errorf("output %q; the CPU's %q", stdout, want)
			}
		})
	}
}

// cudaTroupe builds troupe and returns a runner of it on the CUDA emulator
// (the test skips where there is none) with extraEnv; the command must
// exit 0.
func cudaTroupe(t *testing.T) func(t *testing.T, extraEnv []string, args ...string) (stdout, stderr string) {
	env, err := cudaemu.Env()
	if err != nil {
		cudaemu.Unavailable(t, err)
	}
	bin := buildTroupe(t)
	return func(t *testing.T, extraEnv []string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append(os.Environ(), env...), extraEnv...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v; stderr:\n%s", args, err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
}
