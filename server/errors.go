package server

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is an error in OpenAI's shape, with its HTTP status.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// RetryAfter, in seconds, is sent as Retry-After when > 0.
	RetryAfter int `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// badRequest is a 400 about param (may be "").
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...),
		Type: "invalid_request_error", Param: strp(param)}
}

// tooLong is the 400 of a request that does not fit the context, with
// OpenAI's code for it.
func tooLong(param, format string, args ...any) *apiError {
	e := badRequest(param, format, args...)
	e.Code = strp("context_length_exceeded")
	return e
}

func notFound(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf(format, args...),
		Type: "invalid_request_error", Code: strp(code)}
}

func unavailable(msg string) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Message: msg, Type: "server_error",
		Code: strp("service_unavailable"), RetryAfter: 1}
}

func internal(err error) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Message: err.Error(), Type: "server_error"}
}

// writeError writes e as {"error": {...}}.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(e.RetryAfter))
	}
	writeJSON(w, e.Status, struct {
		Error *apiError `json:"error"`
	}{e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
