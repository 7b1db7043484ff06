package server

import (
	"net/http"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// decodeBody reads a JSON request body of at most maxBytes into v
// (pipeline.Decode, in OpenAI's error shape). Unknown fields are ignored
// (clients send extensions); a known field of the wrong type is a 400
// naming it, an oversized body a 413, a body that is not valid UTF-8 a 400.
func decodeBody(w http.ResponseWriter, r *http.Request, maxBytes int64, v any) *apiError {
	e := pipeline.Decode(w, r, maxBytes, v, "samplingFields", "Common", "Sampling", "Formats", "LlamaSampling")
	switch {
	case e == nil:
		return nil
	case e.Kind == pipeline.TooLarge:
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Message: e.Message, Code: strp("request_too_large")}
	}
	return badRequest(e.Param, "%s", e.Message)
}

// fieldError is a field whose value has none of the JSON shapes it
// allows (pipeline.Decode names it).
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string     { return e.field + ": " + e.msg }
func (e *fieldError) FieldName() string { return e.field }
func (e *fieldError) Reason() string    { return e.msg }

// stopField is OpenAI's stop: a string or a list of strings.
type stopField = pipeline.StopList
