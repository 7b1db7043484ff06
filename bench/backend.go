package bench

import (
	"slices"
	"sync"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/model"
)

// timedBackend is a device Backend that records each forward pass: when it
// ran and whether it computed prompt tokens. It tells the prefill steps from
// the decode steps exactly, which a Stats snapshot taken while the batch
// runs cannot (the next step may be done by the time the batcher answers),
// and it times the decode phase on the device, where the client's clock
// can be late: on two cores its goroutine waits behind the forward pass's.
//
// The device actor calls Forward; take may be called from any goroutine.
type timedBackend struct {
	actors.Backend
	promptLen int32 // positions below it are prompt tokens

	mu    sync.Mutex
	steps []forwardStep
}

// forwardStep is one recorded forward pass.
type forwardStep struct {
	prompt     bool // some token was a prompt token: a prefill step
	start, end time.Time
}

func (t *timedBackend) Forward(b *model.Batch, logits []float32) error {
	prompt := slices.ContainsFunc(b.Positions, func(p int32) bool { return p < t.promptLen })
	start := time.Now()
	err := t.Backend.Forward(b, logits)
	end := time.Now()
	t.mu.Lock()
	t.steps = append(t.steps, forwardStep{prompt: prompt, start: start, end: end})
	t.mu.Unlock()
	return err
}

// take returns the steps recorded since the last call.
func (t *timedBackend) take() []forwardStep {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.steps
	t.steps = nil
	return s
}
