package grammar

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Expr is a GBNF expression, made by the constructors below (Lit, Class,
// Seq, Alt, Opt, Star, Repeat) and by a Builder's rules and schemas, which
// it references by name. The zero Expr is the empty sequence. Its text
// (String) is GBNF, for a grammar's source and for debugging; programs
// compose Exprs, never their text.
type Expr struct {
	s    string
	atom bool // one item: a literal, a class, a rule's name, a group
	alt  bool // alternatives not grouped (alts): grouped inside a sequence
	keep bool // the empty item a sequence keeps (hole)
}

// String is e's GBNF.
func (e Expr) String() string { return e.s }

// Empty reports whether e is the empty sequence.
func (e Expr) Empty() bool { return e.s == "" }

// Lit is the literal s (the empty sequence for an empty s).
func Lit(s string) Expr {
	if s == "" {
		return Expr{}
	}
	return Expr{s: literal(s), atom: true}
}

// Class is the character class [set], set written as GBNF writes it
// between the brackets ("a-z", "^<").
func Class(set string) Expr { return Expr{s: "[" + set + "]", atom: true} }

// Seq is its items in order (empty ones left out).
func Seq(items ...Expr) Expr {
	var out []string
	var last Expr
	for _, it := range items {
		if it.s == "" && !it.keep {
			continue
		}
		last = it
		if it.alt {
			out = append(out, it.group())
		} else {
			out = append(out, it.s)
		}
	}
	if len(out) == 1 {
		return last
	}
	return Expr{s: strings.Join(out, " ")}
}

// Alt is one of its alternatives (grouped when more than one).
func Alt(alts ...Expr) Expr {
	if len(alts) == 1 {
		return alts[0]
	}
	s := make([]string, len(alts))
	for i, a := range alts {
		s[i] = a.s
	}
	return Expr{s: "(" + strings.Join(s, " | ") + ")", atom: true}
}

// alts is one of its alternatives, not grouped: bare at the top of a rule's
// body (llama.cpp's layout), grouped inside a sequence or a repetition.
// Alternatives that are themselves alts are joined flat.
func alts(xs ...Expr) Expr {
	switch len(xs) {
	case 0: // "type": [] — the empty body, as strings.Join of none
		return Expr{}
	case 1:
		return xs[0]
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.s
	}
	j := strings.Join(s, " | ")
	if xs[0].s == "" {
		j = strings.TrimPrefix(j, " ") // "| a": nothing, or a
	}
	return Expr{s: j, alt: true}
}

// hole is the empty sequence, kept in a sequence: llama.cpp's layout
// writes the empty item between its neighbours' spaces ("a  b").
var hole = Expr{keep: true}

// ruleRef is a reference to the rule (or primitive) named name.
func ruleRef(name string) Expr { return Expr{s: name, atom: true} }

// plus is e repeated, at least once.
func plus(e Expr) Expr { return Expr{s: e.group() + "+"} }

// emptyLit is the empty literal "", where a pattern matches nothing.
var emptyLit = Expr{s: `""`, atom: true}

// anyChar is any one character (GBNF's dot).
var anyChar = Expr{s: ".", atom: true}

// paren is e in parentheses, even when it is one item.
func paren(e Expr) Expr { return Expr{s: "(" + e.s + ")", atom: true} }

// looseParen is e in parentheses with a space before the closing one,
// "(e )": llama.cpp's group of an object's optional members.
func looseParen(e Expr) Expr { return Expr{s: "(" + e.s + " )", atom: true} }

// spaced is e in parentheses with spaces inside, "( e )".
func spaced(e Expr) Expr { return Expr{s: "( " + e.s + " )", atom: true} }

// rep is e repeated lo to hi times as llama.cpp writes it: e alone for
// {1}, e{n} for lo = hi, e{lo,} for hi < 0.
func rep(e Expr, lo, hi int) Expr {
	switch {
	case lo == 1 && hi == 1:
		return e
	case lo == hi:
		return Expr{s: e.group() + "{" + strconv.Itoa(lo) + "}"}
	}
	return Repeat(e, lo, hi)
}

// group is e as one item.
func (e Expr) group() string {
	if e.atom {
		return e.s
	}
	return "(" + e.s + ")"
}

// Opt is e or nothing.
func Opt(e Expr) Expr {
	if e.s == "" {
		return e
	}
	return Expr{s: e.group() + "?"}
}

// Star is e repeated, any number of times.
func Star(e Expr) Expr {
	if e.s == "" {
		return e
	}
	return Expr{s: e.group() + "*"}
}

// List is one or more items separated by sep.
func List(item, sep Expr) Expr { return Seq(item, Star(Seq(sep, item))) }

// TextWithout is any text that does not hold the two bytes stop.
func TextWithout(stop string) Expr {
	return Star(Alt(Class("^"+classChar(rune(stop[0]))), Seq(Lit(stop[:1]), Class("^"+classChar(rune(stop[1]))))))
}

// Repeat is e repeated lo to hi times (hi < 0: no bound).
func Repeat(e Expr, lo, hi int) Expr {
	if hi < 0 {
		return Expr{s: e.group() + "{" + strconv.Itoa(lo) + ",}"}
	}
	return Expr{s: e.group() + "{" + strconv.Itoa(lo) + "," + strconv.Itoa(hi) + "}"}
}

// A Builder holds the rules of one grammar being built: rules defined by
// name (Rule) and the rules of JSON Schemas (Schema), all in one set, each
// under a name of its own: a name already taken by another body gets a
// suffix, and the caller references the rule by the Expr it gets back, so
// that the rules of many schemas live in one grammar without renaming.
// The primitive rules of JSON values (string, number, ...) are shared.
// A Builder belongs to one goroutine.
type Builder struct {
	conv  *Converter
	rules map[string]string
	order []string
	gemma *gemmaValues // Gemma 4's value rules, once written
}

// NewBuilder returns an empty Builder whose schemas are converted under
// conv's budget and context (nil: a Converter of its own, unbounded in
// time).
func NewBuilder(conv *Converter) *Builder {
	if conv == nil {
		conv = NewConverter(context.Background())
	}
	return &Builder{conv: conv, rules: map[string]string{}}
}

// Rule defines name ::= body under a unique name (the name, or the name
// with a suffix; a rule of the same name and body is reused) and returns a
// reference to it.
func (b *Builder) Rule(name string, body Expr) Expr { return Expr{s: b.add(name, body.s), atom: true} }

// Declare reserves a unique name for a rule that Define writes later, so
// that rules may reference each other (recursion).
func (b *Builder) Declare(name string) Expr { return Expr{s: b.declare(name), atom: true} }

// Define writes the body of a rule Declare reserved.
func (b *Builder) Define(rule, body Expr) {
	b.rules[rule.s] = body.s
	b.order = append(b.order, rule.s)
}

// declare reserves name, or the name with a suffix when it is taken.
func (b *Builder) declare(name string) string {
	base := invalidRuleChars.ReplaceAllString(name, "-")
	name = base
	for i := 1; b.taken(name); i++ {
		name = base + strconv.Itoa(i)
	}
	b.rules[name] = "" // reserved: recursive references end here
	return name
}

// taken reports whether a rule is named name, or a primitive could be.
func (b *Builder) taken(name string) bool {
	_, ok := b.rules[name]
	return ok || !primitives[name].body.Empty()
}

// add defines name ::= body (Rule's text), under a unique name.
func (b *Builder) add(name, body string) string {
	name = invalidRuleChars.ReplaceAllString(name, "-")
	key := name
	for i := 1; ; i++ {
		old, ok := b.rules[key]
		if !ok && !b.reserved(key, body) {
			break
		}
		if ok && old == body {
			return key
		}
		key = name + strconv.Itoa(i)
	}
	b.rules[key] = body
	b.order = append(b.order, key)
	return key
}

// reserved reports whether key is a primitive's name that body is not the
// body of: the primitives reference each other by name.
func (b *Builder) reserved(key, body string) bool {
	p, ok := primitives[key]
	return ok && p.body.s != body
}

// Schema converts a JSON Schema into rules (the schema's own named after
// name) and returns the expression of a value it accepts. An unsupported
// schema is an *UnsupportedError; past the converter's budget the error
// wraps ErrTooComplex.
func (b *Builder) Schema(name string, schema []byte) (Expr, error) {
	return b.conv.schema(b, name, schema)
}

// GBNF returns the grammar's source: its rules, in the order they were
// defined, then root ::= root.
func (b *Builder) GBNF(root Expr) (string, error) {
	if _, ok := b.rules["root"]; ok {
		return "", fmt.Errorf("grammar: the rule name root is taken")
	}
	var s strings.Builder
	b.write(&s)
	fmt.Fprintf(&s, "root ::= %s\n", root.s)
	return s.String(), nil
}

func (b *Builder) write(s *strings.Builder) {
	for _, n := range b.order {
		fmt.Fprintf(s, "%s ::= %s\n", n, b.rules[n])
	}
}
