// Package depgraph holds the tests that keep the package graph true: the
// layering rules of ../shared/docs/DESIGN.md (each layer imports only the
// layers below it), and the package-by-package graph that ARCHITECTURE.md
// draws, edge for edge.
package depgraph

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/troupe-llm/troupe/"

// root is the module's root package (the embedding facade) as the graph
// names it: its package name.
const root = "troupe"

// ours returns imp's path relative to the module (root for the module's
// root package), and whether it is a package of ours.
func ours(imp string) (string, bool) {
	if imp == strings.TrimSuffix(mod, "/") {
		return root, true
	}
	return strings.CutPrefix(imp, mod)
}

// allowed lists, for each top-level directory, the top-level directories of
// ours it may import (besides itself and internal/).
var allowed = map[string][]string{
	"compute":  {},
	"messages": {},
	"grammar":  {},
	"kv":       {"compute"},
	"model":    {"kv", "compute"},
	"gpu":      {"model", "kv", "compute"},
	"hub":      {},
	"actors":   {"messages", "model", "grammar", "gpu", "kv", "compute"},
	"server":   {"actors", "messages"},
	"cmd":      {"*"},
	// The embedding API: the facade over the runtime and the pipeline, its
	// test helpers, and its langchaingo adapter.
	root:         {"actors", "server", "messages", "model", "kv"},
	"troupetest": {"actors", "messages", "model"},
	"langchain":  {root, "troupetest"},
	"bench":      {"*"},
	"internal":   {"*"},
}

// across lists single package edges allowed across layers: the tool-call
// grammar is composed with grammar's Builder (grammar/, a library of the
// standard library only), so no grammar text travels between the server
// and the runtime.
var across = map[string][]string{"server/toolcall": {"grammar"}}

// external lists third-party module prefixes a layer may not import.
var external = []struct {
	prefix  string
	allowed []string
}{
	{"github.com/asynkron/protoactor-go", []string{"actors", "server", "cmd", "bench", root}},
}

// pure lists packages that must not import protoactor even inside a layer
// that may: the batcher's policy is plain Go, tested without actors.
var pure = []string{"actors/sched"}

// messagesMayImport is all that package messages imports besides the
// standard library: it is plain data.
var messagesMayImport = []string{"github.com/vmihailenco/msgpack/v5"}

// modules names the third-party modules as ARCHITECTURE.md's graph writes
// them; an import belongs to one when it starts with its path.
var modules = map[string]string{
	"protoactor-go": "github.com/asynkron/protoactor-go",
	"msgpack":       "github.com/vmihailenco/msgpack/v5",
	"etcd":          "go.etcd.io/etcd/",
	"protobuf":      "google.golang.org/protobuf",
	"grpc":          "google.golang.org/grpc",
	"prometheus":    "github.com/prometheus/client_golang",
	"client_model":  "github.com/prometheus/client_model",
	"langchaingo":   "github.com/tmc/langchaingo",
	"zerolog":       "github.com/rs/zerolog",
	"gonja":         "github.com/nikolalohinski/gonja/v2",
	"x/text":        "golang.org/x/text",
	"x/sys":         "golang.org/x/sys",
	"x/sync":        "golang.org/x/sync",
	"x/image":       "golang.org/x/image",
	"gonum":         "gonum.org/v1/gonum",
	"purego":        "github.com/ebitengine/purego",
	"regexp2":       "github.com/dlclark/regexp2",
	"progressbar":   "github.com/schollz/progressbar/v3",
}

// pkg is one package of the module as go list sees it: its path relative
// to the module and its non-test imports.
type pkg struct {
	path    string
	imports []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		path, _ := ours(fields[0])
		pkgs = append(pkgs, pkg{path, fields[1:]})
	}
	if len(pkgs) < 5 {
		t.Fatalf("only %d packages listed; go list output:\n%s", len(pkgs), out)
	}
	return pkgs
}

