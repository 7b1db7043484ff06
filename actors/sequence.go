package actors

import (
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/sample"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

// sequence owns one choice of a request: it enters itself into the batcher's
// schedule, turns each sampled token into text (holding back what could
// still become a stop string), stops on a stop string, and asks for the next
// step until the batcher or a stop ends it. It reports to its request.
//
// A sequence under a grammar first waits for the compiler (vLLM's
// WAITING_FOR_FSM): only with the compiled grammar does it enter the
// schedule, with the mask of its first token. Each sampled token then
// advances its matcher, and each step request carries the next mask; the
// grammar reaching its end finishes the choice with "stop".
type sequence struct {
	id      uint64
	index   int
	rt      *Runtime
	batcher *actor.PID
	new     *messages.NewSequence
	stop    stopText
	dec     *tokenizer.Decoder
	grammar *messages.Grammar // nil: unconstrained
	special bool              // SpecialText: control tokens' text is output
	fsm     *constraint       // the grammar's state, once compiled

	minTokens  int                     // MinTokens: end tokens banned, stop strings off, until this many
	ban        []uint64                // the mask that bans end tokens, while under minTokens; nil: none
	budget     *sample.ReasoningBudget // ReasoningBudget's state; nil: none
	prompt     []int32                 // the prompt, for the budget's open section
	rbudget    *messages.ReasoningBudget
	generated  int           // tokens output so far
	maxPredict time.Duration // MaxPredictNanos; 0: no deadline
	genStart   time.Time     // when the first token came

	mask  []uint64   // the grammar's mask of the next token (take); nil: none
	draft draftState // speculative decoding's proposer (specseq.go)

	cached      int   // NumCachedTokens, from the first result
	queue       int64 // QueueNanos from the first result, until sent
	preemptions int   // Preempted messages since the last output
	done        bool
}

func newSequence(rt *Runtime, req *messages.GenerateRequest, id uint64, index int) actor.Producer {
	return func() actor.Actor {
		n := &messages.NewSequence{Prompt: req.Prompt, MaxTokens: req.MaxTokens, Priority: req.Priority,
			Sampling: req.Sampling, StopTokenIDs: req.StopTokenIDs, IgnoreEOS: req.IgnoreEOS, LoRA: rt.loraSet(req.LoRA),
			Images: req.Images}
		n.Sampling.Seed = seqSeed(req.Sampling.Seed, index)
		return &sequence{id: id, index: index, rt: rt, batcher: rt.batcher, new: n,
			stop: stopText{stops: req.Stop, include: req.IncludeStopStr},
			dec:  tokenizer.NewStreamDecoder(rt.tok), grammar: req.Grammar, special: req.SpecialText,
			minTokens: req.MinTokens, maxPredict: time.Duration(req.MaxPredictNanos),
			rbudget: req.ReasoningBudget, prompt: req.Prompt, draft: newDraftState(rt, req, id)}
	}
}

func (s *sequence) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		ctx.Watch(s.batcher)
		if s.minTokens > 0 {
			s.ban = s.rt.endBanMask(s.new.IgnoreEOS, s.new.StopTokenIDs)
		}
		var err error
		if s.budget, err = s.rt.reasoningBudget(s.rbudget, s.prompt); err != nil { // Check saw to it: not expected
			s.end(ctx, &messages.SequenceOutput{FinishReason: messages.FinishError, Err: err.Error(), Invalid: true})
			return
		}
		if s.grammar != nil { // WAITING_FOR_FSM
			ctx.Request(s.rt.compiler, &compileGrammar{grammar: s.grammar, vocab: true, special: s.special})
			return
		}
		ctx.Request(s.batcher, &messages.StepRequest{SeqID: s.id, New: s.new, Mask: s.stepMask(nil)})
	case *grammarCompiled:
		s.onCompiled(ctx, msg)
	case *messages.StepResult:
		s.onStepResult(ctx, msg)
	case *messages.Preempted:
		s.onPreempted()
	case *messages.Cancel:
		s.onCancel(ctx, msg)
	case *draftReply:
		s.onDraft(ctx, msg)
	case *actor.DeadLetterResponse: // the draft device is gone
		s.onDraft(ctx, nil)
	case *actor.Stopped: // ended without end (its request failed): the draft blocks go back
		s.draft.release(ctx)
	case *actor.Terminated: // the batcher is gone
		s.end(ctx, &messages.SequenceOutput{FinishReason: messages.FinishError, Err: "the batcher stopped"})
	}
}

