package cuda_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/internal/cudaemu"
)

// TestGPUTestsUnderCI runs one GPU test of this package (TestCopyRoundTrip)
// in a copy of this test binary under CI=true where it can run neither on a
// device nor on the emulator: it must fail, never skip. And where a
// libcuda.so.1 is installed but reports no device, the emulator must take
// over, so the test runs.
func TestGPUTestsUnderCI(t *testing.T) {
	if os.Getenv("TROUPE_CI_CHILD") == "1" {
		t.Skip("a child of this test")
	}
	// A libcuda.so.1 that loads but is no usable driver (only cuInit,
	// which finds no device), as in a container with the driver's
	// libraries and no GPU.
	env, err := cudaemu.Env()
	if err != nil {
		cudaemu.Unavailable(t, err)
	}
	cxx := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, cudaemu.EnvCXX+"="); ok {
			cxx = v
		}
	}
	noDevice := t.TempDir()
	build := exec.Command(cxx, "-x", "c", "-shared", "-fPIC", "-o", filepath.Join(noDevice, "libcuda.so.1"), "-")
	build.Stdin = strings.NewReader("int cuInit(unsigned flags) { return 100; /* CUDA_ERROR_NO_DEVICE */ }\n")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a driver without a device: %v\n%s", err, out)
	}
	realGPU := cuda.Available() == nil && !cudaemu.Active()
	for _, tc := range []struct {
		name string
		env  []string
		pass bool // the test runs (on the emulator) and passes
	}{
		{"no emulator", []string{cudaemu.EnvEmu + "=0"}, false},
		{"emulator build fails", []string{cudaemu.EnvEmu + "=1", cudaemu.EnvCXX + "=" + filepath.Join(noDevice, "no-such-c++")}, false},
		{"driver without a device, emulator fails", []string{cudaemu.EnvEmu + "=", cuda.LibDirsEnv + "=" + noDevice, cudaemu.EnvFail + "=cuInit"}, false},
		{"driver without a device", []string{cudaemu.EnvEmu + "=", cuda.LibDirsEnv + "=" + noDevice}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if realGPU && !tc.pass {
				t.Skip("this machine has a GPU: the test runs on it")
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCopyRoundTrip$", "-test.v", "-test.count=1")
			cmd.Env = append(parentEnv(), "CI=true", "TROUPE_CI_CHILD=1")
			cmd.Env = append(cmd.Env, tc.env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			switch {
			case tc.pass && (err != nil || !strings.Contains(out.String(), "--- PASS: TestCopyRoundTrip")):
				t.Errorf("the test did not run and pass on the emulator: %v\n%s", err, out.String())
			case !tc.pass && (err == nil || !strings.Contains(out.String(), "--- FAIL: TestCopyRoundTrip")):
				t.Errorf("the test did not fail: %v\n%s", err, out.String())
			}
			t.Logf("%s", out.String())
		})
	}
}

// parentEnv is this process's environment less what cudaemu.Main set in it
// (the emulator's libraries): the child decides for itself.
func parentEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != cuda.LibDirsEnv && k != cudaemu.EnvDir && k != cudaemu.EnvCXX && k != cudaemu.EnvEmu && k != cudaemu.EnvFail {
			env = append(env, kv)
		}
	}
	return env
}
