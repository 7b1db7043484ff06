package actors

import (
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors/sched"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/sample"
)

// batcher owns the schedule of its devices (one sched.Scheduler each, over
// that device's blocks) and turns sequences' step requests into micro-batches:
// a device's next step fires when every running sequence has asked for it or
// the budget is full (size trigger), or when the window has passed since the
// first ready work (window trigger). One step is in flight per device; the
// requests for the next are gathered while it computes. Devices are its
// children: it supervises them and re-queues the step of one that failed.
type batcher struct {
	cfg      Config
	backends []Backend
	isEOG    func(int32) bool
	infill   func() *sample.InfillVocab // the devices' infill sampler vocabulary, built on first use

	devices []*deviceSlot
	seqs    map[uint64]*seqEntry
	nextID  uint64 // step ids, unique over devices
	stats   messages.Stats
	stopped bool

	kv       kvTransfers     // K/V blocks moving out and in (kvtransfer.go)
	outcomes []sched.Outcome // scratch for Done
	sampled  []int32         // scratch: the step's tokens, per sample row
}

// deviceSlot is the batcher's view of one device.
type deviceSlot struct {
	index    int
	pid      *actor.PID
	sched    *sched.Scheduler
	step     *messages.Step // in flight, nil when idle
	stepSeqs []uint64       // the sequences computed by step
	timer    *time.Timer    // window trigger, nil when not armed
	timerGen uint64
	dead     bool
	counts   messages.DeviceStats // the step counters of Stats.Devices
}

// seqEntry is what the batcher keeps of a sequence besides its sched.Seq.
type seqEntry struct {
	pid      *actor.PID
	dev      *deviceSlot
	new      *messages.NewSequence
	stopIDs  []int32
	mask     []uint64      // grammar mask of the next sample (the latest request's); nil: none
	dmasks   [][]uint64    // the masks of the samples after the first of a draft's run (StepRequest.DraftMasks)
	notified bool          // NumCachedTokens sent with the first result
	added    time.Time     // entered the schedule
	queued   time.Duration // from added to first running; 0 until then
	// A draft drawn from a draft model's q (spec.go): its tokens, the
	// look-ahead last, and the distributions they were drawn from
	// (StepRequest.DraftQ); nil: none, or one-hot.
	dx []int32
	dq []messages.DraftDist
}

// windowElapsed is the batcher's timer firing for a device (gen guards
// against a timer disarmed after it fired). Batcher -> itself.
type windowElapsed struct {
	dev int
	gen uint64
}

func newBatcher(cfg Config, backends []Backend, isEOG func(int32) bool, infill func() *sample.InfillVocab) actor.Producer {
	return func() actor.Actor {
		return &batcher{cfg: cfg, backends: backends, isEOG: isEOG, infill: infill, seqs: make(map[uint64]*seqEntry)}
	}
}

func (b *batcher) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		b.onStarted(ctx)
	case *messages.StepRequest:
		b.onStepRequest(ctx, msg)
	case *messages.Cancel:
		b.onCancel(ctx, msg)
	case *messages.StepDone:
		b.onStepDone(ctx, msg)
	case *messages.DeviceRestarted:
		b.onDeviceRestarted(ctx, msg)
	case *windowElapsed:
		b.onWindow(ctx, msg)
	case *messages.GetStats:
		ctx.Respond(b.snapshot())
	case *messages.CachedTokens:
		b.onCachedTokens(ctx, msg)
	case *messages.ExportKV:
		b.onExportKV(ctx, msg)
	case *kvReadDone:
		b.onKVReadDone(ctx, msg)
	case *messages.ImportKV:
		b.onImportKV(ctx, msg)
	case *actor.Terminated:
		b.onTerminated(ctx, msg)
	case *actor.Stopping:
		b.onStopping()
	}
}

func (b *batcher) onStarted(ctx actor.Context) {
	b.devices = b.devices[:0]
	for i, be := range b.backends {
		s, err := sched.New(b.cfg.schedConfig(be))
		if err != nil {
			panic(fmt.Sprintf("batcher: device %d: %v", i, err)) // Start validated the config
		}
		props := actor.PropsFromProducer(newDevice(i, be, b.infill, b.cfg.LoRA))
		pid := ctx.SpawnPrefix(props, fmt.Sprintf("device%d-", i))
		b.devices = append(b.devices, &deviceSlot{index: i, pid: pid, sched: s})
	}
}

