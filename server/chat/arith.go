package chat

import (
	"math"
	"strings"
)

// binary is Python's a op b for the arithmetic and comparison operators.
func binary(op string, a, b any) (any, error) {
	switch op {
	case "+":
		return checkSize(add(a, b))
	case "==":
		return pyEqual(a, b), nil
	case "!=":
		return !pyEqual(a, b), nil
	case "<", ">", "<=", ">=":
		c, err := compare(op, a, b)
		if err != nil {
			return nil, err
		}
		switch op {
		case "<":
			return c < 0, nil
		case ">":
			return c > 0, nil
		case "<=":
			return c <= 0, nil
		}
		return c >= 0, nil
	}
	if a == nil || b == nil {
		return nil, undefinedError("an operand of " + op)
	}
	if op == "%" && isStr(a) {
		return percentFormat(pyStr(a), b)
	}
	if op == "*" {
		if s, n, ok := repeatOperands(a, b); ok {
			if err := repeatLen(len(s), n); err != nil {
				return nil, err
			}
			return strings.Repeat(s, max(n, 0)), nil
		}
	}
	fa, ia, okA := number(a)
	fb, ib, okB := number(b)
	if !okA || !okB {
		return nil, typeError("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
	}
	ints := ia && ib
	switch op {
	case "-":
		if ints {
			return asInt(a) - asInt(b), nil
		}
		return fa - fb, nil
	case "*":
		if ints {
			return asInt(a) * asInt(b), nil
		}
		return fa * fb, nil
	case "**":
		if ints && asInt(b) >= 0 {
			return int(math.Pow(fa, fb)), nil
		}
		return math.Pow(fa, fb), nil
	}
	if fb == 0 {
		return nil, &pyError{"ZeroDivisionError", "division by zero"}
	}
	switch op {
	case "/":
		return fa / fb, nil
	case "//":
		if ints {
			return floorDiv(asInt(a), asInt(b)), nil
		}
		return math.Floor(fa / fb), nil
	case "%":
		if ints {
			return asInt(a) - floorDiv(asInt(a), asInt(b))*asInt(b), nil
		}
		return fa - float64(math.Floor(fa/fb)*fb), nil // explicit conversion: no fused multiply-add, as amd64 computes it
	}
	return nil, typeError("unsupported operator %s", op)
}

// repeatOperands recognises str * int and int * str.
func repeatOperands(a, b any) (string, int, bool) {
	if n, ok := b.(int); ok && isStr(a) {
		return pyStr(a), n, true
	}
	if n, ok := a.(int); ok && isStr(b) {
		return pyStr(b), n, true
	}
	return "", 0, false
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// compare orders numbers with numbers and strings with strings; anything
// else is a TypeError, as in Python.
func compare(op string, a, b any) (int, error) {
	if fa, _, ok := number(a); ok {
		if fb, _, ok := number(b); ok {
			switch {
			case fa < fb:
				return -1, nil
			case fa > fb:
				return 1, nil
			}
			return 0, nil
		}
	}
	if isStr(a) && isStr(b) {
		return strings.Compare(pyStr(a), pyStr(b)), nil
	}
	if a == nil || b == nil {
		return 0, undefinedError("an operand of " + op)
	}
	return 0, typeError("'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
}
