package grammar

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"unicode/utf8"
)

// Element kinds of the lowered grammar.
const (
	eEnd  = iota // end of an alternative
	eRef         // rule reference: arg is the rule
	eByte        // one byte in a class: arg indexes Grammar.classes
)

type elem struct {
	kind uint8
	arg  int32
}

// byteClass is a set of bytes, one bit each.
type byteClass [4]uint64

func (c *byteClass) has(b byte) bool { return c[b>>6]&(1<<(b&63)) != 0 }
func (c *byteClass) add(lo, hi byte) {
	for b := int(lo); b <= int(hi); b++ {
		c[b>>6] |= 1 << (b & 63)
	}
}

// Grammar is a compiled grammar over bytes. It is immutable but for the
// automaton its matchers share (see doc.go).
type Grammar struct {
	elems   []elem
	rules   [][]int32 // rule -> offsets in elems of its alternatives
	classes []byteClass
	root    int32
	names   []string
	m       *machine
}

// Compile compiles GBNF source (llama.cpp's grammar format, without token
// references). The start rule is root.
func Compile(src string) (*Grammar, error) { return CompileContext(context.Background(), src) }

// CompileContext is Compile stopping with the context's error once ctx
// ends.
func CompileContext(ctx context.Context, src string) (*Grammar, error) {
	g, _, err := compile(ctx, src)
	return g, err
}

