package actors

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/lora"
	"github.com/troupe-llm/troupe/model/sample"
)

// device owns a Backend (weights and KV blocks) and runs the steps its
// batcher (its parent and supervisor) sends: swap copies, then the forward
// pass and sampling, answering StepDone. It decides no policy.
type device struct {
	index     int
	backend   Backend
	restarted bool // this incarnation follows a failure

	batch    model.Batch
	logits   []float32                  // (n_logits, vocab)
	greedy   []bool                     // (n_logits) rows a GreedyBackend picks itself
	ids      []int32                    // (n_logits) its picks; -1: sample from logits
	samplers map[uint64]*sample.Sampler // per sequence, reseeded per draw
	infill   func() *sample.InfillVocab // the infill sampler's vocabulary
	emb      embedState                 // embedding sequences (embed.go)
	adapters []lora.Scaled              // the runtime's LoRA adapters (Config.LoRA), which steps' LoRA ids index
}

// newDevice returns the producer of device index over backend. The backend
// is shared by every incarnation: a restart keeps the KV blocks.
func newDevice(index int, backend Backend, infill func() *sample.InfillVocab, adapters []lora.Scaled) actor.Producer {
	incarnations := 0
	return func() actor.Actor {
		incarnations++
		return &device{index: index, backend: backend, restarted: incarnations > 1,
			samplers: make(map[uint64]*sample.Sampler), infill: infill, adapters: adapters}
	}
}

func (d *device) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		d.onStarted(ctx)
	case *messages.SwapOut:
		d.onSwap(ctx, d.backend.SwapOut, msg.Blocks)
	case *messages.SwapIn:
		d.onSwap(ctx, d.backend.SwapIn, msg.Blocks)
	case *messages.Step:
		d.onStep(ctx, msg)
	case *messages.Free:
		d.onFree(msg)
	case *kvRead:
		d.onKVRead(ctx, msg)
	case *kvWrite:
		d.onKVWrite(msg)
	}
}

func (d *device) onStarted(ctx actor.Context) {
	if d.restarted {
		ctx.Send(ctx.Parent(), &messages.DeviceRestarted{Device: d.index, Reason: "restarted by its supervisor after a failure"})
	}
}

// onSwap copies blocks; a failed copy is a broken invariant (the batcher
// computed the block ids), so it panics and the supervisor steps in.
func (d *device) onSwap(ctx actor.Context, swap func([]messages.BlockCopy) error, blocks []messages.BlockCopy) {
	if err := swap(blocks); err != nil {
		panic(fmt.Sprintf("device %d: %v", d.index, err))
	}
}

func (d *device) onStep(ctx actor.Context, step *messages.Step) {
	start := time.Now()
	done := &messages.StepDone{StepID: step.StepID}
	if err := d.forward(step); err != nil {
		done.Err = err.Error()
	} else {
		done.Tokens, done.Errs = d.sample(step)
		done.Embeddings = d.pooled(step)
	}
	done.ForwardNanos = time.Since(start).Nanoseconds()
	ctx.Send(ctx.Parent(), done)
}

func (d *device) forward(step *messages.Step) error {
	b := &d.batch
	b.Tokens, b.Positions, b.Seq, b.Logits, b.BlockTables = step.Tokens, step.Positions, step.Seq, step.Logits, step.BlockTables
	b.Embeds, b.AttendTo = step.Inputs, step.AttendTo // image rows, bidirectional spans
	b.RopePositions = step.RopePositions              // M-RoPE positions (images.go)
	if err := loraBatch(b, step.LoRA, d.adapters); err != nil {
		return fmt.Errorf("device %d: step %d: %w", d.index, step.StepID, err)
	}
	if n := b.NumLogits(); n != len(step.Samples) {
		return fmt.Errorf("device %d: step %d has %d logit rows and %d samples", d.index, step.StepID, n, len(step.Samples))
	}
	vocab, n := d.backend.VocabSize(), len(step.Samples)
	if cap(d.logits) < n*vocab {
		d.logits = make([]float32, n*vocab)
	}
	d.ids = d.ids[:0]
	if len(step.Embeds) > 0 { // embeddings: see embed.go
		return d.forwardHidden(step, d.logits[:n*vocab])
	}
	if gb, ok := d.backend.(GreedyBackend); ok {
		d.greedy = d.greedy[:0]
		for _, spec := range step.Samples {
			d.greedy = append(d.greedy, spec.Mask == nil && SampleParams(spec.Params).Argmax()) // a masked row is sampled here
			d.ids = append(d.ids, -1)
		}
		return gb.ForwardGreedy(b, d.greedy, d.logits[:n*vocab], d.ids)
	}
	return d.backend.Forward(b, d.logits[:n*vocab])
}

