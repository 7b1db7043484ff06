package grammar

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on what Compile accepts. A grammar past one is an error.
const (
	MaxSourceBytes = 4 << 20 // GBNF source size
	MaxRepetition  = 1 << 14 // {m,n} bound (llama.cpp's is 2000); a larger n means no maximum
	maxSymbols     = 1 << 20 // symbols after repetitions are expanded
	maxNesting     = 200     // parenthesis depth
)

// ErrTooComplex is wrapped by the errors of grammars past a limit.
var ErrTooComplex = errors.New("grammar too complex")

// rng is an inclusive range of code points.
type rng struct{ lo, hi rune }

// cset is a character class: the code points in r, or outside them when neg
// ("." is a negated empty class).
type cset struct {
	neg bool
	r   []rng
}

// sym is one item of a sequence: a class (cs != nil) or a rule reference.
type sym struct {
	ref int
	cs  *cset
}

// prule is a parsed rule: alternatives of sequences.
type prule struct {
	name    string
	alts    [][]sym
	defined bool
	used    int // offset of a first reference, for errors
}

// SyntaxError is a GBNF parse error at a byte offset of the source.
type SyntaxError struct {
	Line, Col int // 1-based
	Offset    int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: line %d col %d: %s", e.Line, e.Col, e.Msg)
}

type parser struct {
	ctx   context.Context
	next  int // nsyms at which ctx is looked at next
	src   string
	i     int
	rules []*prule
	ids   map[string]int
	nsyms int
	depth int
	err   error
}

// parse reads GBNF source into rules; the rule named root is returned too.
func parse(ctx context.Context, src string) (rules []*prule, root int, err error) {
	if len(src) > MaxSourceBytes {
		return nil, 0, fmt.Errorf("grammar: source of %d bytes over %d: %w", len(src), MaxSourceBytes, ErrTooComplex)
	}
	p := &parser{ctx: ctx, src: src, ids: map[string]int{}}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			err = pe.err
		}
	}()
	p.space(true)
	for p.i < len(p.src) {
		p.rule()
	}
	for _, r := range p.rules {
		if !r.defined {
			p.i = r.used
			p.fail("undefined rule %q", r.name)
		}
	}
	id, ok := p.ids["root"]
	if !ok {
		return nil, 0, errors.New("grammar: no rule named root")
	}
	return p.rules, id, nil
}

type parseError struct{ err error }