// compile is CompileContext, with the lowering's work for the tests.
func compile(ctx context.Context, src string) (*Grammar, *lowerer, error) {
	rules, root, err := parse(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	l := &lowerer{g: &Grammar{root: int32(root)}, classIdx: map[byteClass]int32{}, csRule: map[string]int32{},
		lowered: map[*cset]*loweredClass{}, byRanges: map[string]*loweredClass{}}
	l.g.rules = make([][]int32, len(rules))
	l.g.names = make([]string, len(rules))
	for i, r := range rules {
		l.g.names[i] = r.name
	}
	for i, r := range rules {
		l.g.rules[i] = l.alts(r.alts)
	}
	for i := 0; i < len(l.pending); i++ { // class rules, after the rules that use them
		var starts []int32
		for _, seq := range l.pending[i].seqs {
			starts = append(starts, int32(len(l.g.elems)))
			for _, c := range seq {
				l.g.elems = append(l.g.elems, l.byteElem(c))
			}
			l.g.elems = append(l.g.elems, elem{kind: eEnd})
		}
		l.g.rules[l.pending[i].id] = starts
	}
	if len(l.g.elems) > 4*maxSymbols {
		return nil, nil, fmt.Errorf("grammar: %d elements after lowering: %w", len(l.g.elems), ErrTooComplex)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("grammar: %w", context.Cause(ctx))
	}
	if !l.g.pruneUnproductive() {
		return nil, nil, fmt.Errorf("grammar: the root rule matches no string")
	}
	if name, ok := l.g.leftRecursive(); ok {
		return nil, nil, fmt.Errorf("grammar: rule %q is left-recursive", name)
	}
	l.g.m = newMachine(l.g)
	return l.g, l, nil
}

type lowerer struct {
	g        *Grammar
	classIdx map[byteClass]int32
	csRule   map[string]int32
	pending  []classRule
	// Each distinct character class is lowered once: a class repeated
	// ({n} copies the same *cset) by its pointer, one written again by its
	// ranges.
	lowered  map[*cset]*loweredClass
	byRanges map[string]*loweredClass
	lowers   int // classes lowered to UTF-8 sequences (distinct ones)
}

// classRule is a rule for a character class, emitted after the others (an
// alternative's elements must stay contiguous).
type classRule struct {
	id   int32
	seqs [][]byteClass
}

func (l *lowerer) alts(alts [][]sym) []int32 {
	var starts []int32
	for _, alt := range alts {
		starts = append(starts, int32(len(l.g.elems)))
		for _, s := range alt {
			if s.cs == nil {
				l.g.elems = append(l.g.elems, elem{eRef, int32(s.ref)})
				continue
			}
			l.class(s.cs)
		}
		l.g.elems = append(l.g.elems, elem{kind: eEnd})
	}
	return starts
}

func (l *lowerer) byteElem(c byteClass) elem {
	id, ok := l.classIdx[c]
	if !ok {
		id = int32(len(l.g.classes))
		l.g.classes = append(l.g.classes, c)
		l.classIdx[c] = id
	}
	return elem{eByte, id}
}

// class appends the elements matching one character of cs: its UTF-8 byte
// sequences inline when there is one, else a reference to a rule with one
// alternative per sequence shape.
func (l *lowerer) class(cs *cset) {
	lc := l.lower(cs)
	seqs := lc.seqs
	if len(seqs) == 1 {
		for _, c := range seqs[0] {
			l.g.elems = append(l.g.elems, l.byteElem(c))
		}
		return
	}
	key := lc.key
	id, ok := l.csRule[key]
	if !ok {
		id = int32(len(l.g.rules))
		l.csRule[key] = id
		l.g.rules = append(l.g.rules, nil)
		l.g.names = append(l.g.names, fmt.Sprintf("class_%d", id))
		// An empty class (no sequence) is a rule with no alternative: it matches nothing.
		l.pending = append(l.pending, classRule{id, seqs})
	}
	l.g.elems = append(l.g.elems, elem{eRef, id})
}

// loweredClass is a character class as UTF-8 byte-class sequences, and
// their key (classKey).
type loweredClass struct {
	seqs [][]byteClass
	key  string
}

// lower returns cs lowered, once per distinct class.
func (l *lowerer) lower(cs *cset) *loweredClass {
	if lc, ok := l.lowered[cs]; ok {
		return lc
	}
	ranges := normalize(cs)
	rk := rangesKey(ranges)
	lc, ok := l.byRanges[rk]
	if !ok {
		seqs := utf8Seqs(ranges)
		lc = &loweredClass{seqs: seqs, key: classKey(seqs)}
		l.byRanges[rk] = lc
		l.lowers++
	}
	l.lowered[cs] = lc
	return lc
}

// rangesKey is a map key of normalized ranges.
func rangesKey(r []rng) string {
	b := make([]byte, 0, 8*len(r))
	for _, x := range r {
		b = binary.LittleEndian.AppendUint32(b, uint32(x.lo))
		b = binary.LittleEndian.AppendUint32(b, uint32(x.hi))
	}
	return string(b)
}

// classKey is a map key of byte-class sequences.
func classKey(seqs [][]byteClass) string {
	var b []byte
	for _, seq := range seqs {
		b = append(b, byte(len(seq)))
		for _, c := range seq {
			for _, w := range c {
				b = binary.LittleEndian.AppendUint64(b, w)
			}
		}
	}
	return string(b)
}

// normalize returns the sorted, merged, positive ranges of cs, surrogates
// excluded.
func normalize(cs *cset) []rng {
	r := append([]rng(nil), cs.r...)
	sort.Slice(r, func(i, j int) bool { return r[i].lo < r[j].lo })
	var out []rng
	for _, x := range r {
		if n := len(out); n > 0 && x.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	if cs.neg {
		var comp []rng
		next := rune(0)
		for _, x := range out {
			if x.lo > next {
				comp = append(comp, rng{next, x.lo - 1})
			}
			next = x.hi + 1
		}
		if next <= utf8.MaxRune {
			comp = append(comp, rng{next, utf8.MaxRune})
		}
		out = comp
	}
	var noSur []rng
	for _, x := range out {
		if x.hi < 0xD800 || x.lo > 0xDFFF {
			noSur = append(noSur, x)
			continue
		}
		if x.lo < 0xD800 {
			noSur = append(noSur, rng{x.lo, 0xD7FF})
		}
		if x.hi > 0xDFFF {
			noSur = append(noSur, rng{0xE000, x.hi})
		}
	}
	return noSur
}

// utf8Seqs turns code point ranges into UTF-8 byte-class sequences; those
// that differ only in their first byte share one sequence.
func utf8Seqs(ranges []rng) [][]byteClass {
	type shape struct {
		first byteClass
		rest  [][2]byte
	}
	var shapes []*shape
	byRest := map[string]*shape{}
	emit := func(seq [][2]byte) {
		key := fmt.Sprint(seq[1:])
		s, ok := byRest[key]
		if !ok {
			s = &shape{rest: seq[1:]}
			byRest[key] = s
			shapes = append(shapes, s)
		}
		s.first.add(seq[0][0], seq[0][1])
	}
	for _, r := range ranges {
		splitUTF8(r.lo, r.hi, emit)
	}
	out := make([][]byteClass, 0, len(shapes))
	for _, s := range shapes {
		seq := []byteClass{s.first}
		for _, b := range s.rest {
			var c byteClass
			c.add(b[0], b[1])
			seq = append(seq, c)
		}
		out = append(out, seq)
	}
	return out
}

// splitUTF8 emits byte-range sequences whose concatenations are exactly the
// UTF-8 encodings of lo..hi (no surrogates inside), as in Russ Cox's
// utf8-ranges.
func splitUTF8(lo, hi rune, emit func([][2]byte)) {
	for _, m := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= m && m < hi {
			splitUTF8(lo, m, emit)
			splitUTF8(m+1, hi, emit)
			return
		}
	}
	if hi <= 0x7F {
		emit([][2]byte{{byte(lo), byte(hi)}})
		return
	}
	for i := 1; i < utf8.UTFMax; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				splitUTF8(lo, lo|m, emit)
				splitUTF8((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				splitUTF8(lo, (hi&^m)-1, emit)
				splitUTF8(hi&^m, hi, emit)
				return
			}
		}
	}
	var a, b [utf8.UTFMax]byte
	n := utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([][2]byte, n)
	for i := range n {
		seq[i] = [2]byte{a[i], b[i]}
	}
	emit(seq)
}