func TestPackageGraph(t *testing.T) {
	for _, p := range listPackages(t) {
		layer := top(p.path)
		ok, known := allowed[layer]
		if !known {
			t.Errorf("%s: top-level directory %q is not in the design's package graph", p.path, layer)
			continue
		}
		for _, imp := range p.imports {
			if rel, isOurs := ours(imp); isOurs {
				dep := top(rel)
				if dep != layer && dep != "internal" && !contains(ok, dep) && !contains(ok, "*") && !contains(across[p.path], rel) {
					t.Errorf("%s imports %s: %s may import only %v", p.path, imp, layer, ok)
				}
				continue
			}
			for _, e := range external {
				if strings.HasPrefix(imp, e.prefix) && !contains(e.allowed, layer) {
					t.Errorf("%s imports %s: only %v may", p.path, imp, e.allowed)
				}
			}
			if contains(pure, p.path) && strings.HasPrefix(imp, "github.com/asynkron/protoactor-go") {
				t.Errorf("%s imports %s: the scheduling policy stays free of actors", p.path, imp)
			}
			if layer == "messages" && !stdlib(imp) && !contains(messagesMayImport, imp) {
				t.Errorf("%s imports %s: messages is plain data (standard library and msgpack only)", p.path, imp)
			}
		}
	}
}

// row is one line of ARCHITECTURE.md's package graph:
// "pkg -> dep, dep, ...   what it is". pkg is a package path relative to
// the module, or a folder followed by "/..." for every package under it. A
// dep is a package of ours, a module named in modules, "(stdlib)" for
// none, or "..." for anything besides those named.
type row struct {
	line int
	pkg  string
	deps []string
	any  bool // "...": imports not named are allowed too
}

func (r row) covers(p string) bool {
	if dir, ok := strings.CutSuffix(r.pkg, "/..."); ok {
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	return p == r.pkg
}

var arrow = regexp.MustCompile(`^(\S+)\s+->\s+(.*)$`)

// readGraph returns the rows of the first code block after the "## Package
// graph" heading of ARCHITECTURE.md.
func readGraph(t *testing.T, path string) []row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []row
	state := 0 // 0: before the heading, 1: before the block, 2: in it
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case state == 0 && strings.HasPrefix(line, "## Package graph"):
			state = 1
		case state == 1 && strings.HasPrefix(line, "```"):
			state = 2
		case state == 2 && strings.HasPrefix(line, "```"):
			return rows
		case state == 2:
			m := arrow.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s:%d: not a graph row (pkg -> deps  description): %q", path, n, line)
				continue
			}
			deps, _, _ := strings.Cut(m[2], "  ") // two spaces start the description
			r := row{line: n, pkg: m[1]}
			for _, d := range strings.Split(deps, ",") {
				switch d = strings.TrimSpace(d); d {
				case "(stdlib)":
				case "...":
					r.any = true
				default:
					r.deps = append(r.deps, d)
				}
			}
			rows = append(rows, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("%s: no code block after a \"## Package graph\" heading", path)
	return nil
}

// TestDrawnGraph checks ARCHITECTURE.md's package graph against the code,
// both ways: every package is drawn, every import of ours and every
// third-party module a package imports is drawn as its edge, and every
// drawn edge exists.
func TestDrawnGraph(t *testing.T) {
	pkgs := listPackages(t)
	rows := readGraph(t, "../../ARCHITECTURE.md")
	for _, err := range checkGraph(pkgs, rows) {
		t.Errorf("ARCHITECTURE.md: %v", err)
	}
}

// checkGraph returns each difference between the packages and the drawn rows.
func checkGraph(pkgs []pkg, rows []row) []error {
	var errs []error
	isOurs := map[string]bool{}
	for _, p := range pkgs {
		isOurs[p.path] = true
	}
	used := make([]map[string]bool, len(rows)) // per row, the deps some covered package imports
	for i, r := range rows {
		used[i] = map[string]bool{}
		for _, d := range r.deps {
			if _, ok := modules[d]; !ok && !isOurs[d] {
				errs = append(errs, fmt.Errorf("line %d: %s -> %s: neither a package of ours nor a module named in depgraph's modules", r.line, r.pkg, d))
				used[i][d] = true // reported
			}
		}
	}
	for _, p := range pkgs {
		i := slices.IndexFunc(rows, func(r row) bool { return r.covers(p.path) })
		if i < 0 {
			errs = append(errs, fmt.Errorf("package %s is not drawn", p.path))
			continue
		}
		r := rows[i]
		for _, imp := range p.imports {
			if stdlib(imp) {
				continue
			}
			name, isOurs := ours(imp)
			if !isOurs {
				name = ""
				for n, prefix := range modules {
					if strings.HasPrefix(imp, prefix) {
						name = n
					}
				}
				if name == "" && !r.any {
					errs = append(errs, fmt.Errorf("line %d: %s imports %s, a module not named in depgraph's modules", r.line, p.path, imp))
					continue
				}
			}
			if contains(r.deps, name) {
				used[i][name] = true
			} else if !r.any && !(isOurs && r.covers(name)) { // a "dir/..." row may import within itself
				errs = append(errs, fmt.Errorf("line %d: %s imports %s, not drawn (%s -> %s)", r.line, p.path, imp, r.pkg, strings.Join(r.deps, ", ")))
			}
		}
	}
	for i, r := range rows {
		if !slices.ContainsFunc(pkgs, func(p pkg) bool { return r.covers(p.path) }) {
			errs = append(errs, fmt.Errorf("line %d: %s: no such package", r.line, r.pkg))
		}
		for _, d := range r.deps {
			if !used[i][d] {
				errs = append(errs, fmt.Errorf("line %d: %s -> %s is drawn but not imported", r.line, r.pkg, d))
			}
		}
	}
	return errs
}

