package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sync/semaphore"
)

// Tokenizing costs tens of times the text's size in memory, so two bounds
// come before it:
//
//   - tokenizeText refuses a text that cannot fit the context whatever its
//     tokens: a token stands for at most Runtime.MaxTokenBytes bytes, so a
//     text of n such bytes is at least ceil(n / MaxTokenBytes) tokens. The
//     bound never refuses a text that would fit.
//   - bodyBudget bounds the bytes of request bodies read, decoded and
//     tokenized at once, server-wide: a request reserves its body's size
//     before reading it and gives it back once its prompt is tokenized
//     (launch) or it is answered. What passes the first check is then
//     tokenized a bounded number of bytes at a time.

// errPromptTooLong is wrapped by tokenizeText for a text that cannot fit.
var errPromptTooLong = errors.New("cannot fit the context")

// tokenizeText tokenizes text (special tokens parsed) unless it cannot fit
// the context (an error wrapping errPromptTooLong).
func (s *Server) tokenizeText(text string, addSpecial bool) ([]int32, error) {
	if l := s.maxTokenBytes; l > 0 {
		if n := significantBytes(text); (n+l-1)/l > s.rt.MaxModelLen() {
			return nil, fmt.Errorf("it is %d bytes, at least %d tokens, and %w of %d tokens", len(text), (n+l-1)/l,
				errPromptTooLong, s.rt.MaxModelLen())
		}
	}
	return s.rt.TokenizeText(text, addSpecial, true)
}

// tokenizeError is the 400 of a text tokenizeText refused, about param.
func tokenizeError(param, what string, err error) *apiError {
	if errors.Is(err, errPromptTooLong) {
		return tooLong(param, "%s: %v", what, err)
	}
	return badRequest(param, "%s: %v", what, err)
}

// significantBytes counts text's bytes outside whitespace.
func significantBytes(text string) int {
	n := 0
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if !unicode.IsSpace(rune(c)) {
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsSpace(r) {
			n += size
		}
		i += size
	}
	return n
}

// bodyBudget is the server-wide bound on request-body bytes in flight
// (Config.MaxBodyBytesInFlight).
type bodyBudget struct {
	sem  *semaphore.Weighted
	size int64
}

// bodyHold is one request's reservation; release is idempotent.
type bodyHold struct {
	b    *bodyBudget
	mu   sync.Mutex
	held int64
}

type bodyHoldKey struct{}

// withBodyHold gives r a reservation that its handler's read fills and
// that is released when done is called (at the latest).
func (b *bodyBudget) withBodyHold(r *http.Request) (*http.Request, *bodyHold) {
	h := &bodyHold{b: b}
	return r.WithContext(context.WithValue(r.Context(), bodyHoldKey{}, h)), h
}

// holdOf is ctx's reservation, nil when it has none.
func holdOf(ctx context.Context) *bodyHold {
	h, _ := ctx.Value(bodyHoldKey{}).(*bodyHold)
	return h
}

// reserve waits for the bytes of r's body (its Content-Length, or the
// body limit when unknown), at most the budget, or for ctx to end.
func (b *bodyBudget) reserve(ctx context.Context, r *http.Request, limit int64) (int64, error) {
	n := limit
	if r.ContentLength >= 0 && r.ContentLength < n {
		n = r.ContentLength
	}
	n = min(max(n, 1), b.size)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return 0, fmt.Errorf("waiting to read the request body: %w", err)
	}
	return n, nil
}

// add records n more bytes held.
func (h *bodyHold) add(n int64) {
	h.mu.Lock()
	h.held += n
	h.mu.Unlock()
}

// release gives back what h holds.
func (h *bodyHold) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	n := h.held
	h.held = 0
	h.mu.Unlock()
	if n > 0 {
		h.b.sem.Release(n)
	}
}

// decodeBudgeted is decodeBody within the body budget: the reservation
// stays with the request's hold (released by launch or when it is
// answered), or is given back at once when the request has none.
func (s *Server) decodeBudgeted(w http.ResponseWriter, r *http.Request, v any) *apiError {
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return bodyTooLarge(s.cfg.MaxBodyBytes)
	}
	n, err := s.budget.reserve(r.Context(), r, s.cfg.MaxBodyBytes)
	if err != nil {
		return unavailable(err.Error())
	}
	h := holdOf(r.Context())
	if h == nil {
		defer s.budget.sem.Release(n)
	} else {
		h.add(n)
	}
	return decodeBody(w, r, s.cfg.MaxBodyBytes, v)
}

// budgeted reads the body of a dialect's route (which decodes it itself)
// within the body budget: its bytes are reserved before the handler runs
// and held until launch (or the handler's return) gives them back.
func (s *Server) budgeted(write errorWriter, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.cfg.MaxBodyBytes {
			write(w, bodyTooLarge(s.cfg.MaxBodyBytes))
			return
		}
		r, hold := s.budget.withBodyHold(r)
		defer hold.release()
		n, err := s.budget.reserve(r.Context(), r, s.cfg.MaxBodyBytes)
		if err != nil {
			write(w, unavailable(err.Error()))
			return
		}
		hold.add(n)
		next(w, r)
	}
}

// bodyTooLarge is the 413 of a body over limit bytes.
func bodyTooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
		Message: fmt.Sprintf("request body is larger than %d bytes", limit), Code: strp("request_too_large")}
}
