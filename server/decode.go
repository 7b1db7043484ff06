package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// decodeBody reads a JSON request body of at most maxBytes into v. Unknown
// fields are ignored (clients send extensions); a known field of the wrong
// type is a 400 naming it, an oversized body a 413. A body that is not
// valid UTF-8 is a 400: decoding it would put U+FFFD in place of the bad
// bytes, and the model would see text the client never sent.
func decodeBody(w http.ResponseWriter, r *http.Request, maxBytes int64, v any) *apiError {
	body, err := readBody(http.MaxBytesReader(w, r.Body, maxBytes), r.ContentLength, maxBytes)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return bodyTooLarge(tooBig.Limit)
	case err != nil:
		return badRequest("", "reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("", "the request body is empty; expected a JSON object")
	}
	if i := invalidUTF8(body); i >= 0 {
		return badRequest("", "the request body is not valid UTF-8 (byte %d)", i)
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		var fieldErr *fieldError
		switch {
		case errors.As(err, &fieldErr):
			return badRequest(fieldErr.field, "%s: %s", fieldErr.field, fieldErr.msg)
		case errors.As(err, &typeErr) && typeErr.Field != "":
			field := strings.TrimPrefix(typeErr.Field, "samplingFields.") // the embedded struct shared by the endpoints
			return badRequest(field, "%s: expected %s, got JSON %s", field, jsonKind(typeErr.Type.String()), typeErr.Value)
		case errors.As(err, &typeErr):
			return badRequest("", "expected a JSON object, got JSON %s", typeErr.Value)
		case errors.As(err, &syntaxErr):
			return badRequest("", "malformed JSON at byte %d: %v", syntaxErr.Offset, err)
		default:
			return badRequest("", "malformed JSON: %v", err)
		}
	}
	return nil
}

// bodyTooLarge is the 413 of a body over limit bytes.
func bodyTooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
		Message: fmt.Sprintf("request body is larger than %d bytes", limit), Code: strp("request_too_large")}
}

// readBody reads body into one buffer of its declared length (io.ReadAll
// would grow it by copies, holding up to twice the body meanwhile).
func readBody(body io.Reader, length, maxBytes int64) ([]byte, error) {
	if length < 0 || length > maxBytes {
		return io.ReadAll(body)
	}
	buf := make([]byte, length) // net/http ends the body at its Content-Length
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	return buf, nil
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
	switch goType {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int32", "int64", "float64", "float32", "*int", "*float64":
		return "a number"
	}
	return goType
}

// fieldError is a field whose value has none of the JSON shapes it allows.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// stopField is OpenAI's stop: a string or a list of strings.
type stopField []string

func (s *stopField) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = stopField{one}
		return nil
	}
	var list []string
	if json.Unmarshal(b, &list) == nil {
		*s = list
		return nil
	}
	return &fieldError{"stop", "expected a string or a list of strings"}
}

// promptField is the completions prompt: a string, a list of strings, a
// list of token ids, or a list of such lists. Each entry is one prompt.
type promptField struct {
	texts []string
	ids   [][]int32
}

func (p *promptField) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		p.texts = []string{one}
		return nil
	}
	var texts []string
	if json.Unmarshal(b, &texts) == nil && len(texts) > 0 {
		p.texts = texts
		return nil
	}
	var ids []int32
	if json.Unmarshal(b, &ids) == nil && len(ids) > 0 {
		p.ids = [][]int32{ids}
		return nil
	}
	var lists [][]int32
	if json.Unmarshal(b, &lists) == nil && len(lists) > 0 {
		p.ids = lists
		return nil
	}
	return &fieldError{"prompt", "expected a non-empty string, list of strings, list of token ids, or list of such lists"}
}

// contentField is a chat message's content: a string, or a list of parts of
// which only {"type":"text"} parts are supported (their texts are joined
// with "\n").
type contentField struct {
	text string
	set  bool
}

func (c *contentField) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if json.Unmarshal(b, &c.text) == nil {
		c.set = true
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return &fieldError{"messages.content", "expected a string or a list of content parts"}
	}
	texts := make([]string, len(parts))
	for i, p := range parts {
		if p.Type != "text" {
			return &fieldError{"messages.content", fmt.Sprintf("content part type %q is not supported (text only)", p.Type)}
		}
		texts[i] = p.Text
	}
	c.text = strings.Join(texts, "\n") // as vLLM and llama-server join them
	c.set = true
	return nil
}
