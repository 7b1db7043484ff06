package grammar

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Bounds of the automaton a grammar grows while it is used.
const (
	maxStacks = 4096    // stacks in one state
	maxNodes  = 1 << 20 // interned stack nodes per grammar (~50 B each with the index)
	maxStates = 1 << 14 // interned stack sets per grammar (1 KiB of transitions each)
	maxDepth  = 1 << 16 // stack depth
	maxWork   = 1 << 21 // stacks expanded or stepped in one Accept or Mask
	maskBytes = 64 << 20
	// maxAutomatonBytes bounds the automaton's memory (nodes, closures,
	// states; masks apart, under maskBytes): past it the automaton is
	// reset, as past the other bounds.
	maxAutomatonBytes = 192 << 20
)

// A stack is a node: its top position and the node below (0 is the empty
// stack, which means the grammar may end here). Nodes are interned, so equal
// stacks are equal ids.
type node struct {
	pos    int32
	parent int32
	depth  int32
}

// A state is a set of stacks whose tops are all byte classes (or empty).
type state struct {
	stacks []int32     // sorted node ids
	next   *[256]int32 // lazily filled transitions: -1 unknown
	accept bool        // holds the empty stack
	live   bool        // holds a non-empty stack
}

const (
	dead    = 0 // the empty state: nothing matches
	unknown = -1
)

type machine struct {
	mu       sync.Mutex
	g        *Grammar
	nodes    []node
	nodeIdx  map[[2]int32]int32
	closures map[int32][]int32
	states   []state
	stateIdx map[string]int32
	start    int32
	err      error  // a limit reached since the last reset
	gen      uint64 // counts resets: state ids of an older generation are void

	limitNodes, limitStates int // maxNodes, maxStates (smaller in tests)
	work                    int // spent in the current operation, up to maxWork
	cuts                    int // cycles cut in closures so far

	masks     map[maskKey][]uint64 // computed masks, by vocabulary and state
	maskSize  int                  // their bytes, up to maskBytes
	bytes     int                  // the automaton's bytes (see the *Bytes constants), up to maxAutomatonBytes
	static    int                  // the compiled grammar's bytes (Grammar.staticBytes)
	size      atomic.Int64         // static + bytes + maskSize (read without the lock)
	scratch   []int32
	inClosure map[int32]bool
}

func newMachine(g *Grammar) *machine {
	m := &machine{g: g, limitNodes: maxNodes, limitStates: maxStates, static: g.staticBytes()}
	m.reset()
	m.gen = 0
	m.measure()
	return m
}

// reset forgets the automaton (after a limit was reached): matchers replay
// their input into the next generation.
func (m *machine) reset() {
	m.nodes = []node{{pos: -1}}
	m.nodeIdx = map[[2]int32]int32{}
	m.closures = map[int32][]int32{}
	m.states = []state{{}} // dead
	m.stateIdx = map[string]int32{"": dead}
	m.masks, m.maskSize = map[maskKey][]uint64{}, 0
	m.bytes = 0
	m.inClosure = map[int32]bool{}
	m.start = -1
	m.err = nil
	m.gen++
}

// Sizes of the automaton's parts, for Grammar.Bytes: Go's slices and maps
// hold up to about twice what they use, which these include.
const (
	nodeBytes      = 64   // a node and its index entry
	closureBytes   = 96   // a memoized closure's entry, besides 8 bytes a stack
	stateBytes     = 160  // a state and its index entry, besides 16 bytes a stack
	nextBytes      = 1024 // a state's transitions, once it has any
	maskEntryBytes = 96   // a cached mask's entry, besides its words
)

// charge adds n bytes to the automaton and fails past maxAutomatonBytes.
// The caller holds m.mu.
func (m *machine) charge(n int) {
	m.bytes += n
	if m.bytes > maxAutomatonBytes {
		m.fail("automaton past %d bytes", maxAutomatonBytes)
	}
}

// measure records the grammar's size. The caller holds m.mu.
func (m *machine) measure() {
	m.size.Store(int64(m.static + m.bytes + m.maskSize))
}

// Bytes is the memory the grammar holds now: its compiled rules, and its
// automaton and mask cache, which grow as matchers use it, up to the
// package's bounds. It is safe to call at any time, and never waits.
func (g *Grammar) Bytes() int64 { return g.m.size.Load() }

// staticBytes is the memory of the compiled grammar: its elements, rules,
// classes and rule names.
func (g *Grammar) staticBytes() int {
	n := 256 + 8*cap(g.elems) + 32*cap(g.classes) + 24*cap(g.rules) + 16*cap(g.names)
	for _, r := range g.rules {
		n += 16 + 4*cap(r) // an allocation's rounding and header
	}
	for _, name := range g.names {
		n += 8 + len(name)
	}
	return n
}

// startState returns the initial state, computing it once.
func (m *machine) startState() (int32, error) {
	if m.start < 0 {
		var stacks []int32
		for _, a := range m.g.rules[m.g.root] {
			if m.g.elems[a].kind == eEnd {
				stacks = append(stacks, 0)
				continue
			}
			stacks = append(stacks, m.closure(m.push(a, 0))...)
		}
		if m.err != nil {
			return dead, m.err
		}
		m.start = m.intern(stacks)
	}
	return m.start, m.err
}