// pruneUnproductive drops the alternatives that can match no string (an
// empty class, a rule with no way out), so that every prefix the matcher
// accepts can be completed. It reports whether root still matches something.
func (g *Grammar) pruneUnproductive() bool {
	productive := make([]bool, len(g.rules))
	ok := func(a int32) bool {
		for pos := a; g.elems[pos].kind != eEnd; pos++ {
			if e := g.elems[pos]; e.kind == eRef && !productive[e.arg] {
				return false
			}
		}
		return true
	}
	for changed := true; changed; {
		changed = false
		for r, alts := range g.rules {
			if !productive[r] && slices.ContainsFunc(alts, ok) {
				productive[r], changed = true, true
			}
		}
	}
	for r, alts := range g.rules {
		g.rules[r] = slices.DeleteFunc(alts, func(a int32) bool { return !ok(a) })
	}
	return productive[g.root]
}

// leftRecursive reports a rule that can reach itself without consuming a
// byte through a reference that is not the last of its alternative: that
// would make the matcher's stacks grow without end. Cycles of last
// references only (( [x]* )*, a nullable item repeated) come back to the
// same stack and are cut by the matcher, as llama.cpp's seen set does.
func (g *Grammar) leftRecursive() (string, bool) {
	nullable := make([]bool, len(g.rules))
	for changed := true; changed; {
		changed = false
		for r, alts := range g.rules {
			if nullable[r] {
				continue
			}
			for _, a := range alts {
				if g.nullableFrom(a, nullable) {
					nullable[r], changed = true, true
					break
				}
			}
		}
	}
	// Tarjan's strongly connected components, iteratively, over the
	// left edges; a non-tail edge inside a component lies on a growing cycle.
	n := len(g.rules)
	index, low := make([]int32, n), make([]int32, n)
	comp := make([]int32, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	edges := make([][]leftEdge, n)
	var stack []int32
	onStack := make([]bool, n)
	next, ncomp := int32(0), int32(0)
	type frame struct {
		r int32
		i int
	}
	for start := range n {
		if index[start] >= 0 {
			continue
		}
		call := []frame{{int32(start), 0}}
		edges[start] = g.leftEdges(int32(start), nullable)
		index[start], low[start] = next, next
		next++
		stack = append(stack, int32(start))
		onStack[start] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.i < len(edges[f.r]) {
				w := edges[f.r][f.i].to
				f.i++
				if index[w] < 0 {
					edges[w] = g.leftEdges(w, nullable)
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] {
					low[f.r] = min(low[f.r], index[w])
				}
				continue
			}
			r := f.r
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].r
				low[p] = min(low[p], low[r])
			}
			if low[r] == index[r] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = ncomp
					if w == r {
						break
					}
				}
				ncomp++
			}
		}
	}
	for r := range n {
		for _, e := range edges[r] {
			if comp[e.to] == comp[r] && !e.tail {
				return g.names[r], true
			}
		}
	}
	return "", false
}

// leftEdge is a rule entered before any byte is consumed; tail when the
// reference ends its alternative (entering it does not grow the stack).
type leftEdge struct {
	to   int32
	tail bool
}

func (g *Grammar) nullableFrom(pos int32, nullable []bool) bool {
	for ; g.elems[pos].kind != eEnd; pos++ {
		if e := g.elems[pos]; e.kind == eByte || !nullable[e.arg] {
			return false
		}
	}
	return true
}

// leftEdges lists the rules r may enter before consuming a byte.
func (g *Grammar) leftEdges(r int32, nullable []bool) []leftEdge {
	var out []leftEdge
	for _, a := range g.rules[r] {
		for pos := a; g.elems[pos].kind == eRef; pos++ {
			out = append(out, leftEdge{g.elems[pos].arg, g.elems[pos+1].kind == eEnd})
			if !nullable[g.elems[pos].arg] {
				break
			}
		}
	}
	return out
}