// onCompiled ends WAITING_FOR_FSM: the sequence enters the schedule with
// its first mask, or ends with the compile's error.
func (s *sequence) onCompiled(ctx actor.Context, res *grammarCompiled) {
	if s.done || s.fsm != nil {
		return
	}
	err := res.err
	if err == nil {
		s.fsm, err = newConstraint(res, s.new.IgnoreEOS, &s.rt.grammarStats)
	}
	var mask []uint64
	if err == nil {
		if s.fsm.m.Done() { // the grammar matches only the empty output
			s.end(ctx, &messages.SequenceOutput{FinishReason: messages.FinishStop})
			return
		}
		mask, err = s.fsm.mask()
	}
	if err != nil {
		s.end(ctx, &messages.SequenceOutput{FinishReason: messages.FinishError, Err: err.Error(), Invalid: grammarFault(err)})
		return
	}
	ctx.Request(s.batcher, &messages.StepRequest{SeqID: s.id, New: s.new, Mask: s.stepMask(mask)})
}

func (s *sequence) onStepResult(ctx actor.Context, res *messages.StepResult) {
	if s.done {
		return
	}
	if res.NumCachedTokens > 0 {
		s.cached = res.NumCachedTokens
	}
	if res.QueueNanos > 0 {
		s.queue = res.QueueNanos
	}
	out := &messages.SequenceOutput{Drafted: res.Drafted, Accepted: res.Accepted}
	s.draft.adapt(res.Drafted, res.Accepted, res.NoDraft)
	// A speculative run's accepted draft tokens come first, each taken as
	// the result of a step of its own; then the run's last token, with the
	// result's finish.
	run := res.Tokens
	if len(run) == 0 {
		run = []messages.Token{res.Token}
	}
	for _, tok := range run[:len(run)-1] {
		if s.take(out, &messages.StepResult{Token: tok}, false) {
			s.finish(ctx, out, false)
			return
		}
	}
	last := *res
	last.Token = run[len(run)-1]
	if s.take(out, &last, true) {
		s.finish(ctx, out, res.Finish != "")
		return
	}
	s.emit(ctx, out)
	s.next(ctx)
}

// take adds one step's token (none when the batcher ended the sequence on
// an end token or an error) to out: its text, with stop strings, the
// grammar and the deadline checked. It reports whether the choice ends
// there (out.FinishReason set); otherwise, with mask, it leaves the
// grammar's next mask in s.mask.
func (s *sequence) take(out *messages.SequenceOutput, res *messages.StepResult, mask bool) (ended bool) {
	out.FinishReason, out.Err = res.Finish, res.Err
	var piece string
	var grammarDone bool
	var grammarErr error
	if res.Finish != messages.FinishError && res.Finish != messages.FinishStop {
		out.Tokens = append(out.Tokens, res.Token)
		piece = s.decode(res.Token.ID)
		if s.generated++; s.generated == 1 {
			s.genStart = time.Now()
		}
		if s.budget != nil {
			s.budget.Accept(res.Token.ID)
		}
		if s.fsm != nil && res.Finish == "" {
			grammarDone, grammarErr = s.fsm.accept(res.Token.ID)
		}
		s.draft.record(res.Token.ID)
	}
	s.mask = nil
	if mask && s.fsm != nil && res.Finish == "" && !grammarDone && grammarErr == nil {
		s.mask, grammarErr = s.fsm.mask()
	}
	final := res.Finish != "" || grammarDone || grammarErr != nil
	if final {
		piece += s.dec.Flush()
	}
	s.stop.off = s.generated < s.minTokens
	text, stopped := s.stop.add(piece, final)
	out.Text += text
	switch {
	case stopped:
		out.FinishReason, out.Err, out.StopString = messages.FinishStop, "", s.stop.matched
	case grammarErr != nil:
		out.FinishReason, out.Err, out.Invalid = messages.FinishError, grammarErr.Error(), grammarFault(grammarErr)
	case grammarDone:
		out.FinishReason = messages.FinishStop
	case out.FinishReason == "" && s.pastDeadline(piece):
		out.Text += s.stop.flush()
		out.FinishReason = messages.FinishLength
	}
	return out.FinishReason != ""
}

// finish ends the choice with out; when the batcher does not know it has
// ended (a stop string, the grammar, the deadline, or inside a speculative
// run), it is told to drop the sequence.
func (s *sequence) finish(ctx actor.Context, out *messages.SequenceOutput, batcherEnded bool) {
	if !batcherEnded {
		ctx.Send(s.batcher, &messages.Cancel{SeqID: s.id, Reason: "stopped by the sequence"})
	}
	s.end(ctx, out)
}

