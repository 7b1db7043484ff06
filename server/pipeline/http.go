package pipeline

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FieldError is a field whose value has none of the JSON shapes it
// allows; a decoder's UnmarshalJSON returns it (or any error with these
// methods) to name the field.
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// FieldName is the field at fault.
func (e *FieldError) FieldName() string { return e.Field }

// Reason is what is wrong with it.
func (e *FieldError) Reason() string { return e.Msg }

// fieldErr is an error naming the field of a body at fault.
type fieldErr interface {
	error
	FieldName() string
	Reason() string
}

// Decode reads a JSON request body of at most maxBytes into v. Unknown
// fields are left to the caller; a known field of the wrong type is an
// Invalid error naming it (embedded names the embedded structs whose name
// prefixes a field's path), an oversized body TooLarge. A body that is not
// valid UTF-8 is Invalid: decoding it would put U+FFFD in place of the
// bad bytes, and the model would see text the client never sent.
func Decode(w http.ResponseWriter, r *http.Request, maxBytes int64, v any, embedded ...string) *Error {
	body, err := readBody(http.MaxBytesReader(w, r.Body, maxBytes), r.ContentLength, maxBytes)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &Error{Kind: TooLarge, Message: fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit)}
	case err != nil:
		return Errorf("", "reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return Errorf("", "the request body is empty; expected a JSON object")
	}
	if i := invalidUTF8(body); i >= 0 {
		return Errorf("", "the request body is not valid UTF-8 (byte %d)", i)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return jsonError(err, embedded)
	}
	return nil
}

// IsNull reports whether a raw JSON value is absent or null.
func IsNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// DecodeKnown unmarshals body, a JSON object, into v (a type without
// an UnmarshalJSON of its own) and returns, sorted, the names of its
// top-level fields that are not in known; with skipNull, a null field is
// taken as absent and never listed. A dialect's UnmarshalJSON calls it
// to refuse the fields it does not read (Unsupported).
func DecodeKnown(body []byte, v any, known []string, skipNull bool) ([]string, error) {
	if err := json.Unmarshal(body, v); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	var unknown []string
	for k, v := range fields {
		if !slices.Contains(known, k) && !(skipNull && IsNull(v)) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return unknown, nil
}

// Unsupported is the error for the first of the sorted unknown fields
// (DecodeKnown), nil when there is none.
func Unsupported(unknown []string) *Error {
	if len(unknown) == 0 {
		return nil
	}
	return Errorf(unknown[0], "%s: this field is not supported", unknown[0])
}

// readBody reads all of body. With a known length within the limit it
// reads into one buffer of that size: io.ReadAll's growing copies would
// hold about twice a large body at once.
func readBody(body io.Reader, length, maxBytes int64) ([]byte, error) {
	if length <= 0 || length > maxBytes {
		return io.ReadAll(body)
	}
	buf := make([]byte, length+1) // one more: a body longer than its length is an error below
	n, err := io.ReadFull(body, buf)
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		return buf[:n], nil // the server ends the body at its Content-Length
	case err != nil:
		return nil, err
	}
	rest, err := io.ReadAll(body) // a body past its Content-Length (not through net/http)
	return append(buf, rest...), err
}

// jsonError names the field a json.Unmarshal error is about.
func jsonError(err error, embedded []string) *Error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var fe fieldErr
	switch {
	case errors.As(err, &fe):
		return Errorf(fe.FieldName(), "%s: %s", fe.FieldName(), fe.Reason())
	case errors.As(err, &typeErr) && typeErr.Field != "":
		field := typeErr.Field
		for _, e := range embedded {
			field = strings.ReplaceAll(field, e+".", "")
		}
		return Errorf(field, "%s: expected %s, got JSON %s", field, jsonKind(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &typeErr):
		return Errorf("", "expected a JSON object, got JSON %s", typeErr.Value)
	case errors.As(err, &syntaxErr):
		return Errorf("", "malformed JSON at byte %d: %v", syntaxErr.Offset, err)
	}
	return Errorf("", "malformed JSON: %v", err)
}

// invalidUTF8 returns the offset of the first byte of b that is not part
// of valid UTF-8, or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

func jsonKind(goType string) string {
	switch strings.TrimPrefix(goType, "*") {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int32", "int64", "float64", "float32":
		return "a number"
	}
	return goType
}

// BearerKey is the key of "Authorization: Bearer KEY", or "".
func BearerKey(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if k, ok := strings.CutPrefix(h, "Bearer "); ok {
		return k
	}
	return ""
}

// WriteJSON writes v as the response body with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes body, a dialect's shape of e, with e's status (and
// Retry-After when e has one).
func WriteError(w http.ResponseWriter, e *Error, body any) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	WriteJSON(w, e.Status(), body)
}

// SSE writes server-sent events, each flushed at once. Once a write fails
// the client is gone and later events are dropped; the caller keeps
// reading its Run, which ends once the request's context is cancelled.
type SSE struct {
	w       http.ResponseWriter
	f       http.Flusher
	started bool
	gone    bool
}

// NewSSE starts writing events to w (the headers go with the first).
func NewSSE(w http.ResponseWriter) *SSE {
	f, _ := w.(http.Flusher)
	return &SSE{w: w, f: f}
}

// Event writes one event: "event: name" (when name is set) and
// "data: JSON".
func (s *SSE) Event(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	var out []byte
	if name != "" {
		out = append([]byte("event: "+name+"\n"), out...)
	}
	out = append(append(append(out, "data: "...), b...), '\n', '\n')
	s.Write(out)
}

// Write writes raw event bytes.
func (s *SSE) Write(b []byte) {
	if s.gone {
		return
	}
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
	}
	if _, err := s.w.Write(b); err != nil {
		s.gone = true
		return
	}
	if s.f != nil {
		s.f.Flush()
	}
}

// NewID returns prefix followed by 24 random hex digits.
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
