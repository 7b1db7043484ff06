package grammar

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
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

// cachedMatcher gets src's grammar from c, made by compile on a miss, and
// a matcher of it on v.
func cachedMatcher(t *testing.T, c *Cache, v *Vocab, src string, compile func(string) (*Grammar, error)) (*Grammar, *Matcher) {
	t.Helper()
	g, err := c.Get(src, func() (*Grammar, error) { return compile(src) })
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	return g, m
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
		g, m := cachedMatcher(t, c, v, src, FromRegex)
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

// TestCacheFloodHeap: a flood of large distinct grammars, each used a
// little, leaves the heap (measured after a GC) grown by about the cache's
// byte bound, not by every grammar: Grammar.Bytes counts what a grammar
// really holds (its compiled rules too, not only its automaton).
func TestCacheFloodHeap(t *testing.T) {
	v := smallVocab(t)
	mask := make([]uint64, v.MaskWords())
	const bound = 4 << 20
	c := NewCache(256, bound)
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	base := heap()
	var sum int64
	for i := range 12 {
		var b strings.Builder
		b.WriteString("root ::= ")
		for j := 0; b.Len() < 128<<10; j++ {
			fmt.Fprintf(&b, `"w%dx%d" [a-z]? `, i, j)
		}
		src := b.String()
		g, m := cachedMatcher(t, c, v, src, Compile)
		for _, tok := range []byte(fmt.Sprintf("w%dx0", i)) {
			if err := m.Mask(mask); err != nil {
				t.Fatal(err)
			}
			if err := m.Accept(int32(tok)); err != nil {
				t.Fatal(err)
			}
		}
		sum += g.Bytes()
	}
	grown := heap() - base
	runtime.KeepAlive(c)
	t.Logf("heap grown %d KiB with %d grammars kept of 12 (%d KiB by Bytes in all), bound %d KiB", grown>>10, c.Len(), sum>>10, bound>>10)
	if limit := int64(bound)*3/2 + 2<<20; grown > limit {
		t.Errorf("the heap grew %d KiB across the flood, over %d KiB for a cache bound of %d KiB", grown>>10, limit>>10, bound>>10)
	}
	if sum < 2*bound {
		t.Errorf("the flood is %d bytes by Grammar.Bytes: too small to test a bound of %d (or Bytes undercounts)", sum, bound)
	}
}