// stepMask is the mask of the next sample given the grammar's (nil: none):
// while under min_tokens, end tokens are banned as well; while the
// reasoning budget forces a token, only it is allowed (unless the grammar
// or min_tokens bans it: they win).
func (s *sequence) stepMask(grammar []uint64) []uint64 {
	mask := s.maskAt(grammar, s.generated)
	if s.budget != nil {
		if tok, ok := s.budget.Forced(); ok {
			mask = andMask(mask, s.rt.onlyMask(tok))
		}
	}
	return mask
}

// maskAt is the mask of the sample that follows generated tokens, given
// the grammar's there, before the reasoning budget (a sequence with one
// does not speculate).
func (s *sequence) maskAt(grammar []uint64, generated int) []uint64 {
	if generated >= s.minTokens {
		return grammar
	}
	return andMask(grammar, s.ban)
}

// pastDeadline reports whether the choice ends on llama-server's
// t_max_predict_ms: a piece with a newline, after the deadline.
func (s *sequence) pastDeadline(piece string) bool {
	return s.maxPredict > 0 && strings.Contains(piece, "\n") && time.Since(s.genStart) > s.maxPredict
}

// decode turns a token into text. Control tokens have none, unless the
// request asks for their text (SpecialText): then they end any character
// held incomplete and add their text.
func (s *sequence) decode(id int32) string {
	if s.special && len(s.rt.tok.TokenPiece(id, false)) == 0 {
		if p := s.rt.tok.TokenPiece(id, true); len(p) > 0 {
			return s.dec.Flush() + string(p)
		}
	}
	return s.dec.Add(id)
}

// stopText finds stop strings in a choice's text as it streams in, holding
// back what could still become one.
type stopText struct {
	stops   []string
	include bool   // IncludeStopStr: the stop string ends the text
	off     bool   // under min_tokens: no stop string is looked for
	held    string // text not yet sent: it could start a stop string
	matched string // the stop string that ended the text; "": none yet
}

// flush returns the text held back and forgets it.
func (s *stopText) flush() string {
	out := s.held
	s.held = ""
	return out
}

// add appends a piece of text and returns what may be sent now. When the
// text so far holds a stop string, it returns the text before the first
// one and stopped; final (no more text will come) sends all that is held.
func (s *stopText) add(piece string, final bool) (out string, stopped bool) {
	s.held += piece
	if s.off {
		return s.flush(), false
	}
	if i, n := s.stopAt(); i >= 0 {
		s.matched = s.held[i : i+n]
		if s.include {
			i += n
		}
		out, s.held = s.held[:i], ""
		return out, true
	}
	keep := 0
	if !final {
		keep = s.heldBack()
	}
	out, s.held = s.held[:len(s.held)-keep], s.held[len(s.held)-keep:]
	return out, false
}

// stopAt returns where the first stop string starts in the held text, or
// -1, and its length (the longest of those starting there).
func (s *stopText) stopAt() (at, n int) {
	at = -1
	for _, st := range s.stops {
		if i := strings.Index(s.held, st); i >= 0 && (at < 0 || i < at || i == at && len(st) > n) {
			at, n = i, len(st)
		}
	}
	return at, n
}

// heldBack returns the length of the longest end of the held text that is
// the start of a stop string, which must not be sent yet.
func (s *stopText) heldBack() int {
	keep := 0
	for _, st := range s.stops {
		for n := min(len(st)-1, len(s.held)); n > keep; n-- {
			if strings.HasSuffix(s.held, st[:n]) {
				keep = n
				break
			}
		}
	}
	return keep
}

// onPreempted counts a preemption, reported with the next output.
func (s *sequence) onPreempted() {
	if !s.done {
		s.preemptions++
	}
}

func (s *sequence) onCancel(ctx actor.Context, c *messages.Cancel) {
	if s.done {
		return
	}
	ctx.Send(s.batcher, &messages.Cancel{SeqID: s.id, Reason: c.Reason})
	s.end(ctx, &messages.SequenceOutput{FinishReason: messages.FinishCancelled, Err: c.Reason})
}

func (s *sequence) emit(ctx actor.Context, out *messages.SequenceOutput) {
	out.SeqID, out.Index, out.NumCachedTokens, out.QueueNanos, out.Preemptions = s.id, s.index, s.cached, s.queue, s.preemptions
	s.queue, s.preemptions = 0, 0
	ctx.Send(ctx.Parent(), out)
}

// end sends the sequence's last output. Its request stops it on reading
// that output: a sequence that stops before then has failed.
func (s *sequence) end(ctx actor.Context, out *messages.SequenceOutput) {
	if s.done {
		return
	}
	s.done = true
	s.draft.release(ctx)
	s.emit(ctx, out)
	ctx.Unwatch(s.batcher)
}
