package server

import (
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors/cluster"
)

// TestLivePipeline: the live view's stages, from two readings of a
// pipeline's counters half a second apart.
func TestLivePipeline(t *testing.T) {
	stage := func(lo, hi int, addr string, compute time.Duration, bytes int64) cluster.StageStats {
		return cluster.StageStats{Lo: lo, Hi: hi, Address: addr, ComputeTime: compute, BytesIn: bytes}
	}
	prev := &cluster.PipelineStats{Steps: 10, MicroBatches: 20, StepTime: time.Second,
		Stages: []cluster.StageStats{stage(0, 2, "h:1", 600*time.Millisecond, 1000), stage(2, 4, "m:2", 500*time.Millisecond, 2000)}}
	cur := &cluster.PipelineStats{Steps: 20, MicroBatches: 40, StepTime: 1400 * time.Millisecond, Failed: 1,
		Stages: []cluster.StageStats{stage(0, 2, "h:1", 900*time.Millisecond, 1500), stage(2, 4, "", 700*time.Millisecond, 3000)}}
	lp := newLivePipeline(prev, cur, 0.5)
	if lp.StepsPerSec != 20 || lp.MicroPerStep != 2 || lp.Failed != 1 || lp.BytesPerSec != 3000 || len(lp.Stages) != 2 {
		t.Fatalf("%+v", lp)
	}
	want := []liveStage{
		{Stage: 0, Layers: "layers [0, 2)", Address: "h:1", StepMs: 30, Busy: 0.75, BytesPerSec: 1000},
		{Stage: 1, Layers: "layers [2, 4)", Address: "", StepMs: 20, Busy: 0.5, BytesPerSec: 2000},
	}
	for i, w := range want {
		g := lp.Stages[i]
		if g.Stage != w.Stage || g.Layers != w.Layers || g.Address != w.Address || !near(g.StepMs, w.StepMs) || !near(g.Busy, w.Busy) || g.BytesPerSec != w.BytesPerSec {
			t.Errorf("stage %d: %+v, want %+v", i, g, w)
		}
	}
	if first := newLivePipeline(nil, cur, 0); first.StepsPerSec != 0 || first.Stages[0].Busy != 0 || len(first.Stages) != 2 {
		t.Errorf("the first event: %+v", first)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
