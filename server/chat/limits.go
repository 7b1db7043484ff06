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
// bounded further by a budget (see budget): in steps (loop iterations and
// macro calls: real templates loop over the messages and their parts, a
// few thousand steps at most), in work (the bytes each operation reads and
// writes, so that one step cannot cost an 8 MB copy a hundred thousand
// times over) and in memory (the bytes of every value the render builds,
// an upper bound on what it holds at once). Every string or list it builds
// and its output are capped at maxString besides, checked before the value
// is built.
const (
	maxSteps  = 1 << 17
	maxString = 8 << 20

	// A render may process baseWork bytes, plus workPerInputByte for
	// every byte of its input (the messages, tools and kwargs), and build
	// values of baseMemory bytes in all, plus memoryPerInputByte for every
	// byte of its input. Real templates read each message a few times:
	// on the golden conversations grown to 270 KB, they spend at most
	// about 19 bytes of work and 10 of memory per input byte
	// (TestBudgetFitsRealTemplates keeps them under half the allowance).
	// A hostile template gets a fraction of a second of CPU (more where a
	// step costs more than a copy per byte, as case mapping does).
	baseWork           = 64 << 20
	workPerInputByte   = 64
	baseMemory         = 32 << 20
	memoryPerInputByte = 32
)

// BudgetError is a render stopped by its budget: the template ran too many
// steps, processed too many bytes or built too much. The template is at
// fault, not the request (a server answers 500 and logs that the model's
// chat template is broken or hostile).
type BudgetError struct {
	Resource string // "steps", "work", "memory" or "value" (one string or list)
	Limit    int64  // steps, or bytes
}

func (e *BudgetError) Error() string {
	what := map[string]string{
		"steps":  "loop iterations and macro calls",
		"work":   "bytes processed",
		"memory": "bytes of values built",
		"value":  "bytes or items in one string or list",
	}[e.Resource]
	return fmt.Sprintf("chat: the chat template exceeded its %s budget (more than %d %s): the template is broken or hostile", e.Resource, e.Limit, what)
}

// budgetVar holds the render's *budget in its context.
const budgetVar = "__chat_budget"

// budget is what one render has left. The first limit crossed is kept in
// err, and every later charge fails with it, so that the render stops
// whatever gonja does with the error value on the way.
type budget struct {
	steps           int
	work, memory    int64 // left
	workMax, memMax int64
	input           int // bytes of the render's input
	err             *BudgetError
}

// newBudget is the budget of a render whose input (messages, tools,
// kwargs) holds input bytes.
func newBudget(input int) *budget {
	w := baseWork + workPerInputByte*int64(input)
	m := baseMemory + memoryPerInputByte*int64(input)
	return &budget{steps: maxSteps, work: w, memory: m, workMax: w, memMax: m, input: input}
}

// spend charges work bytes processed and mem bytes built.
func (b *budget) spend(work, mem int) error {
	if b.err != nil {
		return b.err
	}
	if b.work -= int64(work); b.work < 0 {
		b.err = &BudgetError{"work", b.workMax}
	} else if b.memory -= int64(mem); b.memory < 0 {
		b.err = &BudgetError{"memory", b.memMax}
	}
	if b.err != nil {
		return b.err
	}
	return nil
}

// spendValue charges an operation that read in and args and built out:
// their bytes as work, out's as memory.
func (b *budget) spendValue(in any, args []any, out any) error {
	work := size(in) + size(out)
	for _, a := range args {
		work += size(a)
	}
	return b.spend(work, size(out))
}

// step charges n steps.
func (b *budget) step(n int) error {
	if b.err != nil {
		return b.err
	}
	if b.steps -= n; b.steps < 0 {
		b.err = &BudgetError{"steps", maxSteps}
		return b.err
	}
	return nil
}

// tooBig is the error for a value of n bytes or items past maxString: the
// template is at fault (a *BudgetError) unless the request itself is large
// enough to make such a value (a Python-like MemoryError, the request's).
func (b *budget) tooBig(e *sizeError) error {
	if b.err != nil {
		return b.err
	}
	if 4*b.input >= maxString {
		return e
	}
	b.err = &BudgetError{"value", maxString}
	return b.err
}

// checked turns the error of an operation into the budget's error where
// it is one.
func (b *budget) checked(err error) error {
	var se *sizeError
	if errors.As(err, &se) {
		return b.tooBig(se)
	}
	return err
}

