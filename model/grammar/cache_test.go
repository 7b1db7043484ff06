package grammar

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCache(t *testing.T) {
	c := NewCache(2, 0)
	var compiles atomic.Int32
	get := func(src string) (*Grammar, error) {
		return c.Get("gbnf:"+src, func() (*Grammar, error) {
			compiles.Add(1)
			return Compile(src)
		})
	}
	var wg sync.WaitGroup
	gs := make([]*Grammar, 8)
	for i := range gs {
		wg.Go(func() { gs[i], _ = get(`root ::= "a"`) })
	}
	wg.Wait()
	if compiles.Load() != 1 || gs[0] == nil || gs[7] != gs[0] {
		t.Fatalf("8 concurrent gets: %d compiles, want 1 shared grammar", compiles.Load())
	}
	if _, err := get(`root ::= (`); err == nil {
		t.Fatal("a bad grammar compiled")
	}
	if c.Len() != 1 {
		t.Fatalf("an error was kept: %d entries", c.Len())
	}
	get(`root ::= "b"`)
	get(`root ::= "c"`) // evicts "a", the least recently used
	compiles.Store(0)
	get(`root ::= "c"`)
	get(`root ::= "a"`)
	if compiles.Load() != 1 || c.Len() != 2 {
		t.Fatalf("after eviction: %d compiles, %d entries; want 1 and 2", compiles.Load(), c.Len())
	}
	_, err := c.Get("x", func() (*Grammar, error) { return nil, errors.New("boom") })
	if err == nil || err.Error() != "boom" {
		t.Fatalf("error %v, want boom", err)
	}
}

// TestConcurrentMatchers runs matchers of one grammar on several goroutines
// (run with -race): they share its automaton and mask cache.
func TestConcurrentMatchers(t *testing.T) {
	v := smallVocab(t)
	g, err := Compile(jsonGBNF)
	if err != nil {
		t.Fatal(err)
	}
	g.m.limitStates = 150 // resets happen while others run
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			mask := make([]uint64, v.MaskWords())
			for range 20 {
				generate(t, g, v, r, 200, mask)
			}
		})
	}
	wg.Wait()
	if g.m.gen == 0 {
		t.Fatal("no automaton reset happened; the test needs some")
	}
}

// TestCachePanic: a compile that panics is an error for its caller, is not
// kept, and a later Get of the key compiles again instead of waiting.
func TestCachePanic(t *testing.T) {
	c := NewCache(4, 0)
	if _, err := c.Get("k", func() (*Grammar, error) { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err %v, want the panic", err)
	}
	g, err := c.Get("k", func() (*Grammar, error) { return FromRegex("a") })
	if err != nil || g == nil {
		t.Fatalf("after the panic: %v", err)
	}
	if got, ok := c.Peek("k"); !ok || got != g {
		t.Errorf("Peek: %v %v", got, ok)
	}
	if _, ok := c.Peek("missing"); ok {
		t.Error("Peek found a key never compiled")
	}
}

// TestCacheBytes: grammars whose automata and masks grow past the cache's
// memory bound are dropped, least recently used first, never the one just
// used; Bytes grows as a matcher works.
func TestCacheBytes(t *testing.T) {
	v := testVocab(t)
	c := NewCache(10, 1)
	mask := make([]uint64, v.MaskWords())
	var gs []*Grammar
	for _, src := range []string{"[a-z]+", "[0-9]+", "(ab)+"} {
		g, err := c.Get(src, func() (*Grammar, error) { return FromRegex(src) })
		if err != nil {
			t.Fatal(err)
		}
		m, err := g.NewMatcher(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Mask(mask); err != nil {
			t.Fatal(err)
		}
		if g.Bytes() < 8*int64(len(mask)) {
			t.Errorf("%s: %d bytes after a mask of %d words", src, g.Bytes(), len(mask))
		}
		gs = append(gs, g)
	}
	// Each Get trimmed the ones before it (1 byte allowed): only the last is kept.
	if c.Len() != 1 {
		t.Errorf("%d grammars kept, want 1", c.Len())
	}
	if g, ok := c.Peek("(ab)+"); !ok || g != gs[2] {
		t.Error("the grammar used last was dropped")
	}
	if _, ok := c.Peek("[a-z]+"); ok {
		t.Error("a grammar past the bound was kept")
	}
	big := NewCache(10, 1<<40)
	for _, src := range []string{"[a-z]+", "[0-9]+"} {
		big.Get(src, func() (*Grammar, error) { return FromRegex(src) })
	}
	if big.Len() != 2 {
		t.Errorf("within the bound: %d grammars kept, want 2", big.Len())
	}
}
