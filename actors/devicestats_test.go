package actors_test

import (
	"context"
	"testing"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

// TestDeviceStats checks Stats.Devices against the runtime's totals and
// against what the requests produced: over two devices, each device's
// share adds up to the totals, and the tokens sampled are the tokens
// generated.
func TestDeviceStats(t *testing.T) {
	noLeaks(t)
	m, cases := stories(t)
	rt := start(t, m, actors.Config{Devices: 2})
	const maxTokens, n = 12, 4
	var chans []<-chan *messages.OutputChunk
	for i := range n {
		req := greedy(cases[i%len(cases)].PromptIDs, maxTokens)
		req.IgnoreEOS = true // every sequence samples exactly maxTokens
		chans = append(chans, streamOrFail(t, rt, context.Background(), req))
	}
	completion := 0
	for _, ch := range chans {
		completion += collect(t, ch, 1).usage.CompletionTokens
	}
	st := pollStats(t, rt, "idle", idleStats)
	if len(st.Devices) != 2 {
		t.Fatalf("%d devices in Stats, want 2", len(st.Devices))
	}
	var sum messages.DeviceStats
	for i, d := range st.Devices {
		if d.Steps == 0 {
			t.Errorf("device %d ran no step: %+v", i, d)
		}
		if d.Running+d.Waiting+d.Swapped != 0 || d.NumFreeBlocks != d.NumBlocks || d.Dead {
			t.Errorf("device %d not idle: %+v", i, d)
		}
		if d.StepSeqs < d.Samples || d.StepTokens < d.StepSeqs {
			t.Errorf("device %d: %d tokens, %d sequences and %d samples in its steps", i, d.StepTokens, d.StepSeqs, d.Samples)
		}
		sum.Steps += d.Steps
		sum.StepTokens += d.StepTokens
		sum.Samples += d.Samples
		sum.ForwardNanos += d.ForwardNanos
		sum.Preemptions += d.Preemptions
		sum.NumBlocks += d.NumBlocks
		sum.NumFreeBlocks += d.NumFreeBlocks
		sum.NumCachedBlocks += d.NumCachedBlocks
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"steps", sum.Steps, st.Steps},
		{"step tokens", sum.StepTokens, st.StepTokens},
		{"forward nanos", sum.ForwardNanos, st.ForwardNanos},
		{"preemptions", sum.Preemptions, st.Preemptions},
		{"blocks", int64(sum.NumBlocks), int64(st.NumBlocks)},
		{"free blocks", int64(sum.NumFreeBlocks), int64(st.NumFreeBlocks)},
		{"cached blocks", int64(sum.NumCachedBlocks), int64(st.NumCachedBlocks)},
		{"samples", sum.Samples, int64(completion)},
		{"samples", sum.Samples, n * maxTokens},
	} {
		if c.got != c.want {
			t.Errorf("%s: devices add up to %d, want %d", c.name, c.got, c.want)
		}
	}
}
