// Package depgraph holds the test that keeps the package graph of
// ../shared/docs/DESIGN.md true: each layer imports only the layers below it.
package depgraph

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/troupe-llm/troupe/"

// allowed lists, for each top-level directory, the top-level directories of
// ours it may import (besides itself and internal/).
var allowed = map[string][]string{
	"compute":  {},
	"messages": {},
	"kv":       {"compute"},
	"model":    {"kv", "compute"},
	"actors":   {"messages", "model", "kv", "compute"},
	"server":   {"actors", "messages"},
	"cmd":      {"*"},
	"bench":    {"*"},
	"internal": {"*"},
}

// external lists third-party module prefixes a layer may not import.
var external = []struct {
	prefix  string
	allowed []string
}{
	{"github.com/asynkron/protoactor-go", []string{"actors", "server", "cmd", "bench"}},
}

// pure lists packages that must not import protoactor even inside a layer
// that may: the batcher's policy is plain Go, tested without actors.
var pure = []string{"actors/sched"}

// messagesMayImport is all that package messages imports besides the
// standard library: it is plain data.
var messagesMayImport = []string{"github.com/vmihailenco/msgpack/v5"}

func TestPackageGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		layer := top(pkg)
		ok, known := allowed[layer]
		if !known {
			t.Errorf("%s: top-level directory %q is not in the design's package graph", pkg, layer)
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			if rel, ours := strings.CutPrefix(imp, mod); ours {
				dep := top(rel)
				if dep != layer && dep != "internal" && !contains(ok, dep) && !contains(ok, "*") {
					t.Errorf("%s imports %s: %s may import only %v", pkg, imp, layer, ok)
				}
				continue
			}
			for _, e := range external {
				if strings.HasPrefix(imp, e.prefix) && !contains(e.allowed, layer) {
					t.Errorf("%s imports %s: only %v may", pkg, imp, e.allowed)
				}
			}
			if contains(pure, pkg) && strings.HasPrefix(imp, "github.com/asynkron/protoactor-go") {
				t.Errorf("%s imports %s: the scheduling policy stays free of actors", pkg, imp)
			}
			if layer == "messages" && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") && !contains(messagesMayImport, imp) {
				t.Errorf("%s imports %s: messages is plain data (standard library and msgpack only)", pkg, imp)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d packages checked; go list output:\n%s", checked, out)
	}
}

func top(pkg string) string {
	if i := strings.IndexByte(pkg, '/'); i >= 0 {
		return pkg[:i]
	}
	return pkg
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
