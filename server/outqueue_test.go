package server

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
)

// TestOutQueueBound: pushes never block; past the byte limit overflow is
// called once; pop hands the chunks out in order and ends after close.
func TestOutQueueBound(t *testing.T) {
	overflows := 0
	q := newOutQueue(10_000, func() { overflows++ })
	text := strings.Repeat("x", 1000)
	for i := range 20 {
		q.push(choiceChunk{index: i, c: &messages.OutputChunk{Text: text}})
		if want := 0; i < 9 && overflows != want {
			t.Fatalf("after %d chunks of ~1 KB: %d overflows, want none", i+1, overflows)
		}
	}
	if overflows != 1 || !q.hasOverflowed() {
		t.Fatalf("20 KB in a 10 KB queue: %d overflows, want 1", overflows)
	}
	q.close()
	for i := range 20 {
		cc, ok := q.pop()
		if !ok || cc.index != i {
			t.Fatalf("pop %d: %v %d", i, ok, cc.index)
		}
	}
	if _, ok := q.pop(); ok || q.bytes != 0 {
		t.Fatalf("after every chunk: ok %v, %d bytes held", ok, q.bytes)
	}
}
