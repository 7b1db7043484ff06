package depgraph

import (
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// serverModelTypes lists the packages under model/ whose types every
// package of the server may use: none. (The grammar values server/toolcall
// builds and the server hands on to the runtime's BuildGrammar are
// grammar/'s, a library outside model/; only server/toolcall may import
// it: TestPackageGraph.)
var serverModelTypes []string

// listed is what go list -export -deps says of a package.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string
	Standard   bool
}

// TestServerNamesNoModelType fails when a package under server/ uses a type
// declared under model/ (besides its across edges): an expression, a
// field or a method whose type is, or is built from, one of model's named
// types, even without an import of model (a value returned by the
// runtime), serverModelTypes' aside. The server learns of
// the model through actors.ModelInfo and the runtime's tokenizer methods. Test files are not checked: tests build
// their models with model's loaders and synthetic weights.
func TestServerNamesNoModelType(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json", mod+"server/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	var servers []listed
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if rel, ok := ours(p.ImportPath); ok && top(rel) == "server" {
			servers = append(servers, p)
		}
	}
	if len(servers) < 3 {
		t.Fatalf("only %d server packages listed", len(servers))
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, os.ErrNotExist
		}
		return os.Open(exports[path])
	})
	for _, p := range servers {
		rel, _ := ours(p.ImportPath)
		var files []*ast.File
		for _, name := range slices.Concat(p.GoFiles, p.CgoFiles) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp, FakeImportC: true}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("%s: type-check: %v", rel, err)
		}
		for _, use := range modelUses(info, serverModelTypes) {
			t.Errorf("%s: %s uses %s, a type of model (the server reads the model through actors.ModelInfo)", rel, fset.Position(use.pos), use.name)
		}
	}
}

type modelUse struct {
	pos  token.Pos
	name string
}

// modelUses returns where info's package names a type declared under
// model/ outside allow: an expression of such a type, or an identifier
// standing for an object (a field, a method, a type) of model.
func modelUses(info *types.Info, allow []string) []modelUse {
	var uses []modelUse
	seen := map[token.Pos]bool{}
	add := func(pos token.Pos, tn *types.TypeName) {
		if tn != nil && !seen[pos] {
			seen[pos] = true
			uses = append(uses, modelUse{pos, tn.Pkg().Path() + "." + tn.Name()})
		}
	}
	for e, tv := range info.Types {
		add(e.Pos(), modelNamed(tv.Type, allow, map[types.Type]bool{}))
	}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() == nil || !underModel(obj.Pkg().Path(), allow) {
			if obj != nil {
				add(id.Pos(), modelNamed(obj.Type(), allow, map[types.Type]bool{}))
			}
			continue
		}
		add(id.Pos(), types.NewTypeName(id.Pos(), obj.Pkg(), obj.Name(), nil))
	}
	for id, obj := range info.Defs {
		if obj != nil {
			add(id.Pos(), modelNamed(obj.Type(), allow, map[types.Type]bool{}))
		}
	}
	slices.SortFunc(uses, func(a, b modelUse) int { return int(a.pos - b.pos) })
	return uses
}

// underModel reports whether path is a package under model/ not in allow.
func underModel(path string, allow []string) bool {
	rel, ok := ours(path)
	return ok && top(rel) == "model" && !slices.Contains(allow, rel)
}

// modelNamed returns the first named type declared under model/ (outside
// allow) that t is or is built from (pointers, slices, maps, channels,
// signatures, literal structs, type arguments), nil if none. A named type
// of another package is not looked into: the server may hold an
// actors.Runtime whose fields are model's.
func modelNamed(t types.Type, allow []string, seen map[types.Type]bool) *types.TypeName {
	if t == nil || seen[t] {
		return nil
	}
	seen[t] = true
	rec := func(ts ...types.Type) *types.TypeName {
		for _, u := range ts {
			if tn := modelNamed(u, allow, seen); tn != nil {
				return tn
			}
		}
		return nil
	}
	switch t := t.(type) {
	case *types.Named:
		if tn := t.Obj(); tn.Pkg() != nil && underModel(tn.Pkg().Path(), allow) {
			return tn
		}
		var args []types.Type
		for i := range t.TypeArgs().Len() {
			args = append(args, t.TypeArgs().At(i))
		}
		return rec(args...)
	case *types.Alias:
		return rec(types.Unalias(t))
	case *types.Pointer:
		return rec(t.Elem())
	case *types.Slice:
		return rec(t.Elem())
	case *types.Array:
		return rec(t.Elem())
	case *types.Map:
		return rec(t.Key(), t.Elem())
	case *types.Chan:
		return rec(t.Elem())
	case *types.Tuple:
		var ts []types.Type
		for i := range t.Len() {
			ts = append(ts, t.At(i).Type())
		}
		return rec(ts...)
	case *types.Signature:
		return rec(t.Params(), t.Results())
	case *types.Struct:
		var ts []types.Type
		for i := range t.NumFields() {
			ts = append(ts, t.Field(i).Type())
		}
		return rec(ts...)
	}
	return nil
}

// TestModelUses: modelUses finds a model type named, reached through a
// value of another package, or built into a signature, and lets allowed
// packages and other packages' types through.
func TestModelUses(t *testing.T) {
	fset := token.NewFileSet()
	pkgs := map[string]*types.Package{}
	check := func(path, src string) *types.Info {
		f, err := parser.ParseFile(fset, path+".go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: importerFunc(func(p string) (*types.Package, error) { return pkgs[p], nil })}
		pkg, err := conf.Check(path, fset, []*ast.File{f}, info)
		if err != nil {
			t.Fatal(err)
		}
		pkgs[path] = pkg
		return info
	}
	check(mod+"model/m", "package m\ntype Config struct{ Dim int }\ntype Model struct{ Config Config }\n")
	check(mod+"model/grammar", "package grammar\ntype Converter struct{}\n")
	check(mod+"actors", `package actors
import ("`+mod+`model/m"; "`+mod+`model/grammar")
type Runtime struct{ m *m.Model }
func (r *Runtime) Model() *m.Model { return r.m }
func (r *Runtime) Dim() int { return r.m.Config.Dim }
func (r *Runtime) Build(func(*grammar.Converter)) {}
`)
	for _, tc := range []struct {
		body  string
		found bool
	}{
		{"_ = r.Dim()", false},
		{"r.Build(nil)", false}, // model/grammar is allowed
		{"_ = r.Model().Config.Dim", true},
		{"f := r.Model; _ = f", true}, // in a signature
		{"var c struct{ p *[]map[string]m.Config }; _ = c", true},
	} {
		imports := `"` + mod + `actors"`
		if strings.Contains(tc.body, "m.") {
			imports += `; "` + mod + `model/m"`
		}
		info := check(mod+"server", `package server
import (`+imports+`)
func use(r *actors.Runtime) { `+tc.body+` }
`)
		uses := modelUses(info, []string{"model/grammar"})
		if (len(uses) > 0) != tc.found {
			t.Errorf("%s: uses %v, want some: %v", tc.body, uses, tc.found)
		}
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
