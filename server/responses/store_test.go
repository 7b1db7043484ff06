package responses

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// TestStoreBounds: the store keeps at most MaxResponses, each MaxAge, and
// MaxBytes of conversation in all, the oldest dropped first; delete drops
// one; MaxResponses negative keeps none.
func TestStoreBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	s := NewStore(StoreConfig{MaxResponses: 2, MaxAge: time.Minute, MaxBytes: 1000, Now: func() time.Time { return now }})
	msg := func(n int) []pipeline.Message {
		return []pipeline.Message{{Role: pipeline.User, Content: strings.Repeat("x", n)}}
	}
	for _, id := range []string{"a", "b", "c"} {
		s.put(&response{ID: id}, msg(10))
		now = now.Add(10 * time.Second)
	}
	if s.get("a") != nil || s.get("b") == nil || s.get("c") == nil {
		t.Error("count bound: want b and c kept, a dropped")
	}
	now = now.Add(45 * time.Second) // b is 65 s old, c 55 s
	if s.get("b") != nil || s.get("c") == nil {
		t.Error("age bound: want b expired, c kept")
	}
	s.put(&response{ID: "d"}, msg(900)) // c (74 bytes) + d (964) > 1000
	if s.get("c") != nil || s.get("d") == nil {
		t.Error("size bound: want c dropped for d")
	}
	s.put(&response{ID: "e"}, msg(2000)) // larger than the whole store: not kept
	if s.get("e") != nil || s.get("d") == nil {
		t.Error("an oversized conversation is not kept, and drops nothing")
	}
	if !s.delete("d") || s.delete("d") || s.get("d") != nil {
		t.Error("delete")
	}
	none := NewStore(StoreConfig{MaxResponses: -1})
	none.put(&response{ID: "x"}, msg(1))
	if none.get("x") != nil {
		t.Error("MaxResponses -1 keeps none")
	}
}
