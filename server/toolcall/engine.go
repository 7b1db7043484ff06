package toolcall

import "strings"

// mode says where plain text goes.
type mode uint8

const (
	inContent mode = 1 << iota
	inReasoning
	inAny = inContent | inReasoning
)

// status is what a block's scan decided.
type status uint8

const (
	needMore status = iota // the block may still grow: wait for more text
	done                   // the block parsed
	failed                 // the block is malformed: its text is plain text
)

// outcome is what a parsed block yields.
type outcome struct {
	calls   []Call
	setMode mode // 0: unchanged
}

// block is one kind of marked region of a format's output.
type block struct {
	start     string // the marker that opens it
	modes     mode   // modes in which the marker is recognized
	atStart   bool   // recognized only before any non-space content
	afterCall bool   // recognized only after a call
	// scan reads s, which begins with start, and returns the block's length.
	// It returns needMore only when final is false, and a length of at
	// least len(start) otherwise.
	scan func(s string, final bool) (n int, st status, out outcome)
}

// piece is one item a scan produces, in output order.
type piece struct {
	reasoning bool
	text      string
	call      *Call
}

// scanner walks a growing buffer; what it has passed is decided for good.
type scanner struct {
	f          *format
	buf        string
	pos        int
	prefix     int // leading bytes of buf that are virtual (the prompt's tail)
	mode       mode
	sawContent bool
	calls      int
	pending    bool // the last step stopped at a block that needs more text
	noCalls    bool // calls are read as text
	out        []piece
}

func newScanner(p *Parser) *scanner {
	f := p.Format.def()
	s := &scanner{f: f, buf: f.prefix, prefix: len(f.prefix), mode: inContent, noCalls: p.NoCalls}
	if p.ReasoningOpen && f.reasoningMarker != "" {
		s.mode = inReasoning
	}
	return s
}

// plain emits buf[a:b] as text of the current mode.
func (s *scanner) plain(a, b int) {
	a = max(a, s.prefix)
	if a >= b {
		return
	}
	t := s.buf[a:b]
	if s.mode == inReasoning {
		s.out = append(s.out, piece{reasoning: true, text: t})
		return
	}
	if strings.TrimSpace(t) != "" {
		s.sawContent = true
	}
	s.out = append(s.out, piece{text: t})
}

// active reports whether b is recognized at rest[i:].
func (s *scanner) active(b *block, rest string, i int) bool {
	if b.modes&s.mode == 0 {
		return false
	}
	if b.afterCall && s.calls == 0 {
		return false
	}
	if b.atStart && (s.sawContent || strings.TrimSpace(rest[:i]) != "") {
		return false
	}
	return true
}

// next finds the earliest active marker in rest (the longest on a tie).
func (s *scanner) next(rest string) (int, *block) {
	best, bi := (*block)(nil), -1
	for k := range s.f.blocks {
		b := &s.f.blocks[k]
		i := strings.Index(rest, b.start)
		if i < 0 || !s.active(b, rest, i) {
			continue
		}
		if bi < 0 || i < bi || (i == bi && len(b.start) > len(best.start)) {
			best, bi = b, i
		}
	}
	return bi, best
}

// heldBack is the length of the longest suffix of rest that may begin an
// active marker.
func (s *scanner) heldBack(rest string) int {
	h := 0
	for k := range s.f.blocks {
		b := &s.f.blocks[k]
		for n := min(len(b.start)-1, len(rest)); n > h; n-- {
			if strings.HasPrefix(b.start, rest[len(rest)-n:]) && s.active(b, rest, len(rest)-n) {
				h = n
				break
			}
		}
	}
	return h
}

// step scans as far as the text decides; with final, to its end. It then
// drops the decided text, so that appending to buf copies only the rest.
func (s *scanner) step(final bool) {
	defer func() {
		s.buf, s.prefix, s.pos = s.buf[s.pos:], max(0, s.prefix-s.pos), 0
	}()
	for {
		rest := s.buf[s.pos:]
		i, b := s.next(rest)
		if b == nil {
			n := len(rest)
			if !final {
				n -= s.heldBack(rest)
			}
			s.plain(s.pos, s.pos+n)
			s.pos += n
			return
		}
		s.plain(s.pos, s.pos+i)
		s.pos += i
		n, st, out := b.scan(s.buf[s.pos:], final)
		s.pending = st == needMore
		if st == done && len(out.calls) > 0 && s.noCalls {
			if st = failed; s.f.dropCalls {
				st, out.calls = done, nil
			}
		}
		switch st {
		case needMore:
			return
		case failed:
			s.plain(s.pos, s.pos+n)
		case done:
			s.calls += len(out.calls)
			for k := range out.calls {
				s.out = append(s.out, piece{call: &out.calls[k]})
			}
			if out.setMode != 0 {
				s.mode = out.setMode
			}
		}
		s.pos += n
	}
}