// TestCheckGraph: the drawn-graph check catches each kind of difference.
func TestCheckGraph(t *testing.T) {
	pkgs := []pkg{
		{"compute", []string{"fmt", "golang.org/x/sys/cpu"}},
		{"kv", []string{mod + "compute"}},
		{"model/sample", []string{"math"}},
		{"internal/a", []string{mod + "internal/b", mod + "kv"}},
		{"internal/b", nil},
	}
	good := []row{
		{pkg: "compute", deps: []string{"x/sys"}},
		{pkg: "kv", deps: []string{"compute"}},
		{pkg: "model/sample"},
		{pkg: "internal/...", any: true},
	}
	for _, tc := range []struct {
		name string
		edit func(pkgs []pkg, rows []row) ([]pkg, []row)
		want string // in the one error; "" for none
	}{
		{"as drawn", func(p []pkg, r []row) ([]pkg, []row) { return p, r }, ""},
		{"import of ours not drawn", func(p []pkg, r []row) ([]pkg, []row) {
			p[2].imports = append(p[2].imports, mod+"kv")
			return p, r
		}, "model/sample imports " + mod + "kv, not drawn"},
		{"module not drawn", func(p []pkg, r []row) ([]pkg, []row) {
			p[1].imports = append(p[1].imports, "gonum.org/v1/gonum/blas")
			return p, r
		}, "kv imports gonum.org/v1/gonum/blas, not drawn"},
		{"unknown module", func(p []pkg, r []row) ([]pkg, []row) {
			p[0].imports = append(p[0].imports, "example.com/x")
			return p, r
		}, "a module not named"},
		{"edge drawn, not imported", func(p []pkg, r []row) ([]pkg, []row) {
			r[2].deps = []string{"compute"}
			return p, r
		}, "model/sample -> compute is drawn but not imported"},
		{"package not drawn", func(p []pkg, r []row) ([]pkg, []row) {
			return append(p, pkg{path: "model/gguf"}), r
		}, "package model/gguf is not drawn"},
		{"row without a package", func(p []pkg, r []row) ([]pkg, []row) {
			return p, append(r, row{pkg: "model/old"})
		}, "model/old: no such package"},
		{"dep neither ours nor a module", func(p []pkg, r []row) ([]pkg, []row) {
			r[1].deps = append(r[1].deps, "blas32")
			return p, r
		}, "kv -> blas32: neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := slices.Clone(pkgs)
			for i := range p {
				p[i].imports = slices.Clone(p[i].imports)
			}
			r := slices.Clone(good)
			for i := range r {
				r[i].deps = slices.Clone(r[i].deps)
			}
			errs := checkGraph(tc.edit(p, r))
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("errors %v, want none", errs)
			case tc.want != "" && len(errs) == 0:
				t.Errorf("no error, want one saying %q", tc.want)
			case tc.want != "" && (len(errs) > 1 || !strings.Contains(errs[0].Error(), tc.want)):
				t.Errorf("errors %v, want one saying %q", errs, tc.want)
			}
		})
	}
}

// stdlib reports whether imp is a standard-library path: its first element
// has no dot.
func stdlib(imp string) bool {
	return !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".")
}

func top(pkg string) string {
	if i := strings.IndexByte(pkg, '/'); i >= 0 {
		return pkg[:i]
	}
	return pkg
}

func contains(list []string, s string) bool {
	return slices.Contains(list, s)
}
