package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestSendAllPoisson: requests go out no earlier than their Poisson
// arrival times, whose gaps have the rate's mean, and none go out once the
// context has ended.
func TestSendAllPoisson(t *testing.T) {
	const n, rate = 40, 400.0
	o := ServeOptions{NumPrompts: n, RequestRate: rate, Seed: 7}
	// The schedule sendAll follows: exponential gaps from the arrivals' stream.
	rng := rand.New(rand.NewPCG(o.Seed, 2))
	want := make([]time.Duration, n)
	for i := 1; i < n; i++ {
		want[i] = want[i-1] + time.Duration(rng.ExpFloat64()/rate*float64(time.Second))
	}
	if mean := want[n-1] / (n - 1); mean < time.Second/rate/2 || mean > 2*time.Second/rate {
		t.Fatalf("mean gap %v, far from 1/rate = %v", mean, time.Second/rate)
	}
	var mu sync.Mutex
	got := make([]time.Duration, n)
	start := time.Now()
	sendAll(context.Background(), o, make([]serveRequest, n), func(i int) {
		mu.Lock()
		got[i] = time.Since(start)
		mu.Unlock()
	})
	for i := range got {
		if got[i] < want[i] {
			t.Errorf("request %d sent at %v, before its arrival at %v", i, got[i], want[i])
		}
	}

	// One at a time, so that the third send has ended the context before
	// the loop can send a fourth.
	o.MaxConcurrency = 1
	ctx, cancel := context.WithCancel(context.Background())
	sent := 0
	sendAll(ctx, o, make([]serveRequest, n), func(i int) {
		mu.Lock()
		defer mu.Unlock()
		if sent++; sent == 3 {
			cancel()
		}
	})
	if sent != 3 {
		t.Errorf("%d requests sent, want 3: the run goes on after its context ended", sent)
	}
}