func (p *parser) fail(format string, args ...any) {
	line, col := 1, 1
	for _, c := range p.src[:min(p.i, len(p.src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	panic(parseError{&SyntaxError{Line: line, Col: col, Offset: p.i, Msg: fmt.Sprintf(format, args...)}})
}

func (p *parser) tooComplex(format string, args ...any) {
	panic(parseError{fmt.Errorf("grammar: %s: %w", fmt.Sprintf(format, args...), ErrTooComplex)})
}

func (p *parser) peek(k int) byte {
	if p.i+k < len(p.src) {
		return p.src[p.i+k]
	}
	return 0
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func (p *parser) space(newlineOK bool) {
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == ' ' || c == '\t':
			p.i++
		case c == '#':
			for p.i < len(p.src) && p.src[p.i] != '\r' && p.src[p.i] != '\n' {
				p.i++
			}
		case newlineOK && (c == '\r' || c == '\n'):
			p.i++
		default:
			return
		}
	}
}

func (p *parser) name() string {
	start := p.i
	for p.i < len(p.src) && isWordChar(p.src[p.i]) {
		p.i++
	}
	if p.i == start {
		p.fail("expecting name")
	}
	return p.src[start:p.i]
}

func (p *parser) symbol(name string) int {
	if id, ok := p.ids[name]; ok {
		return id
	}
	id := len(p.rules)
	p.ids[name] = id
	p.rules = append(p.rules, &prule{name: name, used: p.i})
	return id
}

func (p *parser) newRule(base string) int {
	name := base + "_" + strconv.Itoa(len(p.rules))
	for p.ids[name] != 0 {
		name += "_"
	}
	id := p.symbol(name)
	p.rules[id].defined = true
	return id
}

func (p *parser) rule() {
	at := p.i
	name := p.name()
	if id, ok := p.ids[name]; ok && p.rules[id].defined {
		p.i = at
		p.fail("rule %q defined twice", name)
	}
	p.space(false)
	if !strings.HasPrefix(p.src[p.i:], "::=") {
		p.fail("expecting ::=")
	}
	p.i += 3
	p.space(true)
	id := p.symbol(name)
	p.rules[id].defined = true
	p.rules[id].alts = p.alternates(name, false)
	switch {
	case p.peek(0) == '\r':
		p.i++
		if p.peek(0) == '\n' {
			p.i++
		}
	case p.peek(0) == '\n':
		p.i++
	case p.i < len(p.src):
		p.fail("expecting newline or end")
	}
	p.space(true)
}

func (p *parser) alternates(name string, nested bool) [][]sym {
	alts := [][]sym{p.sequence(name, nested)}
	for p.peek(0) == '|' {
		p.i++
		p.space(true)
		alts = append(alts, p.sequence(name, nested))
	}
	return alts
}

func (p *parser) count(n int) {
	p.nsyms += n
	if p.nsyms > maxSymbols {
		p.tooComplex("more than %d symbols", maxSymbols)
	}
	if p.nsyms >= p.next {
		p.next = p.nsyms + ctxCheckEvery
		if p.ctx.Err() != nil {
			panic(parseError{fmt.Errorf("grammar: %w", context.Cause(p.ctx))})
		}
	}
}

func (p *parser) sequence(name string, nested bool) []sym {
	var seq []sym
	last := -1 // start of the last item, for repetitions
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == '"':
			last = len(seq)
			seq = p.literal(seq)
			p.count(len(seq) - last)
			p.space(nested)
		case c == '[':
			cs := p.class()
			last = len(seq)
			seq = append(seq, sym{cs: cs})
			p.count(1)
			p.space(nested)
		case c == '<' || c == '!':
			p.fail("token references are not supported")
		case isWordChar(c):
			last = len(seq)
			seq = append(seq, sym{ref: p.reference()})
			p.count(1)
			p.space(nested)
		case c == '(':
			id := p.group(name)
			last = len(seq)
			seq = append(seq, sym{ref: id})
			p.count(1)
			p.space(nested)
		case c == '.':
			p.i++
			last = len(seq)
			seq = append(seq, sym{cs: &cset{neg: true}})
			p.count(1)
			p.space(nested)
		case c == '*' || c == '+' || c == '?':
			if last < 0 {
				p.fail("expecting an item before %c", c)
			}
			p.i++
			p.space(nested)
			lo, hi := 0, -1 // *
			if c == '+' {
				lo = 1
			} else if c == '?' {
				hi = 1
			}
			seq = p.repeat(name, seq, last, lo, hi)
		case c == '{':
			if last < 0 {
				p.fail("expecting an item before {")
			}
			lo, hi := p.braces(nested)
			seq = p.repeat(name, seq, last, lo, hi)
		default:
			return seq
		}
	}
	return seq
}

// literal reads a "string" at p.i, appending one symbol a character.
func (p *parser) literal(seq []sym) []sym {
	p.i++
	for p.peek(0) != '"' {
		if p.i >= len(p.src) {
			p.fail("unexpected end of input in a string")
		}
		r := p.char()
		seq = append(seq, sym{cs: &cset{r: []rng{{r, r}}}})
	}
	p.i++
	return seq
}

// class reads a character class [...] at p.i.
func (p *parser) class() *cset {
	p.i++
	cs := &cset{}
	if p.peek(0) == '^' {
		p.i++
		cs.neg = true
	}
	for p.peek(0) != ']' {
		if p.i >= len(p.src) {
			p.fail("unexpected end of input in a character class")
		}
		lo := p.char()
		hi := lo
		if p.peek(0) == '-' && p.peek(1) != ']' && p.i+1 < len(p.src) {
			p.i++
			hi = p.char()
		}
		if hi < lo {
			p.fail("range end %U before start %U", hi, lo)
		}
		cs.r = append(cs.r, rng{lo, hi})
	}
	p.i++
	return cs
}

// reference reads a rule name at p.i and returns its id, declaring it
// (used here) when it is new.
func (p *parser) reference() int {
	at := p.i
	name := p.name()
	if _, ok := p.ids[name]; !ok {
		p.symbol(name)
		p.rules[p.ids[name]].used = at
	}
	return p.ids[name]
}

