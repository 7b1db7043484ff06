package pipeline

import (
	"fmt"
	"net/http"
)

// ErrorKind is what went wrong, in neutral words; each dialect maps it to
// its own error type and status.
type ErrorKind uint8

// The error kinds.
const (
	Invalid       ErrorKind = iota + 1 // the request is malformed or unsupported: 400
	ContextLength                      // the prompt, or prompt and max tokens, exceed the context: 400
	Unauthorized                       // missing or wrong API key: 401
	NotFound                           // no such model, route or stored object: 404
	Timeout                            // past the server's request timeout: 408
	TooLarge                           // the body is too large: 413
	Overloaded                         // the queue is full: 429
	Internal                           // a failure of the server: 500
	Unavailable                        // loading, draining or stopping: 503
)

// Error is a typed error: its kind, the request field at fault (in the
// dialect's names, once Request.Names is applied) and a message.
type Error struct {
	Kind    ErrorKind
	Param   string
	Message string
	// Code is a machine-readable code where the error has one
	// ("context_length_exceeded", "model_not_found", "request_timeout",
	// "rate_limit_exceeded", ...): OpenAI's shape carries it.
	Code string
	// RetryAfter, in seconds, is sent as Retry-After when > 0.
	RetryAfter int
}

func (e *Error) Error() string { return e.Message }

// Status is the HTTP status of the error's kind.
func (e *Error) Status() int {
	switch e.Kind {
	case Invalid, ContextLength:
		return http.StatusBadRequest
	case Unauthorized:
		return http.StatusUnauthorized
	case NotFound:
		return http.StatusNotFound
	case Timeout:
		return http.StatusRequestTimeout
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case Overloaded:
		return http.StatusTooManyRequests
	case Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// OpenAIErrorType is OpenAI's error type of kind ("" for none), which its
// chat and Responses APIs share.
func OpenAIErrorType(kind ErrorKind) string {
	switch kind {
	case Invalid, ContextLength, Unauthorized, NotFound, TooLarge:
		return "invalid_request_error"
	case Timeout:
		return "timeout_error"
	case Overloaded:
		return "rate_limit_error"
	case Unavailable, Internal:
		return "server_error"
	}
	return ""
}

// KindOf is the kind of an HTTP status, for errors made as statuses.
func KindOf(status int) ErrorKind {
	switch status {
	case http.StatusBadRequest:
		return Invalid
	case http.StatusUnauthorized:
		return Unauthorized
	case http.StatusNotFound:
		return NotFound
	case http.StatusRequestTimeout:
		return Timeout
	case http.StatusRequestEntityTooLarge:
		return TooLarge
	case http.StatusTooManyRequests:
		return Overloaded
	case http.StatusServiceUnavailable:
		return Unavailable
	}
	return Internal
}

// Errorf is an Invalid error about param.
func Errorf(param, format string, args ...any) *Error {
	return &Error{Kind: Invalid, Param: param, Message: fmt.Sprintf(format, args...)}
}

// Rename gives e's Param the dialect's name from names, when it has one.
func (e *Error) Rename(names map[string]string) *Error {
	if e == nil {
		return nil
	}
	if n, ok := names[e.Param]; ok {
		e.Param = n
	}
	return e
}
