package grammar

import (
	"container/list"
	"sync"
)

// Cache keeps compiled grammars by key (a source's kind and text), least
// recently used out first. Concurrent Gets of one key compile once; an
// error is not kept. It is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element
	lru     *list.List // of *cacheEntry, most recent first
}

type cacheEntry struct {
	key  string
	done chan struct{} // closed when g and err are set
	g    *Grammar
	err  error
}

// NewCache returns a cache of at most size grammars (at least 1).
func NewCache(size int) *Cache {
	return &Cache{max: max(size, 1), entries: map[string]*list.Element{}, lru: list.New()}
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
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*cacheEntry).key)
	}
	c.mu.Unlock()

	e.g, e.err = compile()
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
	select {
	case <-e.done:
		if e.err != nil {
			return nil, false
		}
		c.lru.MoveToFront(el)
		return e.g, true
	default:
		return nil, false
	}
}
