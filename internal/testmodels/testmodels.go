// Package testmodels finds the reference models and vectors tests run
// against (../shared/models in the workspace).
//
// The directory is $TROUPE_TEST_MODELS, or else ../shared/models next to the
// module root (the directory holding go.mod), wherever the test runs. When a model is missing,
// the test fails under CI (CI=true) and is skipped elsewhere, saying why: a
// test must never pass because its reference was not there.
//
// The functions are safe for concurrent use.
package testmodels

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// defaultDir is the models directory used when TROUPE_TEST_MODELS is unset:
// ../shared/models beside the module root found above the working directory.
func defaultDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("..", "shared", "models")
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "models")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Join("..", "shared", "models")
		}
		dir = parent
	}
}

// Lookup returns where the models directory should be, without ending the
// test when it is missing (for optional uses such as fuzz seeds).
func Lookup() string {
	if dir := os.Getenv("TROUPE_TEST_MODELS"); dir != "" {
		return dir
	}
	return defaultDir()
}

// Dir returns the models directory, or ends the test when it is missing.
func Dir(t testing.TB) string {
	t.Helper()
	dir := Lookup()
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		missing(t, "test models directory %s not found (set TROUPE_TEST_MODELS)", dir)
	}
	return dir
}

// Path returns the path of rel inside the models directory, or ends the test
// when that file or directory is missing.
func Path(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Dir(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		missing(t, "test model %s not found: %v", rel, err)
	}
	return p
}

func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (skipped outside CI)", args...)
}

// NPMPackage returns the directory of the npm package pkg that
// scripts/testdata-npm.sh installs into $TROUPE_NPM_DIR (default
// ~/.cache/troupe-npm), or ends the test when it is missing.
func NPMPackage(t testing.TB, pkg string) string {
	t.Helper()
	dir := npmDir()
	p := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg))
	if _, err := os.Stat(filepath.Join(p, "package.json")); err != nil {
		missing(t, "npm package %s not installed in %s (run scripts/testdata-npm.sh)", pkg, dir)
	}
	return p
}

// npmDir is where scripts/testdata-npm.sh installs: $TROUPE_NPM_DIR, or
// ~/.cache/troupe-npm.
func npmDir() string {
	if dir := os.Getenv("TROUPE_NPM_DIR"); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "troupe-npm")
}

// NPMVocab returns the path of the vocab GGUF ggml-vocab-NAME.gguf that
// scripts/testdata-vocab.sh writes beside the npm packages, or ends the
// test when it is missing (a failure under CI=true).
func NPMVocab(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(npmDir(), "vocab", "ggml-vocab-"+name+".gguf")
	if _, err := os.Stat(p); err != nil {
		missing(t, "%s missing: run scripts/testdata-npm.sh and scripts/testdata-vocab.sh", p)
	}
	return p
}

// Node runs node on script (a path relative to the test's directory) with
// args, the npm packages under modules on NODE_PATH, and returns what it
// wrote to standard output; a failure ends the test with node's standard
// error.
func Node(t testing.TB, modules, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node %s: %v\n%s", script, err, stderr)
	}
	return out
}
