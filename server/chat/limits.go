package chat

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// A template is code, and a hostile one (from a model file, the operator,
// or a request's chat_template_kwargs feeding it) must not hang the server
// or exhaust its memory. jinja2's sandbox bounds range(); a render here is
// bounded further, in time by a budget of loop iterations and macro calls
// (maxSteps: real templates loop over the messages and their parts, a few
// thousand steps at most; 2^17 of gonja's take about a second here), in space by a cap on every string or list it builds and on
// its output (maxString). Past either, the render fails with a
// MemoryError or a RuntimeError naming the limit.
const (
	maxSteps  = 1 << 17
	maxString = 8 << 20
)

// budgetVar holds the render's *budget in its context.
const budgetVar = "__chat_budget"

// budget is one render's remaining steps.
type budget struct{ steps int }

// charge spends n steps of the render r runs in.
func charge(r *exec.Renderer, n int) error {
	v, _ := r.Environment.Context.Get(budgetVar)
	b, ok := v.(*budget)
	if !ok {
		return errors.New("chat: render without a budget")
	}
	if b.steps -= n; b.steps < 0 {
		return &pyError{"RuntimeError", fmt.Sprintf("the template ran more than %d loop iterations and macro calls", maxSteps)}
	}
	return nil
}

// tooLong is the error for a string or list of n bytes or items.
func tooLong(n int) error {
	return &pyError{"MemoryError", fmt.Sprintf("the template built a value of %d bytes or items; the limit is %d", n, maxString)}
}

// checkSize fails where v is a string or list past maxString.
func checkSize(v any, err error) (any, error) {
	if err != nil {
		return v, err
	}
	switch x := v.(type) {
	case string:
		if len(x) > maxString {
			return nil, tooLong(len(x))
		}
	case list:
		if len(x) > maxString {
			return nil, tooLong(len(x))
		}
	case tuple:
		if len(x) > maxString {
			return nil, tooLong(len(x))
		}
	}
	return v, nil
}

// repeatLen is the length of n copies of a length-l string or list, or
// an error past maxString (checked before building it).
func repeatLen(l, n int) error {
	if n > 0 && l > 0 && l > maxString/n {
		return tooLong(l * min(n, maxString))
	}
	return nil
}

// replacedLen checks the length of strings.Replace(s, old, new, count)
// before it is built.
func replacedLen(s, old, new string, count int) error {
	if len(new) <= len(old) {
		return nil
	}
	c := len(s) + 1
	if old != "" {
		c = strings.Count(s, old)
	}
	if count >= 0 {
		c = min(c, count)
	}
	if err := repeatLen(len(new)-len(old), c); err != nil {
		return err
	}
	if n := len(s) + c*(len(new)-len(old)); n > maxString {
		return tooLong(n)
	}
	return nil
}

// cappedWriter fails a write that would take its output past maxString.
type cappedWriter struct {
	w io.Writer
	n int
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.n += len(p); c.n > maxString {
		return 0, tooLong(c.n)
	}
	return c.w.Write(p)
}
