package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// Embeddings: an embedding is a prefill-only sequence in the same schedule
// as generation (messages.EmbedParams): the batcher marks its rows in a
// Step (messages.EmbedSpec), the device keeps their final hidden states
// (HiddenBackend) and pools them (model.Pooler) until the sequence's last
// chunk, whose StepDone carries the pooled state; the batcher then ends the
// sequence, freeing its blocks. Normalization happens here, in Embed.

// HiddenBackend is a Backend that can also give the final hidden states of
// a batch's rows, which embeddings pool.
type HiddenBackend interface {
	Backend
	// ForwardHidden is Forward, and also stores the final hidden states
	// (after the output norm) of the rows with b.Hidden set into hidden,
	// (NumHidden, HiddenSize), in batch order.
	ForwardHidden(b *model.Batch, logits, hidden []float32) error
	// HiddenSize is the width of a hidden state (the model's dim).
	HiddenSize() int
}

// ErrNoEmbeddings is wrapped by Embed's error when a device's backend
// cannot compute hidden states.
var ErrNoEmbeddings = errors.New("this runtime's devices compute no embeddings")

// EmbedOptions are the parameters of Embed; the zero value pools as the
// runtime's Config.Pooling says and normalizes to unit length.
type EmbedOptions struct {
	// Pooling is how each input's token states make one vector;
	// model.PoolingNone: Config.Pooling, else the model file's, else mean.
	Pooling model.Pooling
	// Raw leaves the pooled vectors as they are; otherwise they are scaled
	// to unit Euclidean length (llama-embedding's default).
	Raw bool
	// Priority orders the inputs among other sequences (lower runs first).
	Priority int
}

// Embed computes one embedding per input (token ids, BOS and the like
// included) and returns them with the token usage (PromptTokens). Each input
// is a prefill-only sequence in the batcher's schedule, batched with
// generation. It returns an error wrapping ErrInvalidRequest for inputs that
// can never be served (empty, ids outside the vocabulary, longer than the
// context), ErrNoEmbeddings when the devices cannot, and ctx's error when
// it is cancelled first.
func (r *Runtime) Embed(ctx context.Context, inputs [][]int32, opts EmbedOptions) ([][]float32, *messages.Usage, error) {
	pool, err := r.checkEmbed(inputs, opts)
	if err != nil {
		return nil, nil, err
	}
	out, err := r.pooled(ctx, inputs, pool, opts.Priority)
	if err != nil {
		return nil, nil, err
	}
	usage := &messages.Usage{}
	for i, v := range out {
		usage.PromptTokens += len(inputs[i])
		if !opts.Raw {
			model.Normalize(v, 2)
		}
	}
	return out, usage, nil
}

// pooled runs each input (checked) as a prefill-only sequence in the
// batcher's schedule and returns the pooled final hidden states, not
// normalized.
func (r *Runtime) pooled(ctx context.Context, inputs [][]int32, pool model.Pooling, priority int) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	done := make(chan embedDone, 1)
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil, ErrStopped
	}
	ids := make([]uint64, len(inputs))
	for i := range ids {
		ids[i] = r.nextSeq.Add(1)
	}
	e := &embedRequest{rt: r, inputs: inputs, ids: ids, pooling: pool.String(), priority: priority,
		out: make([][]float32, len(inputs)), done: done}
	pid := r.system.Root.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor { return e }), "embed-")
	r.requests[pid] = struct{}{}
	r.mu.Unlock()
	var res embedDone
	select {
	case res = <-done:
	case <-ctx.Done():
		r.system.Root.Send(pid, &messages.Cancel{Reason: context.Cause(ctx).Error()})
		res = <-done
		if res.err == nil {
			res.err = ctx.Err()
		}
	}
	return res.out, res.err
}

// EmbedPooling is the pooling Embed uses for opts: opts.Pooling, else
// Config.Pooling, else the model file's, else mean.
func (r *Runtime) EmbedPooling(opts EmbedOptions) (model.Pooling, error) {
	p := opts.Pooling
	if p == model.PoolingNone {
		p = r.cfg.Pooling
	}
	return r.model.EmbedPooling(p)
}

