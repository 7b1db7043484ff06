package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/asynkron/protoactor-go/actor"

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
	// subscribe adds a listener, answered with subscribed; the front
	// closes ch when the server drains (the stream then ends).
	subscribe   struct{ ch chan []byte }
	subscribed  struct{ Err *apiError } // nil: added
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
	pipeline *cluster.PipelineStats
	inFlight int // set by the front
}

// live is the front actor's part that serves the live view.
type live struct {
	read     func() *liveReading // called outside the actor
	max      int                 // listeners at most (Config.MaxLiveListeners)
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
		l.onSubscribe(ctx, msg)
	case *unsubscribe:
		delete(l.subs, msg.ch)
	case *liveTick:
		l.onTick(ctx)
	case *liveReading:
		msg.inFlight = inFlight
		l.onReading(ctx, msg)
	case *drain:
		l.onDrain()
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

func (l *live) onSubscribe(ctx actor.Context, msg *subscribe) {
	if l.draining {
		close(msg.ch)
		ctx.Respond(&subscribed{})
		return
	}
	if len(l.subs) >= l.max {
		ctx.Respond(&subscribed{Err: &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: strp("rate_limit_exceeded"),
			Message: fmt.Sprintf("the live view has its %d listeners already; retry later", l.max), RetryAfter: 5}})
		return
	}
	ctx.Respond(&subscribed{})
	if l.subs == nil {
		l.subs = map[chan []byte]struct{}{}
	}
	l.subs[msg.ch] = struct{}{}
	if !l.ticking {
		l.ticking = true
		ctx.Send(ctx.Self(), &liveTick{})
	}
}

// onTick reads the runtime in a goroutine, which sends the reading back;
// with no listener left the ticks stop.
func (l *live) onTick(ctx actor.Context) {
	if len(l.subs) == 0 {
		l.ticking, l.prev = false, nil
		return
	}
	self, root, read := ctx.Self(), ctx.ActorSystem().Root, l.read
	go func() { root.Send(self, read()) }()
}

// onReading sends every listener the event of r and sets the next tick.
func (l *live) onReading(ctx actor.Context, r *liveReading) {
	if b, err := json.Marshal(newLiveEvent(l.prev, r)); err == nil {
		for ch := range l.subs {
			select {
			case ch <- b:
			default: // a slow listener misses this event
			}
		}
	}
	l.prev = r
	self, root := ctx.Self(), ctx.ActorSystem().Root
	l.timer = time.AfterFunc(liveInterval, func() { root.Send(self, &liveTick{}) })
}

// onDrain ends every listener's stream, and those that come later.
func (l *live) onDrain() {
	l.draining = true
	for ch := range l.subs {
		close(ch)
	}
	clear(l.subs)
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
		if s.cfg.Pipeline != nil {
			ps := s.cfg.Pipeline.Stats()
			r.pipeline = &ps
		}
		return r
	}
}

// liveEvents serves GET /v1/live: one "stats" event every liveInterval
// until the client goes away or the server drains.
func (s *Server) liveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	ch := make(chan []byte, 4)
	res, err := s.system.Root.RequestFuture(s.front, &subscribe{ch: ch}, askTimeout).Result()
	if err != nil {
		writeError(w, unavailable("the server did not answer in time"))
		return
	}
	if e := res.(*subscribed).Err; e != nil {
		writeError(w, e)
		return
	}
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