func (b *batcher) onStepRequest(ctx actor.Context, req *messages.StepRequest) {
	if req.New == nil {
		if e, ok := b.seqs[req.SeqID]; ok {
			e.mask = req.Mask
			b.takeDraft(e, req) // spec.go
			if e.dev.sched.Ready(kv.SeqID(req.SeqID)) {
				b.maybeDispatch(ctx, e.dev)
			}
		}
		return
	}
	if _, ok := b.seqs[req.SeqID]; ok {
		ctx.Send(ctx.Sender(), &messages.StepResult{SeqID: req.SeqID, Finish: messages.FinishError,
			Err: fmt.Sprintf("sequence %d is already scheduled", req.SeqID)})
		return
	}
	salt := loraSalt(req.New.LoRA)
	prompt := imageKeys(req.New.Prompt, req.New.Images) // images.go
	d := b.place(salt, prompt)
	if d == nil {
		b.stats.Rejected++
		ctx.Send(ctx.Sender(), &messages.StepResult{SeqID: req.SeqID, Finish: messages.FinishError, Err: "no device is running"})
		return
	}
	n := req.New
	var q *sched.Seq
	var err error
	if n.Embed != nil { // embed.go
		q, err = d.sched.AddEmbedding(kv.SeqID(req.SeqID), prompt, n.Priority, n.Embed.Whole)
	} else {
		q, err = d.sched.Add(kv.SeqID(req.SeqID), prompt, n.MaxTokens, n.Priority)
	}
	if err != nil {
		ctx.Send(ctx.Sender(), &messages.StepResult{SeqID: req.SeqID, Finish: messages.FinishError, Err: err.Error()})
		return
	}
	q.Salt = salt                          // its adapters' K/V: shared only under the same set (lora.go)
	q.Spans = bidirectionalSpans(n.Images) // images.go
	b.seqs[req.SeqID] = &seqEntry{pid: ctx.Sender(), dev: d, new: n, stopIDs: n.StopTokenIDs, mask: req.Mask, added: time.Now()}
	b.maybeDispatch(ctx, d)
}

// place picks the device for a new sequence: the one whose prefix cache
// holds most of the prompt (under the sequence's salt), then the least
// loaded.
func (b *batcher) place(salt uint64, prompt []int32) *deviceSlot {
	var best *deviceSlot
	bestCached := -1
	for _, d := range b.devices {
		if d.dead {
			continue
		}
		c := d.sched.NumCachedTokens(salt, prompt)
		if c > bestCached || (c == bestCached && d.sched.Load() < best.sched.Load()) {
			best, bestCached = d, c
		}
	}
	return best
}

func (b *batcher) onCancel(ctx actor.Context, c *messages.Cancel) {
	e, ok := b.seqs[c.SeqID]
	if !ok {
		return
	}
	e.dev.sched.Finish(kv.SeqID(c.SeqID))
	b.forget(ctx, e.dev, []uint64{c.SeqID})
	b.maybeDispatch(ctx, e.dev)
}

// forget drops finished sequences and tells their device.
func (b *batcher) forget(ctx actor.Context, d *deviceSlot, ids []uint64) {
	if len(ids) == 0 {
		return
	}
	for _, id := range ids {
		delete(b.seqs, id)
	}
	if !d.dead {
		ctx.Send(d.pid, &messages.Free{SeqIDs: ids})
	}
}

// maybeDispatch sends d its next step if it is idle and the size trigger
// fires, or arms the window timer when work is ready but the trigger has not
// fired.
func (b *batcher) maybeDispatch(ctx actor.Context, d *deviceSlot) {
	if d.dead || d.step != nil || b.stopped {
		return
	}
	fire, pending := d.sched.Trigger()
	switch {
	case fire:
		b.dispatch(ctx, d)
	case pending && d.timer == nil:
		d.timerGen++
		gen, self, root := d.timerGen, ctx.Self(), ctx.ActorSystem().Root
		d.timer = time.AfterFunc(b.cfg.Window, func() { root.Send(self, &windowElapsed{dev: d.index, gen: gen}) })
	case !pending:
		b.disarm(d)
	}
}

func (b *batcher) onWindow(ctx actor.Context, w *windowElapsed) {
	d := b.devices[w.dev]
	if w.gen != d.timerGen || d.timer == nil {
		return
	}
	d.timer = nil
	if !d.dead && d.step == nil {
		b.dispatch(ctx, d)
	}
}

func (b *batcher) disarm(d *deviceSlot) {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
		d.timerGen++
	}
}

