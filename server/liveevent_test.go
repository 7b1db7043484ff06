package server

import (
	"reflect"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/messages"
)

func f64(v float64) *float64 { return &v }

// TestNewLiveEvent checks the live view's arithmetic: rates and means
// over the interval between two readings, the KV blocks split into used,
// cached and free, and the cluster part.
func TestNewLiveEvent(t *testing.T) {
	t0 := time.Unix(1000, 0)
	dev := func(steps, tokens, seqs, samples, nanos int64) messages.DeviceStats {
		return messages.DeviceStats{Running: 2, Waiting: 1, Swapped: 3, NumBlocks: 100, NumFreeBlocks: 70, NumCachedBlocks: 20,
			Preemptions: 4, Steps: steps, StepTokens: tokens, StepSeqs: seqs, Samples: samples, ForwardNanos: nanos}
	}
	prev := &liveReading{at: t0, stats: &messages.Stats{Devices: []messages.DeviceStats{dev(10, 100, 20, 20, 50e6)}, SpecDraftTokens: 40, SpecAcceptedTokens: 10},
		ttft: meanReading{sum: 1, n: 2}, itl: meanReading{sum: 0.5, n: 100}}
	cur := &liveReading{at: t0.Add(500 * time.Millisecond), inFlight: 3,
		stats: &messages.Stats{Devices: []messages.DeviceStats{dev(20, 300, 60, 60, 70e6)}, SpecDraftTokens: 50, SpecAcceptedTokens: 16},
		ttft:  meanReading{sum: 1.25, n: 4}, itl: meanReading{sum: 0.5, n: 100},
		cluster: &cluster.Stats{Members: 2, Refused: 1, PlacedLocal: 5, PlacedRemote: 6, Overflowed: 7, Failovers: 8},
		members: []cluster.Member{{Address: "a:1", Self: true, Running: 2, Waiting: 1, KVCacheUsage: 0.3}}}
	idle := liveDevice{Device: 0, Running: 2, Waiting: 1, Swapped: 3, BlocksUsed: 30, BlocksCached: 20, BlocksFree: 50, Preemptions: 4, Steps: 10, Samples: 20}
	busy := idle
	busy.Steps, busy.Samples = 20, 60
	busy.StepsPerSec, busy.BatchTokens, busy.BatchSeqs, busy.StepMs, busy.TokensPerSec = 20, 20, 4, 2, 80
	for _, c := range []struct {
		name      string
		prev, cur *liveReading
		want      *liveEvent
	}{
		{"first", nil, prev, &liveEvent{Time: 1000000, Devices: []liveDevice{idle}}},
		{"interval", prev, cur, &liveEvent{Time: 1000500, IntervalSec: 0.5, InFlight: 3, TokensPerSec: 80, TTFTms: f64(125), ITLms: nil, SpecAcceptance: f64(0.6),
			Devices: []liveDevice{busy},
			Cluster: &liveCluster{Members: []liveMember{{Address: "a:1", Self: true, Running: 2, Waiting: 1, KVCacheUsage: 0.3}},
				Refused: 1, PlacedLocal: 5, PlacedRemote: 6, Overflows: 7, Failovers: 8}}},
		{"runtime silent", prev, &liveReading{at: t0.Add(time.Second), err: "timeout", ttft: prev.ttft, itl: meanReading{sum: 0.75, n: 110}},
			&liveEvent{Time: 1001000, IntervalSec: 1, ITLms: f64(25), Devices: []liveDevice{}, Error: "timeout"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := newLiveEvent(c.prev, c.cur); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}
