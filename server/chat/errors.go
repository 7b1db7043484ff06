package chat

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// ErrNoTemplate is returned by Parse for an empty template and by Render on
// a nil *Template: the model has no chat template, so a chat request cannot
// be turned into a prompt (the HTTP layer answers 400).
var ErrNoTemplate = errors.New("chat: the model has no chat template")

// TemplateError is a template's own refusal, from raise_exception (for
// example "Conversation roles must alternate user/assistant/..."): the
// request is at fault.
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string { return "chat template: " + e.Message }

// RenderError is a template failing on the request's messages as Python's
// jinja2 fails: Msg names the exception (TypeError, UndefinedError…) and
// Line is the template line gonja reports last, 0 if none.
type RenderError struct {
	Line int
	Msg  string
	err  error
}

func (e *RenderError) Error() string {
	if e.Line == 0 {
		return "chat: render: " + e.Msg
	}
	return fmt.Sprintf("chat: render: template line %d: %s", e.Line, e.Msg)
}

func (e *RenderError) Unwrap() error { return e.err }

var (
	exceptionRE = regexp.MustCompile(`\b[A-Z][A-Za-z]*(Error|Exception): `)
	lineRE      = regexp.MustCompile(`(?i)\bline[ =](\d+)`)
)

// renderError shortens gonja's chain of wrapped messages to the exception
// our filters raised and the innermost line.
func renderError(err error) error {
	msg := err.Error()
	if locs := exceptionRE.FindAllStringIndex(msg, -1); len(locs) > 0 {
		msg = msg[locs[len(locs)-1][0]:]
	}
	e := &RenderError{Msg: msg, err: err}
	if lines := lineRE.FindAllStringSubmatch(err.Error(), -1); len(lines) > 0 {
		e.Line, _ = strconv.Atoi(lines[len(lines)-1][1])
	}
	return e
}
