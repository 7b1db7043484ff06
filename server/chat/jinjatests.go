package chat

import (
	"reflect"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// pyTest is a jinja2 test on plain Go values.
type pyTest func(in any, args []any) (bool, error)

func test(t pyTest) exec.TestFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) (bool, error) {
		if in.IsError() {
			return false, in
		}
		args := make([]any, len(params.Args))
		for i, a := range params.Args {
			args[i] = unwrap(a)
		}
		if b := budgetOf(e.Environment.Context); b != nil {
			if err := b.spendValue(unwrap(in), args, nil); err != nil {
				return false, err
			}
		}
		return t(unwrap(in), args)
	}
}

func firstArg(args []any) any {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}

// pyTests are jinja2's tests with Python's types: None is defined, a bool
// is a number, Undefined is iterable, and so on.
var pyTests = map[string]pyTest{
	"defined":   func(in any, _ []any) (bool, error) { return in != nil, nil },
	"undefined": func(in any, _ []any) (bool, error) { return in == nil, nil },
	"none":      func(in any, _ []any) (bool, error) { return in == any(none), nil },
	"string":    func(in any, _ []any) (bool, error) { return isStr(in), nil },
	"mapping":   func(in any, _ []any) (bool, error) { _, ok := in.(dict); return ok, nil },
	"iterable": func(in any, _ []any) (bool, error) {
		if _, ok := in.(dict); ok || in == nil {
			return true, nil
		}
		_, ok := sequence(in)
		return ok, nil
	},
	"sequence": func(in any, _ []any) (bool, error) {
		if _, ok := in.(dict); ok || in == nil {
			return true, nil
		}
		_, isGen := in.(generator)
		_, ok := sequence(in)
		return ok && !isGen, nil
	},
	"number":  func(in any, _ []any) (bool, error) { _, _, ok := number(in); return ok, nil },
	"integer": func(in any, _ []any) (bool, error) { _, ok := in.(int); return ok, nil },
	"float":   func(in any, _ []any) (bool, error) { _, ok := in.(float64); return ok, nil },
	"boolean": func(in any, _ []any) (bool, error) { _, ok := in.(bool); return ok, nil },
	"true":    func(in any, _ []any) (bool, error) { return in == any(true), nil },
	"false":   func(in any, _ []any) (bool, error) { return in == any(false), nil },
	"callable": func(in any, _ []any) (bool, error) {
		return in != nil && reflect.ValueOf(in).Kind() == reflect.Func, nil
	},
	"eq":    func(in any, args []any) (bool, error) { return pyEqual(in, firstArg(args)), nil },
	"ne":    func(in any, args []any) (bool, error) { return !pyEqual(in, firstArg(args)), nil },
	"in":    func(in any, args []any) (bool, error) { return contains(firstArg(args), in) },
	"lower": func(in any, _ []any) (bool, error) { return strIs(pyStr(in), "islower"), nil },
	"upper": func(in any, _ []any) (bool, error) { return strIs(pyStr(in), "isupper"), nil },
	"odd":   func(in any, _ []any) (bool, error) { i, ok := in.(int); return ok && i%2 != 0, nil },
	"even":  func(in any, _ []any) (bool, error) { i, ok := in.(int); return ok && i%2 == 0, nil },
	"divisibleby": func(in any, args []any) (bool, error) {
		i, ok1 := in.(int)
		n, ok2 := firstArg(args).(int)
		return ok1 && ok2 && n != 0 && i%n == 0, nil
	},
	"lt": compareTest("<"), "gt": compareTest(">"), "le": compareTest("<="), "ge": compareTest(">="),
}

// testAliases are other names jinja2 gives some tests.
var testAliases = map[string]string{
	"equalto": "eq", "==": "eq", "!=": "ne", "lessthan": "lt", "<": "lt", "greaterthan": "gt",
	">": "gt", "<=": "le", ">=": "ge",
}

func compareTest(op string) pyTest {
	return func(in any, args []any) (bool, error) {
		v, err := binary(op, in, firstArg(args))
		return v == true, err
	}
}

// filterItems is the items of in, a filter's sequence; done, when set, is
// the filter's answer already: in's error, the empty generator of a falsy
// in, or the error of one that is not a sequence.
func filterItems(in *exec.Value) (items []any, done *exec.Value) {
	if in.IsError() {
		return nil, in
	}
	if !truthy(unwrap(in)) {
		return nil, exec.AsValue(generator{})
	}
	items, err := iterate(unwrap(in))
	if err != nil {
		return nil, exec.AsValue(err)
	}
	return items, nil
}

// selectFilter is select and reject (attr false) or selectattr and
// rejectattr (attr true): the items whose test (or truth) is keep.
func selectFilter(keep, attr bool) exec.FilterFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		items, done := filterItems(in)
		if done != nil {
			return done
		}
		out := generator{}
		args := params.Args
		subjects := items
		if attr {
			if len(args) == 0 {
				return exec.AsValue(&pyError{"FilterArgumentError", "Missing parameter for attribute name"})
			}
			var err error
			if subjects, err = mapAttribute(items, unwrap(args[0]), nil); err != nil {
				return exec.AsValue(err)
			}
			args = args[1:]
		}
		for i, it := range items {
			ok := truthy(subjects[i])
			if len(args) > 0 {
				r := e.ExecuteTestByName(pyStr(unwrap(args[0])), exec.AsValue(subjects[i]),
					&exec.VarArgs{Args: args[1:], KwArgs: params.KwArgs})
				if r.IsError() {
					return r
				}
				ok = r.IsTrue()
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return exec.AsValue(out)
	}
}

// mapFilter is jinja2's map: each item's attribute (map(attribute='x',
// default=…)) or each item through a filter (map('lower')).
func mapFilter(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	items, done := filterItems(in)
	if done != nil {
		return done
	}
	if a, ok := params.KwArgs["attribute"]; ok && len(params.Args) == 0 {
		var def any
		if d, ok := params.KwArgs["default"]; ok {
			def = unwrap(d)
		}
		vals, err := mapAttribute(items, unwrap(a), def)
		if err != nil {
			return exec.AsValue(err)
		}
		return exec.AsValue(generator(vals))
	}
	if len(params.Args) == 0 {
		return exec.AsValue(&pyError{"FilterArgumentError", "map requires a filter argument"})
	}
	name := strings.TrimSpace(pyStr(unwrap(params.Args[0])))
	out := generator{}
	for _, it := range items {
		r := e.ExecuteFilterByName(name, exec.AsValue(it), &exec.VarArgs{Args: params.Args[1:], KwArgs: params.KwArgs})
		if r.IsError() {
			return r
		}
		out = append(out, unwrap(r))
	}
	return exec.AsValue(out)
}