// group reads a parenthesized group at p.i into a new rule and returns
// its id.
func (p *parser) group(name string) int {
	p.depth++
	if p.depth > maxNesting {
		p.tooComplex("parentheses nested deeper than %d", maxNesting)
	}
	p.i++
	p.space(true)
	id := p.newRule(name)
	p.rules[id].alts = p.alternates(name, true)
	if p.peek(0) != ')' {
		p.fail("expecting )")
	}
	p.i++
	p.depth--
	return id
}

// braces reads a repetition {lo}, {lo,} or {lo,hi} at p.i; hi -1 is no
// maximum.
func (p *parser) braces(nested bool) (lo, hi int) {
	p.i++
	p.space(nested)
	lo = p.int()
	p.space(nested)
	hi = -1
	switch p.peek(0) {
	case '}':
		hi = lo
	case ',':
		p.i++
		p.space(nested)
		if c := p.peek(0); c >= '0' && c <= '9' {
			hi = p.int()
			p.space(nested)
		}
		if p.peek(0) != '}' {
			p.fail("expecting }")
		}
	default:
		p.fail("expecting , or }")
	}
	p.i++
	p.space(nested)
	if lo > MaxRepetition {
		p.tooComplex("repetition {%d,...} over %d", lo, MaxRepetition)
	}
	if hi > MaxRepetition {
		hi = -1 // as llama.cpp: a large maximum becomes no maximum
	}
	if hi >= 0 && hi < lo {
		p.fail("repetition maximum %d below minimum %d", hi, lo)
	}
	return lo, hi
}

func (p *parser) int() int {
	start := p.i
	for p.i < len(p.src) && p.src[p.i] >= '0' && p.src[p.i] <= '9' {
		p.i++
	}
	if p.i == start {
		p.fail("expecting an integer")
	}
	n, err := strconv.Atoi(p.src[start:p.i])
	if err != nil || n > 1<<30 {
		p.tooComplex("repetition count %s", p.src[start:p.i])
	}
	return n
}

// repeat rewrites seq[last:] repeated lo..hi times (hi < 0: unbounded) as
// llama.cpp does: S{m,n} is S m times then n-m nested optional rules.
func (p *parser) repeat(name string, seq []sym, last, lo, hi int) []sym {
	if last < 0 || last >= len(seq) {
		p.fail("expecting an item before */+/?/{")
	}
	prev := append([]sym(nil), seq[last:]...)
	nopt := 1
	if hi >= 0 {
		nopt = hi - lo
	}
	p.count(len(prev) * (max(lo, 1) + nopt + 1))
	if lo == 0 {
		seq = seq[:last]
	}
	for i := 1; i < lo; i++ {
		seq = append(seq, prev...)
	}
	lastRec := -1
	for i := 0; i < nopt; i++ {
		id := p.newRule(name)
		alt := append([]sym(nil), prev...)
		if hi < 0 {
			alt = append(alt, sym{ref: id})
		} else if i > 0 {
			alt = append(alt, sym{ref: lastRec})
		}
		p.rules[id].alts = [][]sym{alt, nil}
		lastRec = id
	}
	if nopt > 0 {
		seq = append(seq, sym{ref: lastRec})
	}
	return seq
}

// char reads one character of a literal or class, escapes included.
func (p *parser) char() rune {
	if p.peek(0) == '\\' {
		c := p.peek(1)
		p.i += 2
		switch c {
		case 'x':
			return p.hex(2)
		case 'u':
			return p.hex(4)
		case 'U':
			return p.hex(8)
		case 't':
			return '\t'
		case 'r':
			return '\r'
		case 'n':
			return '\n'
		case '\\', '"', '[', ']', '-', '^':
			return rune(c)
		}
		p.i -= 2
		p.fail("unknown escape \\%c", c)
	}
	r, n := utf8.DecodeRuneInString(p.src[p.i:])
	if r == utf8.RuneError && n <= 1 {
		p.fail("invalid UTF-8")
	}
	p.i += n
	return r
}

func (p *parser) hex(n int) rune {
	if p.i+n > len(p.src) {
		p.fail("expecting %d hex digits", n)
	}
	v, err := strconv.ParseUint(p.src[p.i:p.i+n], 16, 32)
	if err != nil || v > utf8.MaxRune {
		p.fail("expecting %d hex digits of a code point", n)
	}
	p.i += n
	return rune(v)
}
