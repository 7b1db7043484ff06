package grammar

import (
	"container/list"
	"fmt"
	"sync"
)

// Cache keeps compiled grammars by key (a source's kind and text), least
// recently used out first: at most size of them, and, as Get and Peek
// find, at most maxBytes of grammars and keys (Grammar.Bytes: compiled
// rules, automata and masks; the automata grow as the grammars are
// used). Concurrent Gets of one key compile once; an error is not kept. It
// is safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	entries  map[string]*list.Element
	lru      *list.List // of *cacheEntry, most recent first
}

type cacheEntry struct {
	key  string
	done chan struct{} // closed when g and err are set
	g    *Grammar
	err  error
}

// NewCache returns a cache of at most size grammars (at least 1) and
// maxBytes of their memory (0: no bound but size).
func NewCache(size int, maxBytes int64) *Cache {
	return &Cache{max: max(size, 1), maxBytes: maxBytes, entries: map[string]*list.Element{}, lru: list.New()}
}

// trim drops the least recently used grammars, but the most recent, while
// their memory is over maxBytes. The caller holds c.mu.
func (c *Cache) trim() {
	if c.maxBytes <= 0 {
		return
	}
	var total int64
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*cacheEntry); e.isDone() {
			total += e.bytes()
		}
	}
	for el := c.lru.Back(); total > c.maxBytes && el != nil && el != c.lru.Front(); {
		prev := el.Prev()
		if e := el.Value.(*cacheEntry); e.isDone() {
			total -= e.bytes()
			c.lru.Remove(el)
			delete(c.entries, e.key)
		}
		el = prev
	}
}

// bytes is the memory a finished entry holds: its grammar (Grammar.Bytes:
// the compiled rules, automaton and masks) and its key (the source).
func (e *cacheEntry) bytes() int64 {
	n := int64(len(e.key)) + 128
	if e.g != nil {
		n += e.g.Bytes()
	}
	return n
}

func (e *cacheEntry) isDone() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// Get returns the grammar cached under key, or compiles it with compile.
func (c *Cache) Get(key string, compile func() (*Grammar, error)) (*Grammar, error) {
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		c.mu.Unlock()
		<-e.done
		return e.g, e.err
	}
	e := &cacheEntry{key: key, done: make(chan struct{})}
	c.entries[key] = c.lru.PushFront(e)
	c.trim()
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*cacheEntry).key)
	}
	c.mu.Unlock()

	func() {
		defer func() { // a compile that panics is an error, and never leaves its waiters hanging
			if p := recover(); p != nil {
				e.g, e.err = nil, fmt.Errorf("grammar: the compiler failed: %v", p)
			}
		}()
		e.g, e.err = compile()
	}()
	close(e.done)
	if e.err != nil {
		c.mu.Lock()
		if el, ok := c.entries[key]; ok && el.Value == e {
			c.lru.Remove(el)
			delete(c.entries, key)
		}
		c.mu.Unlock()
	}
	return e.g, e.err
}

// Len is the number of grammars cached or being compiled.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Peek returns the grammar compiled under key when it is cached and its
// compile has finished without error; it never compiles or waits.
func (c *Cache) Peek(key string) (*Grammar, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !e.isDone() || e.err != nil {
		return nil, false
	}
	c.lru.MoveToFront(el)
	c.trim()
	return e.g, true
}
