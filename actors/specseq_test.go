package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// TestDraftMissBackOff: a draft model's drafts of which nothing is
// accepted, from the second in a row, make the sequence skip asking for
// 1, 2, 4 ... (at most maxDraftBackOff) steps; an accepted token ends it.
// The n-gram proposer (free drafts) never skips; a busy device (NoDraft)
// starts no back-off.
func TestDraftMissBackOff(t *testing.T) {
	d := draftState{k: 4, least: 1, cur: 4, device: &actor.PID{}}
	var skips []int
	for range 9 {
		d.sent = 1
		d.adapt(d.cur, 0, false)
		skips = append(skips, d.skip)
		d.skip = 0 // the steps skipped
	}
	want := []int{0, 1, 2, 4, 8, 16, 32, 32, 32}
	for i := range want {
		if skips[i] != want[i] {
			t.Fatalf("skips after drafts of which none was accepted: %v, want %v", skips, want)
		}
	}
	d.adapt(2, 1, false)
	if d.misses != 0 || d.skip != 0 || d.cur != 2 {
		t.Errorf("after an accepted token: misses %d, skip %d, draft length %d; want 0, 0, 2", d.misses, d.skip, d.cur)
	}
	d.adapt(2, 0, false)
	if d.skip != 0 {
		t.Errorf("one miss after an accepted token: skip %d, want 0", d.skip)
	}
	ng := draftState{k: 4, least: 1, cur: 4}
	for range 5 {
		ng.adapt(ng.cur, 0, false)
	}
	if ng.skip != 0 || ng.misses != 0 {
		t.Errorf("n-gram proposer: skip %d, misses %d after 5 misses; want 0 and 0", ng.skip, ng.misses)
	}
	busy := draftState{k: 4, least: 1, cur: 4, device: &actor.PID{}, sent: 4}
	busy.adapt(0, 0, true)
	if !busy.busy || busy.skip != 0 {
		t.Errorf("a dropped draft on a busy device: busy %v, skip %d; want true and 0", busy.busy, busy.skip)
	}
}
