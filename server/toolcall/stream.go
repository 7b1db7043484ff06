package toolcall

import (
	"strings"
	"unicode"
)

// CallDelta is a piece of the call at Index (0-based, in output order):
// the first delta of a call carries its ID and Name, later ones Arguments.
type CallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Delta is one streamed event: exactly one of its fields is set.
type Delta struct {
	Content   string
	Reasoning string
	Call      *CallDelta
}

// Stream parses an output fed in deltas.
type Stream struct {
	p         *Parser
	s         *scanner
	tail      strings.Builder // text not yet appended to s.buf
	calls     int
	content   trimmer
	reasoning trimmer
	closed    bool
}

// NewStream starts a stream.
func (p *Parser) NewStream() *Stream {
	return &Stream{p: p, s: newScanner(p)}
}

// Write feeds the next text and returns the deltas it decides.
func (st *Stream) Write(text string) []Delta {
	if st.closed {
		return nil
	}
	st.tail.WriteString(text)
	if size := len(st.s.buf) + st.tail.Len(); st.s.pending && size > rescanFrom && st.tail.Len() < size/8 {
		return nil // a long open block: read it again once it has grown by an eighth
	}
	st.flushTail()
	st.s.step(false)
	return st.drain(nil)
}

// rescanFrom is the size of an open block past which the stream reads it
// again only after it grows by an eighth, so that a long call costs
// O(n log n), not O(n²). Decisions do not depend on when the text is read,
// only when they are emitted.
const rescanFrom = 4096

func (st *Stream) flushTail() {
	st.s.buf += st.tail.String()
	st.tail.Reset()
}

// Close ends the output and returns the last deltas: what was held back,
// as content or a call.
func (st *Stream) Close() []Delta {
	if st.closed {
		return nil
	}
	st.closed = true
	st.flushTail()
	st.s.step(true)
	return st.drain(nil)
}

// Finished reports whether the stream emitted any call (finish_reason "tool_calls").
func (st *Stream) Finished() bool { return st.calls > 0 }

func (st *Stream) drain(ds []Delta) []Delta {
	for _, pc := range st.s.out {
		switch {
		case pc.call != nil:
			c := st.p.finish(*pc.call)
			ds = append(ds,
				Delta{Call: &CallDelta{Index: st.calls, ID: c.ID, Name: c.Name}},
				Delta{Call: &CallDelta{Index: st.calls, Arguments: c.Arguments}})
			st.calls++
		case pc.reasoning:
			if t := st.reasoning.add(pc.text); t != "" {
				ds = append(ds, Delta{Reasoning: t})
			}
		case st.p.CallsOnly: // a cut call, not content (Parser.CallsOnly)
		default:
			if t := st.content.add(pc.text); t != "" {
				ds = append(ds, Delta{Content: t})
			}
		}
	}
	st.s.out = st.s.out[:0]
	return ds
}

// trimmer streams a text trimmed of surrounding space: it drops leading
// space and holds trailing space until more text follows.
type trimmer struct {
	started bool
	pending string
}

func (t *trimmer) add(s string) string {
	if !t.started {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return ""
		}
		t.started = true
	}
	s = t.pending + s
	body := strings.TrimRightFunc(s, unicode.IsSpace)
	t.pending = s[len(body):]
	return body
}