// sample draws one token per logits row, with each sequence's parameters.
// A row that cannot be sampled (every token banned, bad logits) gets an
// error of its own; the others are unaffected. In a speculative run, the
// rows after the first whose token is not its Draft are not sampled (ID -1).
func (d *device) sample(step *messages.Step) ([]messages.Token, []string) {
	toks := make([]messages.Token, len(step.Samples))
	var errs []string
	cut := false // the run being read was cut short
	for r, spec := range step.Samples {
		if cut {
			toks[r].ID = -1
			cut = spec.Verify
			continue
		}
		tok, err := d.sampleRow(r, spec)
		if err != nil {
			if errs == nil {
				errs = make([]string, len(step.Samples))
			}
			errs[r] = err.Error()
		}
		toks[r] = tok
		cut = spec.Verify && (err != nil || tok.ID != spec.Draft)
	}
	return toks, errs
}

// sampleRow draws the token of logits row r.
func (d *device) sampleRow(r int, spec messages.SampleSpec) (messages.Token, error) {
	if r < len(d.ids) && d.ids[r] >= 0 { // the backend picked it
		return messages.Token{ID: d.ids[r]}, nil
	}
	s, err := d.sampler(spec)
	if err != nil {
		return messages.Token{}, err
	}
	vocab := d.backend.VocabSize()
	row := d.logits[r*vocab : (r+1)*vocab]
	if spec.Mask != nil {
		if len(spec.Mask) < (vocab+63)/64 {
			return messages.Token{}, fmt.Errorf("grammar mask of %d words for a vocabulary of %d", len(spec.Mask), vocab)
		}
		grammar.MaskLogits(row, spec.Mask)
	}
	s.Seek(spec.Params.Seed, spec.Draw)
	tok, err := sampleOrVerify(s, row, spec) // spec.go
	if err != nil {
		return messages.Token{}, err
	}
	out := messages.Token{ID: tok.ID, Logprob: tok.Logprob}
	for _, t := range tok.Top { // tok.Top is the sampler's; copy it out
		out.Top = append(out.Top, messages.TokenLogprob{ID: t.ID, Logprob: t.Logprob})
	}
	return out, nil
}

func (d *device) sampler(spec messages.SampleSpec) (*sample.Sampler, error) {
	if s, ok := d.samplers[spec.SeqID]; ok {
		return s, nil
	}
	p := SampleParams(spec.Params)
	if spec.Params.Infill {
		p.Infill = d.infill()
	}
	s, err := sample.New(p)
	if err != nil {
		return nil, err
	}
	d.samplers[spec.SeqID] = s
	return s, nil
}

func (d *device) onFree(msg *messages.Free) {
	for _, id := range msg.SeqIDs {
		delete(d.samplers, id)
		delete(d.emb.poolers, id)
	}
}

// SampleParams converts the wire form of sampling parameters to
// model/sample's.
func SampleParams(p *messages.SamplingParams) sample.Params {
	return sample.Params{
		Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, MinP: p.MinP,
		RepetitionPenalty: p.RepetitionPenalty, PresencePenalty: p.PresencePenalty,
		FrequencyPenalty: p.FrequencyPenalty, PenaltyLastN: p.PenaltyLastN,
		LogitBias: p.LogitBias, Seed: p.Seed, HasSeed: p.HasSeed,
		WantLogprob: p.WantLogprob, Logprobs: p.Logprobs,
		MinKeep: p.MinKeep, TypicalP: p.TypicalP, XTCProbability: p.XTCProbability, XTCThreshold: p.XTCThreshold,
		DryMultiplier: p.DryMultiplier, DryBase: p.DryBase, DryAllowedLength: p.DryAllowedLength,
		DryPenaltyLastN: p.DryPenaltyLastN, DryBreakers: p.DryBreakerTokens,
		Mirostat: p.Mirostat, MirostatTau: p.MirostatTau, MirostatEta: p.MirostatEta,
	}
}
