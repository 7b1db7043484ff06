package actors_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// TestDevicePanic makes the device actor panic inside a forward pass.
//
// Once: the batcher, the device's supervisor, restarts it; the step it lost
// is re-queued and its sequences recomputed, so 16 concurrent greedy
// requests all end with exactly the tokens each gives alone on a fresh
// runtime: no choice is lost, none answered twice, no token repeated or
// skipped. Stats counts one restart.
//
// Every time: the supervisor (10 restarts a minute) gives up and stops the
// device; every request in flight still ends, with "error" and a Done
// chunk, and so does one submitted afterwards, with no device left.
//
// Both end idle: no sequence, every block free, no goroutine left.
func TestDevicePanic(t *testing.T) {
	noLeaksSince(t)
	m, cases := stories(t)
	var reqs []*messages.GenerateRequest
	for i, c := range cases {
		next := cases[(i+1)%len(cases)]
		reqs = append(reqs,
			greedy(c.PromptIDs, 48),
			greedy(c.PromptIDs, 24),
			greedy(slices.Concat(c.PromptIDs, c.GreedyIDs[:8]), 32),
			greedy(slices.Concat(c.PromptIDs, next.PromptIDs[1:]), 32))
	}
	want := choicesAlone(t, m, reqs...)

	var failed atomic.Bool
	tests := []struct {
		name string
		fail func(call int64, b *model.Batch) bool // which forward calls panic
		// check looks at the results and the final stats.
		check func(t *testing.T, res []*streamTail, st *messages.Stats, f *faulty)
	}{{
		name: "once",
		// The first step from the fifth on that holds several sequences
		// (the first steps can be one prompt's prefill each, the more so
		// under the race detector).
		fail: func(call int64, b *model.Batch) bool {
			return call >= 5 && len(b.BlockTables) >= 2 && failed.CompareAndSwap(false, true)
		},
		check: func(t *testing.T, res []*streamTail, st *messages.Stats, f *faulty) {
			for i, r := range res {
				if !slices.Equal(r.ids[0], want[i][0]) || r.finish[0] != messages.FinishLength {
					t.Errorf("request %d: %v %s %s\nwant %v (alone)", i, r.ids[0], r.finish[0], r.errs[0], want[i][0])
				}
				if u := r.done.Usage; u == nil || u.CompletionTokens != len(want[i][0]) {
					t.Errorf("request %d: usage %+v, want %d completion tokens", i, u, len(want[i][0]))
				}
			}
			if st.DeviceRestarts != 1 || f.panics.Load() != 1 {
				t.Errorf("%d panics, %d device restarts; want 1 and 1", f.panics.Load(), st.DeviceRestarts)
			}
			if f.lost.Load() < 2 {
				t.Errorf("the failed step held %d sequences; the test wants several", f.lost.Load())
			}
			t.Logf("the failed step held %d sequences; %d steps in all", f.lost.Load(), st.Steps)
		},
	}, {
		name: "every time",
		fail: func(int64, *model.Batch) bool { return true },
		check: func(t *testing.T, res []*streamTail, st *messages.Stats, f *faulty) {
			for i, r := range res {
				if r.finish[0] != messages.FinishError || r.errs[0] == "" || len(r.ids[0]) != 0 {
					t.Errorf("request %d: %v finish %q err %q; want an error and no token", i, r.ids[0], r.finish[0], r.errs[0])
				}
			}
			// 10 restarts within the minute, then the 11th failure stops it.
			if p := f.panics.Load(); p != 11 || st.DeviceRestarts != 10 {
				t.Errorf("%d panics, %d device restarts; want 11 and 10", p, st.DeviceRestarts)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			noLeaksSince(t)
			f := &faulty{Backend: cpuBackendFor(t, m, 256, 0), fail: tc.fail}
			rt := start(t, m, actors.Config{NumBlocks: 256, Backends: []actors.Backend{f}})
			res := make([]*streamTail, len(reqs))
			for i, req := range reqs {
				res[i] = newStreamTail(t, streamOrFail(t, rt, context.Background(), copyReq(req)), 1)
			}
			for _, r := range res {
				r.wait()
			}
			st := pollStats(t, rt, "idle", idleStats)
			tc.check(t, res, st, f)
			if t.Failed() {
				return
			}

			// Afterwards: served as before, or refused at once, never hung.
			r := newStreamTail(t, streamOrFail(t, rt, context.Background(), copyReq(reqs[0])), 1).wait()
			switch f.panics.Load() {
			case 1:
				if !slices.Equal(r.ids[0], want[0][0]) {
					t.Errorf("after the restart: %v\nwant %v", r.ids[0], want[0][0])
				}
			default:
				if r.finish[0] != messages.FinishError || !strings.Contains(r.errs[0], "no device") {
					t.Errorf("with no device: %v finish %q err %q", r.ids[0], r.finish[0], r.errs[0])
				}
			}
		})
	}
}

// TestSwapPanic makes the device panic while it copies blocks between the
// tiers (its first eight swap-outs, or its first eight swap-ins, under the
// supervisor's limit of ten restarts), so the copy is lost: the batcher must
// recompute that sequence rather than run on garbage. Four greedy requests
// share 16 blocks of 4 tokens (Swap preemption, a 1ns window, so plans often
// hold a lone sequence that preempts itself); each must end with exactly the
// tokens it gives alone. Where a lost copy falls depends on timing, so each
// direction runs 6 times; when the batcher completed a swap-out plan without
// a device round trip, about 5 runs in 6 went wrong.
func TestSwapPanic(t *testing.T) {
	noLeaksSince(t)
	m, cases := stories(t)
	var reqs []*messages.GenerateRequest
	for _, c := range cases {
		reqs = append(reqs, greedy(c.PromptIDs, 40))
	}
	want := choicesAlone(t, m, reqs...)
	const numBlocks, blockSize = 16, 4
	firstEight := func(n int64) bool { return n <= 8 }
	for _, dir := range []string{"out", "in"} {
		for run := range 6 {
			ok := t.Run(fmt.Sprintf("%s/run%d", dir, run), func(t *testing.T) {
				be, err := backend.NewCPU(m, numBlocks, blockSize, numBlocks, 1)
				if err != nil {
					t.Fatal(err)
				}
				// The first forward pass waits until all four requests are in, so
				// that they contend for the blocks however fast the model runs.
				f := &faulty{Backend: be, start: make(chan struct{})}
				if dir == "out" {
					f.failSwapOut = firstEight
				} else {
					f.failSwapIn = firstEight
				}
				rt := start(t, m, actors.Config{NumBlocks: numBlocks, BlockSize: blockSize, NumHostBlocks: numBlocks,
					Preemption: sched.Swap, Window: time.Nanosecond, Backends: []actors.Backend{f}})
				res := make([]*streamTail, len(reqs))
				for i, req := range reqs {
					res[i] = newStreamTail(t, streamOrFail(t, rt, context.Background(), copyReq(req)), 1)
				}
				pollStats(t, rt, "all four admitted", func(st *messages.Stats) bool { return st.Running+st.Waiting == len(reqs) })
				close(f.start)
				for i, r := range res {
					if r.wait(); !slices.Equal(r.ids[0], want[i][0]) || r.finish[0] != messages.FinishLength {
						t.Errorf("request %d: %v %s %s\nwant %v (alone)", i, r.ids[0], r.finish[0], r.errs[0], want[i][0])
					}
				}
				st := pollStats(t, rt, "idle", idleStats)
				if st.DeviceRestarts != f.panics.Load() || st.SwapOuts == 0 || f.panics.Load() == 0 {
					t.Errorf("%d panics, %d device restarts, %d swap-outs, %d swap-ins", f.panics.Load(), st.DeviceRestarts, st.SwapOuts, st.SwapIns)
				}
			})
			if !ok {
				return
			}
		}
	}
}
