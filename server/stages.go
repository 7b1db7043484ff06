package server

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/troupe-llm/troupe/actors/cluster"
)

// A pipeline head's part of /metrics and of the live view (Config.Pipeline:
// the model split into stages over members, actors/cluster).

// stageCollector reads a pipeline head's counters at scrape time.
type stageCollector struct {
	p                                  *cluster.Pipeline
	steps, failed, micro, stepTime     *prometheus.Desc
	compute, bubble, wire, rejoins, up *prometheus.Desc
}

func newStageCollector(model string, p *cluster.Pipeline) *stageCollector {
	labels := prometheus.Labels{"model_name": model}
	desc := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc("troupe:pipeline_"+name, help, vars, labels)
	}
	return &stageCollector{p: p,
		steps:    desc("steps_total", "Steps the pipeline ran."),
		failed:   desc("failed_steps_total", "Steps the pipeline failed (a stage lost, or stale KV after a rejoin)."),
		micro:    desc("micro_batches_total", "Micro-batches the steps were cut into."),
		stepTime: desc("step_seconds_total", "Time of the steps, first micro-batch in to last logits back."),
		compute:  desc("stage_compute_seconds_total", "Time each stage computed its layers.", "stage"),
		bubble:   desc("bubble_seconds_total", "Time of the steps each stage did not compute (waiting for the others and the transfers).", "stage"),
		wire:     desc("wire_bytes_total", "Bytes of the messages between members (hidden rows to the next stage; logits from the last to the head).", "from_stage", "to_stage"),
		rejoins:  desc("rejoins_total", "Members that took a lost stage back.", "stage"),
		up:       desc("stage_up", "1 while the stage has a member.", "stage"),
	}
}

func (c *stageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.steps, c.failed, c.micro, c.stepTime, c.compute, c.bubble, c.wire, c.rejoins, c.up} {
		ch <- d
	}
}

func (c *stageCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.p.Stats()
	count := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	count(c.steps, float64(st.Steps))
	count(c.failed, float64(st.Failed))
	count(c.micro, float64(st.MicroBatches))
	count(c.stepTime, st.StepTime.Seconds())
	n := len(st.Stages)
	for i, s := range st.Stages {
		stage := strconv.Itoa(i)
		count(c.compute, s.ComputeTime.Seconds(), stage)
		count(c.bubble, s.BubbleTime.Seconds(), stage)
		count(c.wire, float64(s.BytesIn), strconv.Itoa((i+n-1)%n), stage)
		count(c.rejoins, float64(s.Rejoins), stage)
		up := 0.0
		if s.Address != "" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, stage)
	}
}

// livePipeline is the pipeline part of a liveEvent: its stages, with
// rates and means over the interval.
type livePipeline struct {
	StepsPerSec  float64     `json:"steps_per_s"`
	MicroPerStep float64     `json:"micro_batches_per_step"`
	BytesPerSec  float64     `json:"wire_bytes_per_s"` // every hop together
	Failed       int64       `json:"failed_steps"`
	Stages       []liveStage `json:"stages"`
}

// liveStage is one stage of a livePipeline.
type liveStage struct {
	Stage       int     `json:"stage"`
	Layers      string  `json:"layers"`
	Address     string  `json:"address"` // "": no member now
	StepMs      float64 `json:"step_ms"` // mean compute per step
	Busy        float64 `json:"busy"`    // compute / the steps' time (1 - bubble share)
	BytesPerSec float64 `json:"wire_bytes_in_per_s"`
	Rejoins     int64   `json:"rejoins"`
}

// newLivePipeline is the pipeline part of the event of cur (prev: the
// stats before, nil for none; dt seconds between them).
func newLivePipeline(prev, cur *cluster.PipelineStats, dt float64) *livePipeline {
	lp := &livePipeline{Failed: cur.Failed, Stages: []liveStage{}}
	var steps, stepTime float64
	if prev != nil && dt > 0 {
		steps = float64(cur.Steps - prev.Steps)
		stepTime = (cur.StepTime - prev.StepTime).Seconds()
		lp.StepsPerSec = steps / dt
		if steps > 0 {
			lp.MicroPerStep = float64(cur.MicroBatches-prev.MicroBatches) / steps
		}
	}
	for i, s := range cur.Stages {
		ls := liveStage{Stage: i, Layers: fmt.Sprintf("layers [%d, %d)", s.Lo, s.Hi), Address: s.Address, Rejoins: s.Rejoins}
		if prev != nil && dt > 0 && i < len(prev.Stages) {
			p := prev.Stages[i]
			compute := (s.ComputeTime - p.ComputeTime).Seconds()
			if steps > 0 {
				ls.StepMs = compute / steps * 1e3
			}
			if stepTime > 0 {
				ls.Busy = min(1, compute/stepTime)
			}
			ls.BytesPerSec = float64(s.BytesIn-p.BytesIn) / dt
			lp.BytesPerSec += ls.BytesPerSec
		}
		lp.Stages = append(lp.Stages, ls)
	}
	return lp
}