// dispatch plans d's next step and sends it: swap copies first, then the
// step; preempted sequences are told.
func (b *batcher) dispatch(ctx actor.Context, d *deviceSlot) {
	b.disarm(d)
	p := d.sched.Schedule()
	if p == nil {
		return
	}
	for _, q := range p.Preempted {
		mode := messages.ModeRecompute
		if q.Status == sched.Swapped {
			mode = messages.ModeSwap
		}
		ctx.Send(b.seqs[uint64(q.ID)].pid, &messages.Preempted{SeqID: uint64(q.ID), Mode: mode})
	}
	if len(p.SwapOut) > 0 {
		ctx.Send(d.pid, &messages.SwapOut{Blocks: slices.Clone(p.SwapOut)})
	}
	if len(p.SwapIn) > 0 {
		ctx.Send(d.pid, &messages.SwapIn{Blocks: slices.Clone(p.SwapIn)})
	}
	if len(p.Chunks) == 0 && len(p.SwapOut) == 0 { // only recompute preemptions: nothing for the device to do
		d.sched.Done(nil, nil, nil)
		b.maybeDispatch(ctx, d)
		return
	}
	b.nextID++
	step := &messages.Step{StepID: b.nextID}
	d.stepSeqs = d.stepSeqs[:0]
	now := time.Now()
	for i, c := range p.Chunks {
		q := c.Seq
		d.stepSeqs = append(d.stepSeqs, uint64(q.ID))
		if e := b.seqs[uint64(q.ID)]; e.queued == 0 {
			e.queued = max(now.Sub(e.added), 1)
		}
		step.BlockTables = append(step.BlockTables, slices.Clone(d.sched.BlockTable(q)))
		if len(b.cfg.LoRA) > 0 { // every sequence's set, empty ones too (lora.go)
			step.LoRA = append(step.LoRA, b.seqs[uint64(q.ID)].new.LoRA)
		}
		b.embedSpec(step, i, uint64(q.ID))
		for pos := c.Start; pos < c.End; pos++ {
			addRopePosition(step, b.seqs[uint64(q.ID)].new, pos) // images.go
			if tok := q.Tokens[pos]; tok >= 0 {
				step.Tokens = append(step.Tokens, tok)
				padImageInputs(step) // images.go
			} else { // an image row (images.go)
				addImageInput(step, b.seqs[uint64(q.ID)].new, pos, c.End)
			}
			step.Positions = append(step.Positions, int32(pos))
			step.Seq = append(step.Seq, int32(i))
			step.Logits = append(step.Logits, c.Logits && pos == c.End-1)
		}
		for j, tok := range q.Draft[:c.Draft] { // speculative: spec.go
			addRopePosition(step, b.seqs[uint64(q.ID)].new, c.End+j)
			step.Tokens = append(step.Tokens, tok)
			padImageInputs(step)
			step.Positions = append(step.Positions, int32(c.End+j))
			step.Seq = append(step.Seq, int32(i))
			step.Logits = append(step.Logits, true)
		}
		if c.Logits {
			step.Samples = b.appendSampleSpecs(step.Samples, q, c.Draft)
		}
	}
	d.step = step
	b.stats.Steps++
	b.stats.StepTokens += int64(len(step.Tokens))
	d.counts.Steps++
	d.counts.StepTokens += int64(len(step.Tokens))
	d.counts.StepSeqs += int64(len(step.BlockTables))
	ctx.Send(d.pid, step)
}

// historyWindow is how many of a sequence's latest tokens its penalties and
// DRY look at (0: all of them), and whether they look at any.
func historyWindow(p *messages.SamplingParams) (n int, ok bool) {
	penalties := p.RepetitionPenalty != 0 && p.RepetitionPenalty != 1 || p.PresencePenalty != 0 || p.FrequencyPenalty != 0
	dry := p.DryMultiplier != 0 && p.DryBase >= 1 && p.DryPenaltyLastN != 0
	switch {
	case penalties && dry:
		if p.PenaltyLastN <= 0 || p.DryPenaltyLastN < 0 {
			return 0, true
		}
		return max(p.PenaltyLastN, p.DryPenaltyLastN), true
	case penalties:
		return max(p.PenaltyLastN, 0), true
	case dry:
		return max(p.DryPenaltyLastN, 0), true
	}
	return 0, false
}

