package cluster

import (
	"sync/atomic"
	"time"
)

// PipelineStats are a pipeline head's counters since it started.
type PipelineStats struct {
	// Steps are the runtime's steps that succeeded, Failed those that did
	// not, MicroBatches what the steps were cut into, Tokens their rows.
	Steps, Failed, MicroBatches, Tokens int64
	// StepTime is the time of the steps (each from its first micro-batch
	// on stage 0 to its last logits back).
	StepTime time.Duration
	Stages   []StageStats // by stage
}

// StageStats are one stage's share of a pipeline's counters.
type StageStats struct {
	Lo, Hi  int    // its layers: [Lo, Hi)
	Address string // its member's; "" when it has none (the head: its own)
	// ComputeTime is the time the stage computed (its layers over every
	// micro-batch; for stage 0, the embedding too). BubbleTime is, over
	// the steps that succeeded, the step's time less the stage's compute
	// in it: waiting for the other stages and the transfers.
	ComputeTime, BubbleTime time.Duration
	// BytesIn is what the stage received on the wire: the hidden rows from
	// the stage before (with the batch), or for stage 0 the logits from the
	// last stage. One hop's messages are counted by its receiver.
	BytesIn int64
	// Rejoins counts members that took the stage back after it was lost.
	Rejoins int64
}

// Stats returns the head's counters.
func (p *Pipeline) Stats() PipelineStats {
	s := &p.stats
	st := PipelineStats{Steps: s.steps.Load(), Failed: s.failed.Load(), MicroBatches: s.microBatches.Load(), Tokens: s.tokens.Load(),
		StepTime: time.Duration(s.stepNanos.Load())}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range s.stages {
		c := &s.stages[i]
		ss := StageStats{Lo: p.plan[i].Lo, Hi: p.plan[i].Hi, ComputeTime: time.Duration(c.computeNanos.Load()), BubbleTime: time.Duration(c.bubbleNanos.Load()), BytesIn: c.bytesIn.Load(), Rejoins: c.rejoins.Load()}
		if m := p.members[i]; m != nil {
			ss.Address = m.Address
		} else if i == 0 && p.system != nil {
			ss.Address = p.system.Address()
		}
		st.Stages = append(st.Stages, ss)
	}
	return st
}

// pipelineCounters are the atomics behind PipelineStats.
type pipelineCounters struct {
	steps, failed, microBatches, tokens, stepNanos atomic.Int64
	stages                                         []stageCounters
}

type stageCounters struct {
	computeNanos, bubbleNanos, bytesIn, rejoins atomic.Int64
}

func (s *pipelineCounters) init(stages int) { s.stages = make([]stageCounters, stages) }

// step counts a step of tokens rows that took d, in which the stages
// computed for compute (by stage).
func (s *pipelineCounters) step(d time.Duration, tokens int, compute []int64, ok bool) {
	if !ok {
		s.failed.Add(1)
		return
	}
	s.steps.Add(1)
	s.tokens.Add(int64(tokens))
	s.stepNanos.Add(d.Nanoseconds())
	for i, c := range compute {
		s.stages[i].bubbleNanos.Add(max(0, d.Nanoseconds()-c))
	}
}

// done counts a micro-batch's answer: each further stage's compute time
// (added to compute, by stage) and received bytes, carried along the
// route, and the logits' message.
func (s *pipelineCounters) done(d *stageDone, compute []int64) {
	for i, c := range d.Costs { // stage i+1's; the head counted what it sent stage 1
		if i+1 < len(s.stages) {
			s.stages[i+1].computeNanos.Add(c.Nanos)
			compute[i+1] += c.Nanos
			if i > 0 {
				s.stages[i+1].bytesIn.Add(c.InBytes)
			}
		}
	}
	s.stages[0].bytesIn.Add(int64(d.size))
}
