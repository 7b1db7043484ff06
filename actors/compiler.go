package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/messages"
)

// compiler compiles grammars off every other actor's path. A compile, a
// build of a grammar's source (Runtime.BuildGrammar: the tool-call grammar,
// with its schemas' conversions), and the one-time build of a vocabulary
// for the matchers (Runtime.grammarVocab), each run on a goroutine of their
// own (at most max at once, the rest queued) under a context that ends
// after compileTimeout, or when no asker waits for the job any more
// (abandonCompile: the client went away); an asker gets its
// grammarCompiled once what it needs is ready, at once when the cache has
// it. Askers of a grammar being compiled wait for that compile.
type compiler struct {
	rt      *Runtime
	max     int
	running int
	jobs    map[compileJob]context.CancelFunc // queued (nil) or running
	queue   []compileJob                      // not started yet, oldest first
	waiting []*waiter                         // askers not yet answered, oldest first
}

// compileGrammar asks the compiler for a grammar, and the vocabulary of its
// matchers when vocab is set. sequence (or Runtime.CompileGrammar's
// future) -> compiler.
type compileGrammar struct {
	grammar *messages.Grammar
	build   *buildJob // instead of grammar: a source to build, then compile
	vocab   bool      // the Vocab too: a sequence will run a matcher
	special bool      // that Vocab keeps control tokens' text (SpecialText)
}

// abandonCompile says that the asker (a CompileGrammarContext future) no
// longer waits: its jobs nobody else waits for stop. Runtime -> compiler.
type abandonCompile struct {
	asker *actor.PID
}

// grammarCompiled answers compileGrammar: the grammar, its vocabulary
// (when asked), the source built (a build), or why it could not be had
// (wrapping ErrInvalidRequest). compiler -> asker.
type grammarCompiled struct {
	grammar *grammar.Grammar
	vocab   *grammar.Vocab
	source  string
	err     error
}

// compileJob is one piece of work: a grammar (kind and source), a build,
// or a vocabulary (neither).
type compileJob struct {
	kind, source string
	isGrammar    bool
	build        *buildJob
	special      bool // a vocabulary's kind
}

// buildJob is a grammar source to build (Runtime.BuildGrammar): fn, given
// a JSON Schema converter, returns GBNF. The job's goroutine sets source
// and err before it reports.
type buildJob struct {
	fn     func(*grammar.Converter) (string, error)
	source string
	err    error
	done   bool // set by the compiler on the job's jobDone
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
		return &compiler{rt: rt, max: max(2, runtime.GOMAXPROCS(0)/2), jobs: map[compileJob]context.CancelFunc{}}
	}
}

func (c *compiler) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *compileGrammar:
		c.onCompile(ctx, msg)
	case *jobDone:
		c.onDone(ctx, msg)
	case *abandonCompile:
		c.onAbandon(ctx, msg)
	}
}

func (c *compiler) onCompile(ctx actor.Context, msg *compileGrammar) {
	if msg.grammar == nil && msg.build == nil {
		ctx.Respond(&grammarCompiled{err: fmt.Errorf("%w: no grammar", ErrInvalidRequest)})
		return
	}
	w := &waiter{pid: ctx.Sender(), msg: msg}
	if msg.build != nil {
		c.waiting = append(c.waiting, w)
		c.enqueue(compileJob{build: msg.build})
		c.startNext(ctx)
		return
	}
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
	if b := w.msg.build; b != nil {
		if !b.done {
			return nil
		}
		return &grammarCompiled{source: b.source, err: b.err}
	}
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
	if w.msg.build != nil {
		return
	}
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
	if _, ok := c.jobs[j]; !ok {
		c.jobs[j] = nil
		c.queue = append(c.queue, j)
	}
}

// startNext starts queued jobs while fewer than max run, each under a
// context that ends after compileTimeout.
func (c *compiler) startNext(ctx actor.Context) {
	for c.running < c.max && len(c.queue) > 0 {
		j := c.queue[0]
		c.queue = c.queue[1:]
		c.running++
		jctx, cancel := context.WithTimeoutCause(context.Background(), compileTimeout, errCompileTimeout)
		c.jobs[j] = cancel
		self, root, rt := ctx.Self(), ctx.ActorSystem().Root, c.rt
		go func() {
			defer cancel()
			root.Send(self, &jobDone{job: j, err: rt.runJob(jctx, j)})
		}()
	}
}

