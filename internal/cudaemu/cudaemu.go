// Package cudaemu points gpu/cuda at troupe's CUDA test emulator
// (gpu/testdata/emu) on machines without a GPU, so the GPU tests of
// gpu and actors run there and in CI: a fake libcuda.so.1 and
// libnvrtc.so.12, built here from their C++ sources, run gpu's kernels on the
// CPU, each CUDA thread a fiber. The emulator checks logic and arithmetic,
// not GPU timing, memory coalescing or races between blocks.
//
// Setup must run before anything in the test binary loads the CUDA driver
// (gpu/cuda keeps its first load for the life of the process), so a
// package's TestMain calls it.
//
// Environment:
//   - TROUPE_CUDA_EMU=1 uses the emulator even where a driver is installed;
//     TROUPE_CUDA_EMU=0 never uses it. Unset, it is used unless a
//     libcuda.so.1 is found and reports a device (asked in a child process:
//     see Setup).
//   - CI=true makes a test that needs CUDA and can run neither on a device
//     nor on the emulator fail rather than skip (Require, Unavailable).
//   - TROUPE_EMU_FAIL makes the fake libraries fail at the stages it lists
//     (comma-separated: cuInit, cuMemAlloc, cuModuleLoadData,
//     nvrtcCompileProgram), for the tests of the fallback to the CPU.
//   - TROUPE_EMU_CXX is the C++ compiler (default: the first of g++, c++,
//     clang++ and clang++-14 on the PATH).
//   - TROUPE_EMU_CACHE is where the libraries and compiled kernels are
//     kept, by a hash of their sources (default the user cache directory).
//
// The functions are not safe for concurrent use: call Setup once, first.
package cudaemu

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/gpu/cuda"
)

// Environment variables read by Setup and by the fake libraries.
const (
	EnvEmu   = "TROUPE_CUDA_EMU"
	EnvCXX   = "TROUPE_EMU_CXX"
	EnvCache = "TROUPE_EMU_CACHE"
	EnvDir   = "TROUPE_EMU_DIR" // the directory of emu.h, for the fake NVRTC
	EnvFail  = "TROUPE_EMU_FAIL"

	// envProbe asks a test binary started by Setup only whether the
	// installed driver reports a device.
	envProbe = "TROUPE_CUDA_EMU_PROBE"
)

// Setup decides whether this process runs CUDA on the emulator and, if so,
// builds the fake libraries (once per source version, kept in the cache)
// and sets the environment gpu/cuda and the libraries read. It reports
// whether the emulator is in use; an error means it was wanted but could
// not be built (no C++ compiler, say), and gpu/cuda is left alone.
//
// An installed driver is used when it reports a device. Loading it here
// would fix gpu/cuda's answer for the whole process, so Setup asks a
// copy of this process (the test binary, started with envProbe set; its
// Setup answers and exits): a driver without a device (a container with
// the driver's libraries but no GPU) gets the emulator.
func Setup() (bool, error) {
	if os.Getenv(envProbe) == "1" {
		if err := cuda.Available(); err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	switch os.Getenv(EnvEmu) {
	case "0":
		return false, nil
	case "1":
	default:
		if driverInstalled() && probeDevice() {
			return false, nil
		}
	}
	err := setup()
	if err != nil {
		err = fmt.Errorf("cudaemu: %w", err)
	}
	return true, err
}

// state is what Main's Setup found, for the tests of that binary.
var state struct {
	active bool
	err    error
}

// Main is a TestMain's whole body for a package with CUDA tests: Setup,
// before any test touches gpu/cuda (which loads the driver once), then
// the tests.
func Main(m *testing.M) {
	state.active, state.err = Setup()
	os.Exit(m.Run())
}

// Active reports whether Main put this test binary on the emulator.
func Active() bool { return state.active }

// Require ends a test that needs CUDA where it can run neither on a device
// nor on the emulator: Main could not build the emulator, or
// TROUPE_CUDA_EMU=0 left the test to a device there is not. See
// Unavailable. Call it before anything else of gpu/cuda.
func Require(t testing.TB) {
	t.Helper()
	if state.err != nil {
		Unavailable(t, state.err)
	}
	if err := cuda.Available(); err != nil {
		if !state.active && os.Getenv(EnvEmu) == "0" {
			err = fmt.Errorf("%w (and %s=0: no emulator)", err, EnvEmu)
		}
		Unavailable(t, err)
	}
}

// Unavailable ends a test that needs CUDA, or a part of it, that this
// machine lacks (err says what): a failure under CI (CI=true), which must
// run the GPU tests, else a skip.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CUDA is needed, on a device or on the emulator (CI=true): %v", err)
	}
	t.Skipf("no GPU and no CUDA emulator: %v", err)
}

// probeDevice reports whether the installed driver reports a device, asked
// of a copy of this test binary (see Setup). It cannot tell under a binary
// whose TestMain does not call Setup first: then it says yes, as before.
func probeDevice() bool {
	exe, err := os.Executable()
	if err != nil {
		return true
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envProbe+"=1")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		fmt.Fprintf(os.Stderr, "cudaemu: the CUDA driver reports no device (%s): using the emulator\n", strings.TrimSpace(string(out)))
		return false
	}
	return true
}