func (m *machine) push(pos, parent int32) int32 {
	key := [2]int32{pos, parent}
	if id, ok := m.nodeIdx[key]; ok {
		return id
	}
	if len(m.nodes) >= m.limitNodes {
		m.fail("more than %d stack nodes", m.limitNodes)
		return 0
	}
	d := m.nodes[parent].depth + 1
	if d > maxDepth {
		m.fail("stack deeper than %d", maxDepth)
		return 0
	}
	id := int32(len(m.nodes))
	m.nodes = append(m.nodes, node{pos, parent, d})
	m.nodeIdx[key] = id
	m.charge(nodeBytes)
	return id
}

func (m *machine) fail(format string, args ...any) {
	if m.err == nil {
		m.err = fmt.Errorf("grammar: %s: %w", fmt.Sprintf(format, args...), ErrTooComplex)
	}
}

// spend counts work and reports (after failing) when the budget is spent.
func (m *machine) spend(n int) bool {
	m.work += n
	if m.work > maxWork {
		m.fail("more than %d steps of work for one token", maxWork)
		return true
	}
	return false
}

// rest is the stack after the element at pos (on parent) is done.
func (m *machine) rest(pos, parent int32) int32 {
	if m.g.elems[pos+1].kind == eEnd {
		return parent
	}
	return m.push(pos+1, parent)
}

// closure expands stack n until every stack's top is a byte class (or the
// stack is empty), as llama_grammar_advance_stack. Memoized per node.
func (m *machine) closure(n int32) []int32 {
	if n == 0 {
		return []int32{0}
	}
	nd := m.nodes[n]
	if m.g.elems[nd.pos].kind == eByte {
		return []int32{n}
	}
	if c, ok := m.closures[n]; ok {
		return c
	}
	if m.inClosure[n] {
		m.cuts++ // a cycle back to n: its stacks come from n's own expansion
		return nil
	}
	if m.err != nil || m.spend(1) {
		return nil
	}
	m.inClosure[n] = true
	cuts := m.cuts
	var out []int32
	rest := m.rest(nd.pos, nd.parent)
	for _, a := range m.g.rules[m.g.elems[nd.pos].arg] {
		var sub []int32
		if m.g.elems[a].kind == eEnd {
			sub = m.closure(rest)
		} else {
			sub = m.closure(m.push(a, rest))
		}
		if m.spend(len(sub)) {
			break
		}
		out = append(out, sub...)
		if len(out) > maxStacks {
			out = slices.Compact(slices.Sorted(slices.Values(out)))
			if len(out) > maxStacks {
				m.fail("more than %d stacks", maxStacks)
				break
			}
		}
	}
	delete(m.inClosure, n)
	slices.Sort(out)
	out = slices.Compact(out)
	if m.err == nil && m.cuts == cuts { // a closure cut short by a cycle is right only for its root
		m.closures[n] = out
		m.charge(closureBytes + 8*len(out))
	}
	return out
}

// intern returns the state of a set of stacks.
func (m *machine) intern(stacks []int32) int32 {
	slices.Sort(stacks)
	stacks = slices.Compact(stacks)
	if len(stacks) > maxStacks {
		m.fail("more than %d stacks", maxStacks)
		return dead
	}
	key := make([]byte, 4*len(stacks))
	for i, s := range stacks {
		binary.LittleEndian.PutUint32(key[4*i:], uint32(s))
	}
	if id, ok := m.stateIdx[string(key)]; ok {
		return id
	}
	if len(m.states) >= m.limitStates {
		m.fail("more than %d states", m.limitStates)
		return dead
	}
	st := state{stacks: slices.Clone(stacks)}
	for _, s := range stacks {
		if s == 0 {
			st.accept = true
		} else {
			st.live = true
		}
	}
	id := int32(len(m.states))
	m.states = append(m.states, st)
	m.stateIdx[string(key)] = id
	m.charge(stateBytes + 16*len(stacks))
	return id
}

// step is the state after byte b from state s (dead when none matches).
func (m *machine) step(s int32, b byte) int32 {
	st := &m.states[s]
	if st.next != nil {
		if t := st.next[b]; t != unknown {
			return t
		}
	} else {
		st.next = new([256]int32)
		for i := range st.next {
			st.next[i] = unknown
		}
		m.charge(nextBytes)
	}
	if m.spend(len(st.stacks)) {
		return dead
	}
	out := m.scratch[:0]
	for _, n := range st.stacks {
		if n == 0 {
			continue
		}
		nd := m.nodes[n]
		if m.g.classes[m.g.elems[nd.pos].arg].has(b) {
			sub := m.closure(m.rest(nd.pos, nd.parent))
			if m.spend(len(sub)) {
				break
			}
			out = append(out, sub...)
		}
	}
	t := int32(dead)
	if len(out) > 0 && m.err == nil {
		t = m.intern(out)
	}
	m.scratch = out[:0]
	if m.err != nil {
		return dead // not memoized: the error is sticky instead
	}
	m.states[s].next[b] = t
	return t
}