func (r *Runtime) checkEmbed(inputs [][]int32, opts EmbedOptions) (model.Pooling, error) {
	pool, err := r.EmbedPooling(opts)
	if err != nil {
		return 0, &RequestError{Msg: err.Error()}
	}
	if err := r.checkPooledInputs(inputs, "input", "input"); err != nil {
		return 0, err
	}
	return pool, nil
}

// checkPooledInputs checks that the devices compute hidden states and that
// every input fits: param names the request's field, what an input in the
// messages ("input": "input 3 is empty").
func (r *Runtime) checkPooledInputs(inputs [][]int32, param, what string) error {
	bad := func(format string, args ...any) error {
		return &RequestError{Param: param, Msg: fmt.Sprintf(format, args...)}
	}
	for i, be := range r.devices {
		if _, ok := be.(HiddenBackend); !ok {
			return fmt.Errorf("actors: device %d: %w", i, ErrNoEmbeddings)
		}
	}
	if len(inputs) == 0 {
		return bad("no %ss", what)
	}
	c := &r.model.Config
	for i, in := range inputs {
		switch {
		case len(in) == 0:
			return bad("%s %d is empty", what, i)
		case len(in) > r.cfg.MaxModelLen:
			return bad("%s %d has %d tokens; the context holds %d", what, i, len(in), r.cfg.MaxModelLen)
		case c.Arch == "bert" && len(in) > c.ContextLen:
			return bad("%s %d has %d tokens; the model's position embeddings cover %d", what, i, len(in), c.ContextLen)
		case c.Encoder && len(in) > r.cfg.MaxNumBatchedTokens:
			return bad("%s %d has %d tokens; an encoder computes an input in one step, of at most %d tokens (--max-num-batched-tokens)", what, i, len(in), r.cfg.MaxNumBatchedTokens)
		case (len(in)+r.cfg.BlockSize-1)/r.cfg.BlockSize > r.cfg.NumBlocks:
			return bad("%s %d has %d tokens, more than a device's %d KV blocks hold", what, i, len(in), r.cfg.NumBlocks)
		}
		for j, id := range in {
			if id < 0 || int(id) >= c.VocabSize {
				return bad("%s %d, token %d: id %d is outside the vocabulary (%d)", what, i, j, id, c.VocabSize)
			}
		}
	}
	return nil
}

// embedDone is an embedRequest's answer to Embed.
type embedDone struct {
	out [][]float32
	err error
}

// embedRequest runs one Embed call: it enters each input into the batcher's
// schedule as an embedding sequence and gathers their results; Cancel (the
// caller's context, or Runtime.Stop) cancels those still running.
type embedRequest struct {
	rt       *Runtime
	inputs   [][]int32
	ids      []uint64 // (inputs) sequence ids
	pooling  string
	priority int

	out  [][]float32 // (inputs) pooled states, nil until answered
	left int
	done chan<- embedDone
	sent bool
}

func (e *embedRequest) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		e.onStarted(ctx)
	case *messages.StepResult:
		e.onStepResult(ctx, msg)
	case *messages.Cancel:
		e.finish(ctx, fmt.Errorf("actors: embedding cancelled: %s", msg.Reason))
	case *actor.Terminated: // the batcher is gone
		e.finish(ctx, errors.New("actors: embedding: the batcher stopped"))
	case *actor.Stopped:
		e.finish(ctx, ErrStopped)
		e.rt.requestEnded(ctx.Self())
	}
}

func (e *embedRequest) onStarted(ctx actor.Context) {
	ctx.Watch(e.rt.batcher)
	e.left = len(e.inputs)
	for i, in := range e.inputs {
		n := &messages.NewSequence{Prompt: in, Priority: e.priority,
			Embed: &messages.EmbedParams{Pooling: e.pooling, Whole: e.rt.model.Config.Encoder}, LoRA: e.rt.loraSet(nil)}
		ctx.Request(e.rt.batcher, &messages.StepRequest{SeqID: e.ids[i], New: n})
	}
}

