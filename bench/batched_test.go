package bench_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/troupe-llm/troupe/bench"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
)

func openModel(t testing.TB, rel string) *model.Model {
	t.Helper()
	return reftest.Open(t, testmodels.Path(t, rel))
}

// TestBatched runs the benchmark with tiny sizes and checks every row adds
// up: the tokens, the steps, the times.
func TestBatched(t *testing.T) {
	// A dead letter (a message to an actor already stopped) starts
	// protoactor's log throttle, a goroutine that lives for a second.
	defer verifyNoLeaks(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	m := openModel(t, "stories260K.gguf")
	const pp, tg = 8, 4
	rows, err := bench.Batched(context.Background(), m, bench.BatchedOptions{PP: pp, TG: tg, PL: []int{1, 2}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for i, r := range rows {
		b := i + 1
		t.Logf("%+v\n  S_PP %.0f S_TG %.0f S %.0f t/s, decode step %v, overhead %v (%.1f%%)",
			r, r.SPP(), r.STG(), r.S(), r.DecodeStep(), r.DecodeOverhead(), r.DecodeOverheadPercent())
		if r.PP != pp || r.TG != tg || r.B != b {
			t.Errorf("row %d: PP %d TG %d B %d, want %d %d %d", i, r.PP, r.TG, r.B, pp, tg, b)
		}
		if r.NKV != b*(pp+tg) || r.B*r.PP+r.Generated != r.NKV {
			t.Errorf("B=%d: N_KV %d, prompt %d + generated %d tokens, want %d", b, r.NKV, b*pp, r.Generated, b*(pp+tg))
		}
		if want := int64(b * (pp + tg - 1)); r.Computed != want {
			t.Errorf("B=%d: the steps computed %d tokens, want %d", b, r.Computed, want)
		}
		// The whole prefill is one step, then one step per further token.
		if r.PrefillSteps != 1 || r.DecodeSteps != tg-1 {
			t.Errorf("B=%d: %d prefill and %d decode steps, want 1 and %d", b, r.PrefillSteps, r.DecodeSteps, tg-1)
		}
		if r.TPP <= 0 || r.TTG <= 0 || r.T != r.TPP+r.TTG {
			t.Errorf("B=%d: T_PP %v + T_TG %v != T %v, or not positive", b, r.TPP, r.TTG, r.T)
		}
		// The device runs its steps one at a time, between the submission
		// and the last output: its times fit in T.
		if r.PrefillForward <= 0 || r.DecodeForward <= 0 || r.PrefillForward+r.DecodeForward > r.T {
			t.Errorf("B=%d: device time prefill %v + decode %v, want positive and within T %v", b, r.PrefillForward, r.DecodeForward, r.T)
		}
		if r.DecodeWall <= 0 || r.DecodeWall >= r.T {
			t.Errorf("B=%d: decode phase on the device %v, want positive and within T %v", b, r.DecodeWall, r.T)
		}
		for _, s := range []float64{r.SPP(), r.STG(), r.S()} {
			if !(s > 0) || math.IsInf(s, 0) {
				t.Errorf("B=%d: speed %v", b, s)
			}
		}
	}
}

func TestBatchedOptionsValidate(t *testing.T) {
	ok := bench.BatchedOptions{PP: 8, TG: 4, PL: []int{1}}
	for _, tc := range []struct {
		name string
		edit func(*bench.BatchedOptions)
		ok   bool
	}{
		{"fine", func(*bench.BatchedOptions) {}, true},
		{"context exactly pp+tg", func(o *bench.BatchedOptions) { o.ContextLen = 12 }, true},
		{"no prompt", func(o *bench.BatchedOptions) { o.PP = 0 }, false},
		{"one token", func(o *bench.BatchedOptions) { o.TG = 1 }, false},
		{"no batch size", func(o *bench.BatchedOptions) { o.PL = nil }, false},
		{"zero batch size", func(o *bench.BatchedOptions) { o.PL = []int{1, 0} }, false},
		{"negative workers", func(o *bench.BatchedOptions) { o.Workers = -1 }, false},
		{"short context", func(o *bench.BatchedOptions) { o.ContextLen = 11 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			if err := o.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// BenchmarkBatched is `troupe bench batched -npp 128 -ntg 64 -npl 1,4,8,16`
// on stories260K. Each iteration starts a runtime and warms it up, so ns/op
// means little; the metrics are the timed phases: prefill and decode
// tokens per second, and the decode steps' time outside the forward pass.
func BenchmarkBatched(b *testing.B) {
	m := openModel(b, "stories260K.gguf")
	const pp, tg = 128, 64
	for _, n := range []int{1, 4, 8, 16} {
		b.Run(fmt.Sprintf("B=%d", n), func(b *testing.B) {
			var tpp, ttg, wall, fwd time.Duration
			var steps int64
			iters := 0
			for b.Loop() {
				rows, err := bench.Batched(context.Background(), m, bench.BatchedOptions{PP: pp, TG: tg, PL: []int{n}, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				r := rows[0]
				tpp, ttg, steps = tpp+r.TPP, ttg+r.TTG, steps+r.DecodeSteps
				wall, fwd = wall+r.DecodeWall, fwd+r.DecodeForward
				iters++
			}
			b.ReportMetric(float64(iters*n*pp)/tpp.Seconds(), "prefill-tok/s")
			b.ReportMetric(float64(iters*n*(tg-1))/ttg.Seconds(), "decode-tok/s")
			b.ReportMetric(float64(wall-fwd)/1e3/float64(steps), "overhead-us/step")
		})
	}
}
