package responses

import (
	"container/list"
	"sync"
	"time"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// StoreConfig bounds the store of responses kept for previous_response_id
// and GET /v1/responses/{id}.
type StoreConfig struct {
	// MaxResponses is how many responses are kept; past it the oldest is
	// dropped. 0: 1024; negative: none are kept (store is then a no-op).
	MaxResponses int
	// MaxAge is how long a response is kept. 0: one hour.
	MaxAge time.Duration
	// MaxBytes bounds the text the kept conversations hold in all; past
	// it the oldest responses are dropped. 0: 64 MiB.
	MaxBytes int
	// Now is the store's clock; nil: time.Now.
	Now func() time.Time
}

// Store keeps recent responses and their conversations, bounded in
// number, age and size, the oldest dropped first.
type Store struct {
	cfg   StoreConfig
	mu    sync.Mutex
	order *list.List // of *stored, oldest first
	byID  map[string]*list.Element
	bytes int
}

// stored is one kept response: the response object and the conversation
// it ends (without its instructions, which a later turn does not inherit).
type stored struct {
	resp    *response
	history []pipeline.Message
	at      time.Time
	size    int
}

// NewStore returns an empty Store with cfg's bounds.
func NewStore(cfg StoreConfig) *Store {
	if cfg.MaxResponses == 0 {
		cfg.MaxResponses = 1024
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = time.Hour
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 64 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{cfg: cfg, order: list.New(), byID: map[string]*list.Element{}}
}

// put keeps a response and its conversation.
func (s *Store) put(resp *response, history []pipeline.Message) {
	if s.cfg.MaxResponses < 0 {
		return
	}
	size := 0
	for _, m := range history {
		size += len(m.Content) + len(m.Reasoning) + 64
		for _, c := range m.ToolCalls {
			size += len(c.Arguments) + len(c.Name) + len(c.ID)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if size > s.cfg.MaxBytes {
		return
	}
	s.byID[resp.ID] = s.order.PushBack(&stored{resp: resp, history: history, at: s.cfg.Now(), size: size})
	s.bytes += size
	for s.order.Len() > s.cfg.MaxResponses || s.bytes > s.cfg.MaxBytes {
		s.remove(s.order.Front())
	}
}

// get returns a kept response, nil when unknown or expired.
func (s *Store) get(id string) *stored {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	if e, ok := s.byID[id]; ok {
		return e.Value.(*stored)
	}
	return nil
}

// delete drops a response; false when it was not kept.
func (s *Store) delete(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	e, ok := s.byID[id]
	if ok {
		s.remove(e)
	}
	return ok
}

// expire drops the responses older than MaxAge (the list is in age order).
func (s *Store) expire() {
	now := s.cfg.Now()
	for e := s.order.Front(); e != nil && now.Sub(e.Value.(*stored).at) > s.cfg.MaxAge; e = s.order.Front() {
		s.remove(e)
	}
}

func (s *Store) remove(e *list.Element) {
	st := e.Value.(*stored)
	s.order.Remove(e)
	delete(s.byID, st.resp.ID)
	s.bytes -= st.size
}