func (b *batcher) onStepDone(ctx actor.Context, done *messages.StepDone) {
	d := b.slotOf(done.StepID)
	if d == nil {
		return // a step already given up (its device restarted)
	}
	step := d.step
	d.step = nil
	b.stats.ForwardNanos += done.ForwardNanos
	d.counts.ForwardNanos += done.ForwardNanos
	if done.Err != "" || len(done.Tokens) != len(step.Samples) {
		b.failStep(ctx, d, fmt.Sprintf("device %d: step failed: %s", d.index, done.Err))
		return
	}
	sampled := b.sampled[:0]
	for r, t := range done.Tokens {
		sampled = append(sampled, t.ID)
		if done.Errs != nil && done.Errs[r] != "" {
			sampled[r] = -1 // stop() ends it with an error below
		}
	}
	stop := func(q *sched.Seq, tok int32) bool {
		e := b.seqs[uint64(q.ID)]
		return tok < 0 || (!e.new.IgnoreEOS && b.isEOG(tok)) || slices.Contains(e.stopIDs, tok) || e.new.Embed != nil
	}
	b.sampled = sampled
	b.outcomes = d.sched.Done(sampled, stop, b.outcomes[:0])
	var finished []uint64
	for _, o := range b.outcomes {
		d.counts.Samples += int64(o.N) // a speculative run gives several
		res := b.stepResult(done, o)
		e := b.seqs[res.SeqID]
		if !e.notified {
			e.notified, res.NumCachedTokens, res.QueueNanos = true, o.Seq.NumCachedTokens, e.queued.Nanoseconds()
		}
		ctx.Send(e.pid, res)
		if o.Finish != "" {
			finished = append(finished, res.SeqID)
		}
	}
	b.forget(ctx, d, finished)
	b.maybeDispatch(ctx, d)
}

func (b *batcher) slotOf(stepID uint64) *deviceSlot {
	for _, d := range b.devices {
		if d.step != nil && d.step.StepID == stepID {
			return d
		}
	}
	return nil
}

// failStep ends the sequences a step computed with an error when the step
// failed as a whole (the device answered; running it again would fail
// again). Sequences the plan only preempted stay queued.
func (b *batcher) failStep(ctx actor.Context, d *deviceSlot, reason string) {
	d.sched.Fail()
	for _, id := range d.stepSeqs {
		b.endWithError(ctx, d, id, reason)
	}
	b.maybeDispatch(ctx, d)
}

func (b *batcher) endWithError(ctx actor.Context, d *deviceSlot, id uint64, reason string) {
	e, ok := b.seqs[id]
	if !ok {
		return
	}
	d.sched.Finish(kv.SeqID(id))
	ctx.Send(e.pid, &messages.StepResult{SeqID: id, Finish: messages.FinishError, Err: reason})
	b.forget(ctx, d, []uint64{id})
}

// onDeviceRestarted re-queues the step the device lost: its sequences are
// recomputed from their tokens, so none is lost or answered twice.
func (b *batcher) onDeviceRestarted(ctx actor.Context, msg *messages.DeviceRestarted) {
	if msg.Device < 0 || msg.Device >= len(b.devices) {
		return
	}
	d := b.devices[msg.Device]
	b.stats.DeviceRestarts++
	if d.step != nil {
		d.step = nil
		for _, q := range d.sched.Fail() {
			ctx.Send(b.seqs[uint64(q.ID)].pid, &messages.Preempted{SeqID: uint64(q.ID), Mode: messages.ModeRecompute})
		}
	}
	b.maybeDispatch(ctx, d)
}

// onTerminated handles a device its supervisor gave up on: its sequences end
// with an error, and new ones go to the other devices.
func (b *batcher) onTerminated(ctx actor.Context, t *actor.Terminated) {
	if b.stopped {
		return
	}
	for _, d := range b.devices {
		if !d.pid.Equal(t.Who) || d.dead {
			continue
		}
		d.dead = true
		b.disarm(d)
		for id, e := range b.seqs {
			if e.dev == d {
				b.endWithError(ctx, d, id, fmt.Sprintf("device %d stopped after repeated failures", d.index))
			}
		}
	}
}

func (b *batcher) onStopping() {
	b.stopped = true
	for _, d := range b.devices {
		b.disarm(d)
	}
}

func (b *batcher) snapshot() *messages.Stats {
	st := b.stats
	st.Devices = make([]messages.DeviceStats, len(b.devices))
	for i, d := range b.devices {
		d.sched.Stats(&st)
		var one messages.Stats
		d.sched.Stats(&one)
		ds := d.counts
		ds.Running, ds.Waiting, ds.Swapped = one.Running, one.Waiting, one.Swapped
		ds.NumBlocks, ds.NumFreeBlocks, ds.NumCachedBlocks = one.NumBlocks, one.NumFreeBlocks, one.NumCachedBlocks
		ds.Preemptions, ds.Dead = one.Preemptions, d.dead
		st.Devices[i] = ds
	}
	return &st
}
