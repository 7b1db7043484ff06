package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/actors/internal/actortest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/messages"
)

// BenchmarkPipeline measures decode throughput (tok/s over 8 concurrent
// greedy requests of 32 tokens) of one node against the same model split
// into 2 and 3 stages over members in this process, talking over loopback
// gRPC, each step whole (micro1: one micro-batch in flight) or cut into
// micro-batches that overlap on the stages: the network is free and the
// stages share this machine's cores, so it shows the pipeline's overhead
// per step and its head's idle share, not what separate machines would
// gain. The model is
// smollm2-135m's shape, Q8_0 (troupe synth, 113 MB); -bench.model=stories
// is not offered: stories260K is too small for the step to be compute.
func BenchmarkPipeline(b *testing.B) {
	path := synthtest.Write(b, "smollm2-135m", "Q8_0", "stories260K.gguf", 1) // troupe synth, stories260K's vocabulary
	rcfg := actors.Config{Workers: 2}
	for _, run := range []struct{ n, micro int }{{1, 1}, {2, 1}, {2, 2}, {3, 1}, {3, 2}} {
		n := run.n
		b.Run(fmt.Sprintf("stages%d/micro%d", n, run.micro), func(b *testing.B) {
			var rt *actors.Runtime
			var head *cluster.Pipeline
			if n == 1 {
				m := openModel(b, path)
				sys := actortest.QuietSystem()
				defer sys.Shutdown()
				cfg := rcfg
				cfg.NewBackend = backend.For(m, backend.DeviceCPU)
				var err error
				if rt, err = actors.Start(sys, m, cfg); err != nil {
					b.Fatal(err)
				}
				defer rt.Stop(5 * time.Second)
			} else {
				ps := startPipeline(b, path, n, rcfg)
				rt, head = ps.rt, ps.head
				head.CutAsServed()
				if err := head.SetMicroBatches(run.micro); err != nil {
					b.Fatal(err)
				}
			}
			var reqs []*messages.GenerateRequest
			for i := range 8 {
				prompt, err := rt.Tokenize(fmt.Sprintf("Once upon a time %d", i))
				if err != nil {
					b.Fatal(err)
				}
				reqs = append(reqs, &messages.GenerateRequest{Prompt: prompt, MaxTokens: 32, IgnoreEOS: true})
			}
			tokens := 0
			for b.Loop() {
				for i, out := range runAll(b, rt, reqs) {
					if len(out) == 0 || len(out[0]) == 0 {
						b.Fatalf("request %d gave no tokens", i)
					}
					tokens += len(out[0])
				}
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tok/s")
			if head != nil {
				st := head.Stats()
				var wire int64
				for _, s := range st.Stages {
					wire += s.BytesIn
				}
				b.ReportMetric(float64(wire)/float64(tokens), "wire-B/tok")
				b.ReportMetric(st.Stages[0].BubbleTime.Seconds()/st.StepTime.Seconds(), "head-idle")
				b.ReportMetric(float64(st.MicroBatches)/float64(st.Steps), "micro/step")
			}
		})
	}
}