func (e *embedRequest) onStepResult(ctx actor.Context, res *messages.StepResult) {
	i := slices.Index(e.ids, res.SeqID)
	if i < 0 || e.out[i] != nil || e.sent {
		return
	}
	switch {
	case res.Err != "":
		e.finish(ctx, fmt.Errorf("actors: embedding input %d: %s", i, res.Err))
		return
	case res.Embedding == nil:
		e.finish(ctx, fmt.Errorf("actors: embedding input %d: finished (%q) with no embedding", i, res.Finish))
		return
	}
	e.out[i] = res.Embedding
	if e.left--; e.left == 0 {
		e.finish(ctx, nil)
	}
}

// finish answers Embed once, cancels the inputs still in the schedule and
// stops the actor.
func (e *embedRequest) finish(ctx actor.Context, err error) {
	if e.sent {
		return
	}
	e.sent = true
	if err != nil {
		for i, id := range e.ids {
			if e.out[i] == nil {
				ctx.Send(e.rt.batcher, &messages.Cancel{SeqID: id, Reason: "embedding ended"})
			}
		}
		e.done <- embedDone{err: err}
	} else {
		e.done <- embedDone{out: e.out}
	}
	ctx.Stop(ctx.Self())
}

// embedState is what a device keeps for embedding sequences.
type embedState struct {
	hidden  []float32                // (hidden rows, dim) the step's final hidden states
	poolers map[uint64]*model.Pooler // per embedding sequence, until its last chunk
}

// forwardHidden runs a step that has embedding rows (step.Embeds) and pools
// their hidden states.
func (d *device) forwardHidden(step *messages.Step, logits []float32) error {
	hb, ok := d.backend.(HiddenBackend)
	if !ok {
		return fmt.Errorf("device %d: %w", d.index, ErrNoEmbeddings)
	}
	b, em := &d.batch, &d.emb
	b.Hidden = b.Hidden[:0]
	n := 0
	for _, s := range step.Seq {
		want := slices.ContainsFunc(step.Embeds, func(e messages.EmbedSpec) bool { return e.Seq == s })
		b.Hidden = append(b.Hidden, want)
		if want {
			n++
		}
	}
	dim := hb.HiddenSize()
	if cap(em.hidden) < n*dim {
		em.hidden = make([]float32, n*dim)
	}
	err := hb.ForwardHidden(b, logits, em.hidden[:n*dim])
	b.Hidden = b.Hidden[:0]
	if err != nil {
		return err
	}
	if em.poolers == nil {
		em.poolers = make(map[uint64]*model.Pooler)
	}
	r := 0
	for i, s := range step.Seq {
		j := slices.IndexFunc(step.Embeds, func(e messages.EmbedSpec) bool { return e.Seq == s })
		if j < 0 {
			continue
		}
		spec := &step.Embeds[j]
		p := em.poolers[spec.SeqID]
		if p == nil {
			pt, err := model.ParsePooling(spec.Pooling)
			if err != nil {
				return fmt.Errorf("device %d: sequence %d: %w", d.index, spec.SeqID, err)
			}
			p = &model.Pooler{Type: pt}
			em.poolers[spec.SeqID] = p
		}
		p.Add(int(step.Positions[i]), em.hidden[r*dim:(r+1)*dim])
		r++
	}
	return nil
}

// pooled returns, per sample row of step, the pooled state of the
// embedding sequences that step ended (nil for the others), or nil when it
// ended none.
func (d *device) pooled(step *messages.Step) [][]float32 {
	var out [][]float32
	for r, spec := range step.Samples {
		p, ok := d.emb.poolers[spec.SeqID]
		if !ok || !slices.ContainsFunc(step.Embeds, func(e messages.EmbedSpec) bool { return e.SeqID == spec.SeqID }) {
			continue
		}
		if out == nil {
			out = make([][]float32, len(step.Samples))
		}
		out[r] = p.Result()
		delete(d.emb.poolers, spec.SeqID)
	}
	return out
}

// embedSpec marks chunk i of step, of sequence id, as an embedding's when
// it is one.
func (b *batcher) embedSpec(step *messages.Step, i int, id uint64) {
	if e := b.seqs[id]; e.new.Embed != nil {
		step.Embeds = append(step.Embeds, messages.EmbedSpec{Seq: int32(i), SeqID: id, Pooling: e.new.Embed.Pooling})
	}
}
