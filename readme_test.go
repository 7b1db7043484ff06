package troupe_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/troupetest"
)

// readmeSnippet returns the Go program in README.md's "Embedding troupe in
// a Go program" section, verbatim.
func readmeSnippet(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "### Embedding troupe in a Go program\n")
	if !ok {
		t.Fatal("README.md has no \"### Embedding troupe in a Go program\" section")
	}
	_, code, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal("README.md's embedding section has no Go block")
	}
	code, _, ok = strings.Cut(code, "```\n")
	if !ok {
		t.Fatal("README.md's embedding section's Go block does not end")
	}
	return code
}

// TestReadmeSnippet builds README.md's Go program verbatim in a scratch
// module outside the repository (a replace points it at this checkout;
// the module cache serves the rest, so it runs offline), vets it, and runs
// it on the tiny model.
func TestReadmeSnippet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program: not with -short")
	}
	checkout, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/app\n\ngo 1.26.0\n\nrequire github.com/troupe-llm/troupe v0.0.0\n\n" +
		"replace github.com/troupe-llm/troupe => " + checkout + "\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(readmeSnippet(t))} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod "+os.Getenv("GOFLAGS"))
	goCmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the scratch module: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	goCmd("build", "-o", "app", ".")
	goCmd("vet", ".")

	model := filepath.Join(dir, "tiny.gguf")
	if err := troupetest.WriteTinyModel(model, 1); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(dir, "app"), model).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's program: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "2 embeddings of 64") || !strings.Contains(string(out), "prompt tokens") {
		t.Errorf("the README's program printed:\n%s", out)
	}
}