// Env builds the emulator (as Setup does) and returns the environment a
// child process needs to run CUDA on it, without changing this process's:
// for tests that run troupe itself on the emulator, with EnvFail, say.
func Env() ([]string, error) {
	emuDir, cxx, cache, libDir, err := build()
	if err != nil {
		return nil, fmt.Errorf("cudaemu: %w", err)
	}
	return []string{cuda.LibDirsEnv + "=" + libDir, EnvDir + "=" + emuDir, EnvCXX + "=" + cxx, EnvCache + "=" + cache}, nil
}

// driverInstalled reports whether a libcuda.so.1 is found where
// gpu/cuda looks, without loading it (that would fix gpu/cuda's
// answer before Setup has run).
func driverInstalled() bool {
	dirs := filepath.SplitList(os.Getenv(cuda.LibDirsEnv))
	dirs = append(dirs, filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	dirs = append(dirs, "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
		"/usr/local/nvidia/lib64", "/usr/lib/wsl/lib")
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "libcuda.so.1")); err == nil {
			return true
		}
	}
	for _, ldconfig := range []string{"ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"} {
		if out, err := exec.Command(ldconfig, "-p").Output(); err == nil {
			return strings.Contains(string(out), "libcuda.so.1 ")
		}
	}
	return false
}

// libs are the fake libraries: the soname gpu/cuda loads, and sources.
var libs = []struct {
	name string
	srcs []string
}{
	{"libcuda.so.1", []string{"libcuda.cc", "libcuda_exec.cc"}},
	{"libnvrtc.so.12", []string{"libnvrtc.cc"}},
}

func setup() error {
	emuDir, cxx, cache, libDir, err := build()
	if err != nil {
		return err
	}
	for k, v := range map[string]string{cuda.LibDirsEnv: libDir, EnvDir: emuDir, EnvCXX: cxx, EnvCache: cache} {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}

// build finds the emulator's sources and a compiler, and builds the fake
// libraries into the cache (unless they are there already).
func build() (emuDir, cxx, cache, libDir string, err error) {
	if emuDir, err = sourceDir(); err != nil {
		return
	}
	if cxx, err = compiler(); err != nil {
		return
	}
	if cache, err = cacheDir(); err != nil {
		return
	}
	prune(cache)
	libDir, err = buildLibs(emuDir, cxx, cache)
	return
}

// sourceDir finds gpu/testdata/emu under the module root, the
// directory above the working directory that holds go.mod.
func sourceDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			emu := filepath.Join(dir, "gpu", "testdata", "emu")
			if _, err := os.Stat(filepath.Join(emu, "emu.h")); err != nil {
				return "", fmt.Errorf("emulator sources: %w", err)
			}
			return emu, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: cannot find the emulator's sources")
		}
		dir = parent
	}
}

func compiler() (string, error) {
	names := []string{"g++", "c++", "clang++", "clang++-14"}
	if c := os.Getenv(EnvCXX); c != "" {
		names = []string{c}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no C++ compiler (%s) on the PATH to build the CUDA emulator", strings.Join(names, ", "))
}

func cacheDir() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "troupe", "cuda-emu"), nil
}

// prune removes the cache's entries (libraries, compiled kernels) unused
// for a week; a hit touches its entry. Rebuilding one takes seconds.
func prune(cache string) {
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 7*24*time.Hour {
			os.RemoveAll(filepath.Join(cache, e.Name()))
		}
	}
}

// buildLibs builds the fake libraries into a directory of the cache named
// by a hash of the compiler and every source of the emulator, unless it is
// there already.
func buildLibs(emuDir, cxx, cache string) (string, error) {
	files, err := os.ReadDir(emuDir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintln(h, cxx)
	for _, f := range files { // sorted by name
		src, err := os.ReadFile(filepath.Join(emuDir, f.Name()))
		if err != nil {
			return "", err
		}
		fmt.Fprintln(h, f.Name(), len(src))
		h.Write(src)
	}
	dir := filepath.Join(cache, "libs-"+hex.EncodeToString(h.Sum(nil))[:24])
	if _, err := os.Stat(filepath.Join(dir, libs[len(libs)-1].name)); err == nil {
		now := time.Now()
		os.Chtimes(dir, now, now) // in use: see prune
		return dir, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cache, "tmp-libs-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, l := range libs {
		args := []string{"-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-o", filepath.Join(tmp, l.name)}
		for _, src := range l.srcs {
			args = append(args, filepath.Join(emuDir, src))
		}
		cmd := exec.Command(cxx, append(args, "-ldl", "-lpthread")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s: %v\n%s", l.name, err, out)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, libs[len(libs)-1].name)); statErr != nil {
			return "", err // not built meanwhile by another test binary
		}
	}
	return dir, nil
}
