package chat

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// newConfig is jinja2's Environment(trim_blocks=True, lstrip_blocks=True),
// as transformers makes it.
func newConfig() *config.Config {
	c := config.New()
	c.TrimBlocks = true
	c.LeftStripBlocks = true
	return c
}

// newEnvironment is gonja's environment with jinja2's filters, tests and
// globals where gonja's differ, and only the statements the rewrite
// understands: jinja2's core ones, and the loopcontrols and generation
// extensions transformers enables (with, call, include, import, extends and
// block are left out: such a template fails to parse).
func newEnvironment() *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	ours := map[string]exec.FilterFunction{
		"map":        mapFilter,
		"select":     selectFilter(true, false),
		"reject":     selectFilter(false, false),
		"selectattr": selectFilter(true, true),
		"rejectattr": selectFilter(false, true),
	}
	for name, f := range pyFilters {
		ours[name] = filter(f)
	}
	for name, f := range operatorFilters {
		ours[name] = filter(f)
	}
	for name, f := range getters {
		ours[name] = getter(f)
	}
	filters.Update(exec.NewFilterSet(ours))

	tests := map[string]exec.TestFunction{}
	for name, t := range pyTests {
		tests[name] = test(t)
	}
	for alias, name := range testAliases {
		tests[alias] = test(pyTests[name])
	}

	statements := map[string]parser.ControlStructureParser{
		"set": setParser, "filter": filterParser, "generation": generationParser,
	}
	for _, name := range []string{"if", "for", "macro", "break", "continue", "raw"} {
		statements[name], _ = controlStructures.All.Get(name)
	}

	return &exec.Environment{
		Filters:           filters,
		Tests:             exec.NewTestSet(map[string]exec.TestFunction{}).Update(builtins.Tests).Update(exec.NewTestSet(tests)),
		ControlStructures: exec.NewControlStructureSet(statements),
		Methods:           builtins.Methods,
		Context: exec.NewContext(map[string]any{
			"none":      none,
			"namespace": fn(namespaceGlobal),
			"dict":      fn(dictGlobal),
			"range":     fn(rangeGlobal),
		}),
	}
}

// namespaceGlobal is jinja2's namespace(mapping, **attrs).
func namespaceGlobal(va *exec.VarArgs) *exec.Value {
	ns := &namespace{vals: map[string]any{}}
	if len(va.Args) > 0 {
		d, ok := unwrap(va.Args[0]).(dict)
		if !ok {
			return exec.AsValue(typeError("namespace() takes a mapping"))
		}
		for _, k := range d.keys() {
			v, _ := d.lookup(k)
			ns.set(pyStr(k), v)
		}
	}
	kwargs := map[string]any{}
	for k, v := range va.KwArgs {
		kwargs[k] = unwrap(v)
	}
	for _, k := range sortedKeys(kwargs) {
		ns.set(k, kwargs[k])
	}
	return exec.AsValue(ns)
}

// dictGlobal is dict(**kwargs); Go loses the keywords' order, so they are
// sorted.
func dictGlobal(va *exec.VarArgs) *exec.Value {
	kwargs := map[string]any{}
	for k, v := range va.KwArgs {
		kwargs[k] = unwrap(v)
	}
	d := dict{}
	for _, k := range sortedKeys(kwargs) {
		d.set(k, kwargs[k])
	}
	return exec.AsValue(d)
}

// rangeGlobal is range([start,] stop[, step]).
func rangeGlobal(va *exec.VarArgs) *exec.Value {
	var n []int
	for _, a := range va.Args {
		i, ok := unwrap(a).(int)
		if !ok {
			return exec.AsValue(typeError("range() arguments must be integers"))
		}
		n = append(n, i)
	}
	start, stop, step := 0, 0, 1
	switch len(n) {
	case 1:
		stop = n[0]
	case 2:
		start, stop = n[0], n[1]
	case 3:
		start, stop, step = n[0], n[1], n[2]
	default:
		return exec.AsValue(typeError("range expected 1 to 3 arguments, got %d", len(n)))
	}
	if step == 0 {
		return exec.AsValue(&pyError{"ValueError", "range() arg 3 must not be zero"})
	}
	if n := (stop - start + step - sign(step)) / step; n > maxRange {
		return exec.AsValue(&pyError{"OverflowError", fmt.Sprintf("Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)})
	}
	out := list{}
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		out = append(out, i)
	}
	return exec.AsValue(out)
}

// maxRange is jinja2's sandbox limit on range().
const maxRange = 100000

func sign(n int) int {
	if n < 0 {
		return -1
	}
	return 1
}

// sourceLoader serves the one template; there is nothing to include.
type sourceLoader struct{ src string }

func (l sourceLoader) Read(string) (io.Reader, error)   { return bytes.NewReader([]byte(l.src)), nil }
func (l sourceLoader) Resolve(p string) (string, error) { return p, nil }
func (l sourceLoader) Inherit(string) (loaders.Loader, error) {
	return nil, errors.New("chat templates cannot include other templates")
}
