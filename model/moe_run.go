package model

import (
	"github.com/troupe-llm/troupe/compute"
)

// How a step's routed experts are spread over the State's workers. A
// product of a few rows is too small to split over workers: the workers
// would meet after every one of the hundreds of such products of a step
// (three per expert). So experts with fewer than bigExpert rows run whole,
// one worker each, on MatMulers of one thread, in contiguous groups of
// about equal rows; the others run one after another, each product split
// over the workers (State.mm). Every product is per row either way, so
// the split does not change any bit of the result.
const bigExpert = 16

// expertBuf holds one expert's gathered rows and activations.
type expertBuf struct {
	xg   []float32 // (rows, dim) the gathered inputs
	gate []float32 // (rows, ffn)
	up   []float32 // (rows, ffn)
	yg   []float32 // (rows, dim) the outputs
}

func (b *expertBuf) reserve(rows, dim, ff int) {
	if len(b.xg) < rows*dim || len(b.gate) < rows*ff {
		b.xg = make([]float32, rows*dim)
		b.gate = make([]float32, rows*ff)
		b.up = make([]float32, rows*ff)
		b.yg = make([]float32, rows*dim)
	}
}

// expertWorker is one worker's share of the small experts.
type expertWorker struct {
	mm      *compute.MatMuler // one thread
	buf     expertBuf
	experts []int32 // the experts it runs this layer
	err     error
}

// expertJob is the layer the workers run, as they see it.
type expertJob struct {
	m *Model
	w *MoEWeights
}

// runExperts runs every routed expert of the step over its gathered rows
// (s.moe.order) and writes each output row to s.moe.ys.
func (m *Model) runExperts(s *State, w *MoEWeights, n int) error {
	c, ms := &m.Config, &s.moe
	small, total := ms.small[:0], 0
	for e := range c.Experts {
		rows := ms.start[e+1] - ms.start[e]
		switch {
		case rows == 0: // not read
		case rows >= bigExpert || s.workers == 1:
			if err := m.runExpert(s.mm, &ms.main, s, w, e); err != nil {
				return err
			}
		default:
			small = append(small, int32(e))
			total += rows
		}
		if rows > 0 {
			ms.expertRuns++
		}
	}
	ms.small = small
	if len(small) == 0 {
		return nil
	}
	ms.setupWorkers(s, c)
	// Contiguous groups of about total/workers rows each.
	per, wi, acc := (total+s.workers-1)/s.workers, 0, 0
	for i := range ms.workers {
		ms.workers[i].experts = ms.workers[i].experts[:0]
	}
	for _, e := range small {
		if acc >= per*(wi+1) && wi < s.workers-1 {
			wi++
		}
		ms.workers[wi].experts = append(ms.workers[wi].experts, e)
		acc += ms.start[e+1] - ms.start[e]
	}
	ms.job = expertJob{m: m, w: w}
	s.mm.Parallel(s.workers, ms.share)
	ms.job = expertJob{}
	for i := range ms.workers {
		if err := ms.workers[i].err; err != nil {
			return err
		}
	}
	return nil
}

// setupWorkers makes the workers' MatMulers, buffers and shared body once
// per State (and grows the buffers to the step). The workers are s.mm's
// crew (compute.MatMuler.Parallel): its helpers are spinning from the
// router's product, so a share starts at once.
func (ms *moeScratch) setupWorkers(s *State, c *Config) {
	if len(ms.workers) != s.workers {
		ms.workers = make([]expertWorker, s.workers)
		for wi := range ms.workers {
			ms.workers[wi].mm = compute.NewMatMuler(1)
		}
		ms.share = func(wi int) { ms.runWorker(s, wi) }
	}
	for wi := range ms.workers {
		ms.workers[wi].buf.reserve(bigExpert, c.Dim, c.ExpertFFNDim)
	}
}

// runWorker runs worker wi's experts.
func (ms *moeScratch) runWorker(s *State, wi int) {
	wk := &ms.workers[wi]
	wk.err = nil
	for _, e := range wk.experts {
		if wk.err = ms.job.m.runExpert(wk.mm, &wk.buf, s, ms.job.w, int(e)); wk.err != nil {
			return
		}
	}
}

// runExpert gathers expert e's rows into b, runs its FFN with mm and
// scatters the outputs to s.moe.ys.
func (m *Model) runExpert(mm *compute.MatMuler, b *expertBuf, s *State, w *MoEWeights, e int) error {
	c, ms := &m.Config, &s.moe
	dim, K := c.Dim, c.ExpertsUsed
	run := ms.order[ms.start[e]:ms.start[e+1]]
	for g, r := range run {
		i := int(r) / K
		copy(b.xg[g*dim:(g+1)*dim], s.xb[i*dim:(i+1)*dim])
	}
	if err := m.expertFFN(mm, b, len(run), w, e); err != nil {
		return err
	}
	for g, r := range run {
		copy(ms.ys[int(r)*dim:(int(r)+1)*dim], b.yg[g*dim:(g+1)*dim])
	}
	return nil
}