// errCompileTimeout ends a job that ran past compileTimeout.
var errCompileTimeout = fmt.Errorf("grammar too complex: compiling took longer than %v", compileTimeout)

// onAbandon forgets an asker that stopped waiting, and stops the jobs that
// nobody waits for any more (a vocabulary is always built).
func (c *compiler) onAbandon(ctx actor.Context, msg *abandonCompile) {
	c.waiting = slices.DeleteFunc(c.waiting, func(w *waiter) bool { return w.pid.Equal(msg.asker) })
	ctx.Send(msg.asker, &grammarCompiled{err: context.Canceled}) // ends the asker's future
	wanted := map[compileJob]bool{}
	for _, w := range c.waiting {
		if b := w.msg.build; b != nil {
			wanted[compileJob{build: b}] = true
		} else if g := w.msg.grammar; g != nil {
			wanted[compileJob{kind: g.Kind, source: g.Source, isGrammar: true}] = true
		}
	}
	c.queue = slices.DeleteFunc(c.queue, func(j compileJob) bool {
		drop := (j.isGrammar || j.build != nil) && !wanted[j]
		if drop {
			delete(c.jobs, j)
		}
		return drop
	})
	for j, cancel := range c.jobs {
		if cancel != nil && (j.isGrammar || j.build != nil) && !wanted[j] {
			cancel()
		}
	}
}

// onDone answers the askers a job completes: with the grammar's error if it
// failed, or with what they asked for once all of it is built.
func (c *compiler) onDone(ctx actor.Context, msg *jobDone) {
	c.running--
	delete(c.jobs, msg.job)
	if b := msg.job.build; b != nil {
		b.done = true
	}
	// A job stopped as abandoned (context.Canceled) fails none of those who
	// came to wait for it since: they are scheduled again below.
	failed := msg.err != nil && msg.job.isGrammar && !errors.Is(msg.err, context.Canceled)
	left := c.waiting[:0]
	for _, w := range c.waiting {
		g := w.msg.grammar
		switch res := c.ready(w); {
		case failed && g != nil && msg.job.kind == g.Kind && msg.job.source == g.Source:
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

// runJob compiles (or finds) a grammar, builds one, or builds a
// vocabulary, on a job's goroutine, stopping when ctx ends. A panic is the
// grammar's error, never the process's end.
func (r *Runtime) runJob(ctx context.Context, j compileJob) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: the grammar compiler failed: %v", ErrInvalidRequest, j.kind, p)
			if j.build != nil {
				j.build.err = err
			}
		}
	}()
	switch {
	case j.build != nil:
		j.build.source, j.build.err = r.build(ctx, j.build)
		return nil // the asker reads the build's error
	case !j.isGrammar:
		_, err := r.grammarVocab(j.special)
		return err
	}
	start := time.Now()
	if _, err := r.grammar(ctx, &messages.Grammar{Kind: j.kind, Source: j.source}); err != nil {
		return err
	}
	r.grammarStats.compiles.Add(1)
	r.grammarStats.compileNanos.Add(time.Since(start).Nanoseconds())
	return nil
}

// build runs a build job's function with a schema converter under ctx,
// then compiles its source (kept in the cache for the sequences).
func (r *Runtime) build(ctx context.Context, b *buildJob) (string, error) {
	conv := grammar.NewConverter(ctx)
	src, err := b.fn(conv)
	r.grammarStats.addWork(conv.Work())
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidRequest, timedOut(ctx, err))
	}
	start := time.Now()
	if _, err := r.grammar(ctx, &messages.Grammar{Kind: messages.GrammarGBNF, Source: src}); err != nil {
		return "", err
	}
	r.grammarStats.compiles.Add(1)
	r.grammarStats.compileNanos.Add(time.Since(start).Nanoseconds())
	return src, nil
}

// timedOut is err, or the compile timeout's error when that is why it
// failed (a context's error otherwise names no grammar).
func timedOut(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errCompileTimeout) {
		return errCompileTimeout
	}
	return err
}
