package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/messages"
)

// The live view of the runtime (GET /v1/live): a server-sent event stream
// made by the front actor. While a client listens, the front reads the
// runtime every liveInterval (in a goroutine of its own, which sends the
// reading back: the actor never waits), turns two readings into rates and
// means, and hands one JSON event to every listener.

// liveInterval is the time between two events of the live stream.
const liveInterval = 500 * time.Millisecond

// The live view's messages. Handler -> front: subscribe, unsubscribe;
// front -> itself: liveTick; a reading's goroutine -> front: liveReading.
type (
	// subscribe adds a listener; the front closes ch when the server
	// drains (the stream then ends).
	subscribe   struct{ ch chan []byte }
	unsubscribe struct{ ch chan []byte }
	liveTick    struct{}
)

// liveReading is the runtime's state at one moment.
type liveReading struct {
	at       time.Time
	stats    *messages.Stats // nil: the runtime did not answer
	err      string
	ttft     meanReading
	itl      meanReading
	cluster  *cluster.Stats
	members  []cluster.Member
	inFlight int // set by the front
}

// live is the front actor's part that serves the live view.
type live struct {
	read     func() *liveReading // called outside the actor
	subs     map[chan []byte]struct{}
	ticking  bool
	draining bool
	timer    *time.Timer
	prev     *liveReading
}

// receive handles the live view's messages and reports whether msg was
// one; the drain and Stopping messages are seen here and by the behavior.
func (l *live) receive(ctx actor.Context, inFlight int) bool {
	switch msg := ctx.Message().(type) {
	case *subscribe:
		if l.draining {
			close(msg.ch)
			return true
		}
		if l.subs == nil {
			l.subs = map[chan []byte]struct{}{}
		}
		l.subs[msg.ch] = struct{}{}
		if !l.ticking {
			l.ticking = true
			ctx.Send(ctx.Self(), &liveTick{})
		}
	case *unsubscribe:
		delete(l.subs, msg.ch)
	case *liveTick:
		if len(l.subs) == 0 {
			l.ticking, l.prev = false, nil
			return true
		}
		self, root, read := ctx.Self(), ctx.ActorSystem().Root, l.read
		go func() { root.Send(self, read()) }()
	case *liveReading:
		msg.inFlight = inFlight
		b, err := json.Marshal(newLiveEvent(l.prev, msg))
		if err == nil {
			for ch := range l.subs {
				select {
				case ch <- b:
				default: // a slow listener misses this event
				}
			}
		}
		l.prev = msg
		self, root := ctx.Self(), ctx.ActorSystem().Root
		l.timer = time.AfterFunc(liveInterval, func() { root.Send(self, &liveTick{}) })
	case *drain:
		l.draining = true
		for ch := range l.subs {
			close(ch)
		}
		clear(l.subs)
		return false
	case *actor.Stopping:
		if l.timer != nil {
			l.timer.Stop()
		}
		return false
	default:
		return false
	}
	return true
}

// liveEvent is one event of the live stream (see README, "The web page").
// Rates and means are over the time since the previous event; counters
// are totals since the server started.
type liveEvent struct {
	Time         int64        `json:"time"`         // Unix milliseconds
	IntervalSec  float64      `json:"interval_s"`   // since the previous event; 0 for the first
	InFlight     int          `json:"in_flight"`    // requests admitted by the front (running or queued)
	TokensPerSec float64      `json:"tokens_per_s"` // tokens sampled per second, all devices
	TTFTms       *float64     `json:"ttft_ms"`      // mean time to first token of the requests that got it; null: none
	ITLms        *float64     `json:"itl_ms"`       // mean inter-token latency; null: no token
	Devices      []liveDevice `json:"devices"`
	Cluster      *liveCluster `json:"cluster,omitempty"` // only on a cluster member
	Error        string       `json:"error,omitempty"`   // the runtime did not answer
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

// liveSource makes the function the front calls to read the runtime: it
// wraps the TTFT and inter-token observers so their means can be read.
// Called once, by New, before any request.
func (s *Server) liveSource() func() *liveReading {
	ttft := &meanObserver{next: s.metrics.ttft}
	itl := &meanObserver{next: s.metrics.itl}
	s.metrics.ttft, s.metrics.itl = ttft, itl
	return func() *liveReading {
		r := &liveReading{at: time.Now(), ttft: ttft.read(), itl: itl.read()}
		if st, err := s.rt.Stats(time.Second); err != nil {
			r.err = err.Error()
		} else {
			r.stats = st
		}
		if s.cfg.Cluster != nil {
			cs := s.cfg.Cluster.Stats()
			r.cluster, r.members = &cs, s.cfg.Cluster.Members()
		}
		return r
	}
}

// liveEvents serves GET /v1/live: one "stats" event every liveInterval
// until the client goes away or the server drains.
func (s *Server) liveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	ch := make(chan []byte, 4)
	s.system.Root.Send(s.front, &subscribe{ch: ch})
	defer s.system.Root.Send(s.front, &unsubscribe{ch: ch})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case b, ok := <-ch:
			if !ok {
				return
			}
			if _, err := fmt.Fprintf(w, "event: stats\ndata: %s\n\n", b); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}