// size is what a value weighs for the budget: a string its bytes, a
// container 16 bytes an item (its items are charged where they are built).
func size(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case markup:
		return len(x)
	case list:
		return 16 * len(x)
	case tuple:
		return 16 * len(x)
	case generator:
		return 16 * len(x)
	case []any:
		return 16 * len(x)
	case dict:
		return 32 * len(x)
	}
	return 0
}

// deepSize is the bytes of the strings in v and its items: the input's
// size.
func deepSize(v any) int {
	switch x := v.(type) {
	case dict:
		n := 0
		for k, val := range x {
			n += deepSize(k.key) + deepSize(val)
		}
		return n
	case list, tuple, generator, []any:
		items, _ := sequence(x)
		n := 0
		for _, it := range items {
			n += deepSize(it)
		}
		return n
	}
	return size(v)
}

// install puts b in a render's variables, and the globals that build
// values (range, namespace, dict, strftime_now) charged to it.
func (b *budget) install(vars map[string]any) {
	vars[budgetVar] = b
	for name, f := range map[string]fn{"range": rangeGlobal, "namespace": namespaceGlobal, "dict": dictGlobal} {
		vars[name] = b.charged(f)
	}
	if f, ok := vars["strftime_now"].(fn); ok {
		vars["strftime_now"] = b.charged(f)
	}
}

// budgetOf returns the budget in ctx, nil when none (Parse's probes).
func budgetOf(ctx *exec.Context) *budget {
	v, _ := ctx.Get(budgetVar)
	b, _ := v.(*budget)
	return b
}

// charge spends n steps of the render r runs in.
func charge(r *exec.Renderer, n int) error {
	b := budgetOf(r.Environment.Context)
	if b == nil {
		return errors.New("chat: render without a budget")
	}
	return b.step(n)
}

// sizeError is a value of n bytes or items past maxString, refused before
// it is built.
type sizeError struct{ n int }

func (e *sizeError) Error() string {
	return fmt.Sprintf("MemoryError: the template built a value of %d bytes or items; the limit is %d", e.n, maxString)
}

// tooLong is the error for a string or list of n bytes or items.
func tooLong(n int) error { return &sizeError{n} }

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

// joinParts is items as strings (by str, which may fail) to be joined by
// sep, or an error as soon as the joined length passes maxString.
func joinParts(items []any, sep string, str func(any) string) ([]string, error) {
	if err := repeatLen(len(sep), len(items)-1); err != nil {
		return nil, err
	}
	n := len(sep) * max(len(items)-1, 0)
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = str(it)
		if n += len(parts[i]); n > maxString {
			return nil, tooLong(n)
		}
	}
	return parts, nil
}

// charged is the method m with its calls charged to b: what they read
// and what they build.
func (b *budget) charged(m fn) fn {
	return func(va *exec.VarArgs) *exec.Value {
		out := m(va)
		if out.IsError() {
			if err, ok := out.Interface().(error); ok {
				return exec.AsValue(b.checked(err))
			}
			return out
		}
		args := make([]any, 0, len(va.Args)+len(va.KwArgs))
		for _, a := range va.Args {
			args = append(args, unwrap(a))
		}
		for _, a := range va.KwArgs {
			args = append(args, unwrap(a))
		}
		if err := b.spendValue(nil, args, unwrap(out)); err != nil {
			return exec.AsValue(err)
		}
		return out
	}
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

// cappedWriter fails a write that would take its output past maxString,
// and charges what it writes to the render's budget (nil: none).
type cappedWriter struct {
	w io.Writer
	n int
	b *budget
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.n += len(p); c.n > maxString {
		if c.b != nil {
			return 0, c.b.tooBig(&sizeError{c.n})
		}
		return 0, tooLong(c.n)
	}
	if c.b != nil {
		if err := c.b.spend(len(p), len(p)); err != nil {
			return 0, err
		}
	}
	return c.w.Write(p)
}

// capped is a writer into w capped and charged as the render r runs in.
func capped(r *exec.Renderer, w io.Writer) *cappedWriter {
	return &cappedWriter{w: w, b: budgetOf(r.Environment.Context)}
}

// boundedRepr panics with a *sizeError once n passes maxString; pyRepr
// and tojson call it as they build, and the render recovers it.
func boundedRepr(n int) {
	if n > maxString {
		panic(&sizeError{n})
	}
}
