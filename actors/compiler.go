package actors

import (
	"fmt"
	"runtime"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/grammar"
)

// compiler compiles grammars off every other actor's path. A compile, and
// the one-time build of a vocabulary for the matchers
// (Runtime.grammarVocab), each run on a goroutine of their own (at most max
// at once, the rest queued); an asker gets its grammarCompiled once what it
// needs is ready, at once when the cache has it. Askers of a grammar being
// compiled wait for that compile.
type compiler struct {
	rt      *Runtime
	max     int
	running int
	jobs    map[compileJob]bool // queued or running
	queue   []compileJob        // not started yet, oldest first
	waiting []*waiter           // askers not yet answered, oldest first
}

// compileGrammar asks the compiler for a grammar, and the vocabulary of its
// matchers when vocab is set. sequence (or Runtime.CompileGrammar's
// future) -> compiler.
type compileGrammar struct {
	grammar *messages.Grammar
	vocab   bool // the Vocab too: a sequence will run a matcher
	special bool // that Vocab keeps control tokens' text (SpecialText)
}

// grammarCompiled answers compileGrammar: the grammar, its vocabulary
// (when asked), or why it could not be had (wrapping ErrInvalidRequest).
// compiler -> asker.
type grammarCompiled struct {
	grammar *grammar.Grammar
	vocab   *grammar.Vocab
	err     error
}

// compileJob is one piece of work: a grammar (kind and source) or a
// vocabulary (grammar nil).
type compileJob struct {
	kind, source string
	isGrammar    bool
	special      bool // a vocabulary's kind
}

// jobDone is a job's goroutine reporting. goroutine -> compiler.
type jobDone struct {
	job compileJob
	err error // a grammar that did not compile
}

type waiter struct {
	pid *actor.PID
	msg *compileGrammar
}

func newCompiler(rt *Runtime) actor.Producer {
	return func() actor.Actor {
		return &compiler{rt: rt, max: max(2, runtime.GOMAXPROCS(0)/2), jobs: map[compileJob]bool{}}
	}
}

func (c *compiler) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *compileGrammar:
		c.onCompile(ctx, msg)
	case *jobDone:
		c.onDone(ctx, msg)
	}
}

func (c *compiler) onCompile(ctx actor.Context, msg *compileGrammar) {
	if msg.grammar == nil {
		ctx.Respond(&grammarCompiled{err: fmt.Errorf("%w: no grammar", ErrInvalidRequest)})
		return
	}
	w := &waiter{pid: ctx.Sender(), msg: msg}
	if res := c.ready(w); res != nil {
		c.rt.grammarStats.cacheHits.Add(1)
		ctx.Respond(res)
		return
	}
	c.waiting = append(c.waiting, w)
	c.schedule(ctx, w)
}

// ready returns w's answer when what it needs is built, nil otherwise.
func (c *compiler) ready(w *waiter) *grammarCompiled {
	g, ok := c.rt.grammars.Peek(grammarKey(w.msg.grammar))
	if !ok {
		return nil
	}
	if !w.msg.vocab {
		return &grammarCompiled{grammar: g}
	}
	if !c.rt.vocabs[vocabIndex(w.msg.special)].built.Load() {
		return nil
	}
	v, err := c.rt.grammarVocab(w.msg.special) // built: returns at once
	return &grammarCompiled{grammar: g, vocab: v, err: err}
}

// schedule queues the jobs w still needs, unless they are queued already.
func (c *compiler) schedule(ctx actor.Context, w *waiter) {
	g := w.msg.grammar
	if _, ok := c.rt.grammars.Peek(grammarKey(g)); !ok {
		c.enqueue(compileJob{kind: g.Kind, source: g.Source, isGrammar: true})
	}
	if w.msg.vocab && !c.rt.vocabs[vocabIndex(w.msg.special)].built.Load() {
		c.enqueue(compileJob{special: w.msg.special})
	}
	c.startNext(ctx)
}

func (c *compiler) enqueue(j compileJob) {
	if !c.jobs[j] {
		c.jobs[j] = true
		c.queue = append(c.queue, j)
	}
}

// startNext starts queued jobs while fewer than max run.
func (c *compiler) startNext(ctx actor.Context) {
	for c.running < c.max && len(c.queue) > 0 {
		j := c.queue[0]
		c.queue = c.queue[1:]
		c.running++
		self, root, rt := ctx.Self(), ctx.ActorSystem().Root, c.rt
		go func() { root.Send(self, &jobDone{job: j, err: rt.runJob(j)}) }()
	}
}

// onDone answers the askers a job completes: with the grammar's error if it
// failed, or with what they asked for once all of it is built.
func (c *compiler) onDone(ctx actor.Context, msg *jobDone) {
	c.running--
	delete(c.jobs, msg.job)
	left := c.waiting[:0]
	for _, w := range c.waiting {
		g := w.msg.grammar
		switch res := c.ready(w); {
		case msg.err != nil && msg.job.isGrammar && msg.job.kind == g.Kind && msg.job.source == g.Source:
			ctx.Send(w.pid, &grammarCompiled{err: msg.err})
		case res != nil:
			ctx.Send(w.pid, res)
		default:
			left = append(left, w)
		}
	}
	clear(c.waiting[len(left):])
	c.waiting = left
	for _, w := range c.waiting { // what a waiter had may have left the cache since
		c.schedule(ctx, w)
	}
	c.startNext(ctx)
}

// runJob compiles (or finds) a grammar or builds a vocabulary, on a job's
// goroutine. A panic is the grammar's error, never the process's end.
func (r *Runtime) runJob(j compileJob) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: the grammar compiler failed: %v", ErrInvalidRequest, j.kind, p)
		}
	}()
	if !j.isGrammar {
		_, err := r.grammarVocab(j.special)
		return err
	}
	start := time.Now()
	if _, err := r.grammar(&messages.Grammar{Kind: j.kind, Source: j.source}); err != nil {
		return err
	}
	r.grammarStats.compiles.Add(1)
	r.grammarStats.compileNanos.Add(time.Since(start).Nanoseconds())
	return nil
}
