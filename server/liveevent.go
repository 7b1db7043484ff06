package server

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/troupe-llm/troupe/actors/cluster"
)

// liveEvent is one event of the live stream (see live.go; README, "The web page").
// Rates and means are over the time since the previous event; counters
// are totals since the server started.
type liveEvent struct {
	Time         int64    `json:"time"`         // Unix milliseconds
	IntervalSec  float64  `json:"interval_s"`   // since the previous event; 0 for the first
	InFlight     int      `json:"in_flight"`    // requests admitted by the front (running or queued)
	TokensPerSec float64  `json:"tokens_per_s"` // tokens sampled per second, all devices
	TTFTms       *float64 `json:"ttft_ms"`      // mean time to first token of the requests that got it; null: none
	ITLms        *float64 `json:"itl_ms"`       // mean inter-token latency; null: no token
	// SpecAcceptance is the fraction of the draft tokens verified in the
	// interval that were accepted (speculative decoding); absent: none.
	SpecAcceptance *float64     `json:"spec_acceptance,omitempty"`
	Devices        []liveDevice `json:"devices"`
	Cluster        *liveCluster `json:"cluster,omitempty"` // only on a cluster member
	Error          string       `json:"error,omitempty"`   // the runtime did not answer

	// Pipeline is only on a pipeline's head (stages.go).
	Pipeline *livePipeline `json:"pipeline,omitempty"`
}

// liveDevice is one device of a liveEvent.
type liveDevice struct {
	Device       int     `json:"device"`
	Running      int     `json:"running"`
	Waiting      int     `json:"waiting"`
	Swapped      int     `json:"swapped"`
	BlocksUsed   int     `json:"blocks_used"`   // held by sequences
	BlocksCached int     `json:"blocks_cached"` // free, but holding a cached prefix
	BlocksFree   int     `json:"blocks_free"`   // free and empty
	Preemptions  int64   `json:"preemptions"`
	Steps        int64   `json:"steps"`
	Samples      int64   `json:"tokens_sampled"`
	StepsPerSec  float64 `json:"steps_per_s"`
	BatchTokens  float64 `json:"batch_tokens"` // mean tokens per step
	BatchSeqs    float64 `json:"batch_seqs"`   // mean sequences per step
	StepMs       float64 `json:"step_ms"`      // mean time of a step (forward pass and sampling)
	TokensPerSec float64 `json:"tokens_per_s"`
	Dead         bool    `json:"dead,omitempty"`
}

// liveCluster is the cluster part of a liveEvent.
type liveCluster struct {
	Members      []liveMember `json:"members"`
	Refused      int          `json:"refused"`
	PlacedLocal  int64        `json:"placed_local"`
	PlacedRemote int64        `json:"placed_remote"`
	Overflows    int64        `json:"overflows"`
	Failovers    int64        `json:"failovers"`
}

// liveMember is one cluster member, with its gossiped load.
type liveMember struct {
	Address      string  `json:"address"`
	Self         bool    `json:"self,omitempty"`
	Running      int     `json:"running"`
	Waiting      int     `json:"waiting"`
	KVCacheUsage float64 `json:"kv_cache_usage"`
}

// newLiveEvent makes the event for cur; prev is the reading before (nil:
// none, rates are 0).
func newLiveEvent(prev, cur *liveReading) *liveEvent {
	ev := &liveEvent{Time: cur.at.UnixMilli(), InFlight: cur.inFlight, Error: cur.err, Devices: []liveDevice{}}
	dt := 0.0
	if prev != nil {
		dt = cur.at.Sub(prev.at).Seconds()
		ev.IntervalSec = dt
		ev.TTFTms = cur.ttft.meanSince(prev.ttft, 1e3)
		ev.ITLms = cur.itl.meanSince(prev.itl, 1e3)
	}
	if st := cur.stats; st != nil && prev != nil && prev.stats != nil {
		if n := st.SpecDraftTokens - prev.stats.SpecDraftTokens; n > 0 {
			v := float64(st.SpecAcceptedTokens-prev.stats.SpecAcceptedTokens) / float64(n)
			ev.SpecAcceptance = &v
		}
	}
	if cur.stats != nil {
		for i, d := range cur.stats.Devices {
			ld := liveDevice{Device: i, Running: d.Running, Waiting: d.Waiting, Swapped: d.Swapped,
				BlocksUsed: d.NumBlocks - d.NumFreeBlocks, BlocksCached: d.NumCachedBlocks, BlocksFree: d.NumFreeBlocks - d.NumCachedBlocks,
				Preemptions: d.Preemptions, Steps: d.Steps, Samples: d.Samples, Dead: d.Dead}
			if prev != nil && prev.stats != nil && i < len(prev.stats.Devices) && dt > 0 {
				p := prev.stats.Devices[i]
				if steps := float64(d.Steps - p.Steps); steps > 0 {
					ld.StepsPerSec = steps / dt
					ld.BatchTokens = float64(d.StepTokens-p.StepTokens) / steps
					ld.BatchSeqs = float64(d.StepSeqs-p.StepSeqs) / steps
					ld.StepMs = float64(d.ForwardNanos-p.ForwardNanos) / steps / 1e6
				}
				ld.TokensPerSec = float64(d.Samples-p.Samples) / dt
				ev.TokensPerSec += ld.TokensPerSec
			}
			ev.Devices = append(ev.Devices, ld)
		}
	}
	if cs := cur.cluster; cs != nil {
		lc := &liveCluster{Members: []liveMember{}, Refused: cs.Refused, PlacedLocal: cs.PlacedLocal, PlacedRemote: cs.PlacedRemote,
			Overflows: cs.Overflowed, Failovers: cs.Failovers}
		for _, m := range cur.members {
			lc.Members = append(lc.Members, liveMember{Address: m.Address, Self: m.Self, Running: m.Running, Waiting: m.Waiting, KVCacheUsage: m.KVCacheUsage})
		}
		ev.Cluster = lc
	}
	if cur.pipeline != nil {
		var before *cluster.PipelineStats
		if prev != nil {
			before = prev.pipeline
		}
		ev.Pipeline = newLivePipeline(before, cur.pipeline, dt)
	}
	return ev
}

// meanObserver passes observations on to next and keeps their sum and
// count, for the live view's means.
type meanObserver struct {
	next prometheus.Observer
	mu   sync.Mutex
	m    meanReading
}

// meanReading is a meanObserver's sum and count at one moment.
type meanReading struct {
	sum float64
	n   int64
}

func (o *meanObserver) Observe(v float64) {
	o.next.Observe(v)
	o.mu.Lock()
	o.m.sum += v
	o.m.n++
	o.mu.Unlock()
}

func (o *meanObserver) read() meanReading {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m
}

// meanSince is the mean of the observations since prev, times scale; nil
// when there were none.
func (m meanReading) meanSince(prev meanReading, scale float64) *float64 {
	if m.n <= prev.n {
		return nil
	}
	v := (m.sum - prev.sum) / float64(m.n-prev.n) * scale
	return &v
}
