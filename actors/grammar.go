package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-llm/troupe/grammar"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

// grammarCacheSize is the compiled grammars a runtime keeps (by kind and
// source), least recently used out first, and grammarCacheBytes the memory
// their automata and mask caches may hold (each grammar alone is bounded
// by grammar's limits).
const (
	grammarCacheSize  = 256
	grammarCacheBytes = 1 << 30
)

// compileTimeout bounds CompileGrammar's wait for the compiler actor. A
// compile is bounded by grammar's limits, well below it.
const compileTimeout = time.Minute

// CompileGrammar is CompileGrammarContext without a context.
func (r *Runtime) CompileGrammar(g *messages.Grammar) error {
	return r.CompileGrammarContext(context.Background(), g)
}

// CompileGrammarContext compiles g, or finds it in the runtime's cache, so
// that a front end can answer a bad schema, pattern or grammar with a 400
// before it admits the request. A compile includes the grammar's first
// mask over the runtime's vocabulary (firstMask), so a grammar too complex
// to mask is refused here too. The compile runs on the compiler actor's
// goroutines, bounded by compileTimeout; when ctx ends first (the client
// went away) the call returns ctx's error and the compile stops unless
// another asker waits for it. The compile's error wraps ErrInvalidRequest.
func (r *Runtime) CompileGrammarContext(ctx context.Context, g *messages.Grammar) error {
	_, err := r.askCompiler(ctx, &compileGrammar{grammar: g})
	return err
}

// BuildGrammar builds a grammar source on the compiler actor's goroutines,
// as CompileGrammarContext compiles one: build returns GBNF, given a JSON
// Schema converter (all its conversions under one work budget and ctx,
// into a grammar.Builder), so that a front end's grammar around schemas (the
// tool-call grammar of tool_choice "required") is bounded like any other.
// The source is then compiled (and cached, for the request's sequences).
// A build or compile error wraps ErrInvalidRequest and build's error.
func (r *Runtime) BuildGrammar(ctx context.Context, build func(*grammar.Converter) (string, error)) (*messages.Grammar, error) {
	res, err := r.askCompiler(ctx, &compileGrammar{build: &buildJob{fn: build}})
	if err != nil {
		return nil, err
	}
	return &messages.Grammar{Kind: messages.GrammarGBNF, Source: res.source}, nil
}

// askCompiler sends msg to the compiler and waits for its answer, or for
// ctx to end (then the compiler is told, so that the job stops).
func (r *Runtime) askCompiler(ctx context.Context, msg *compileGrammar) (*grammarCompiled, error) {
	r.mu.Lock()
	stopped := r.stopped
	r.mu.Unlock()
	if stopped {
		return nil, ErrStopped
	}
	f := r.system.Root.RequestFuture(r.compiler, msg, compileTimeout+time.Second)
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := f.Result()
		done <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		r.system.Root.Send(r.compiler, &abandonCompile{asker: f.PID()})
		return nil, fmt.Errorf("actors: compiling a grammar: %w", context.Cause(ctx))
	}
	if a.err != nil {
		return nil, fmt.Errorf("actors: compiling a grammar: %w", a.err)
	}
	c, ok := a.res.(*grammarCompiled)
	if !ok { // the compiler has stopped (a dead letter's answer)
		return nil, ErrStopped
	}
	return c, c.err
}

// GrammarStats counts the runtime's grammar work since it started.
type GrammarStats struct {
	Compiles     int64 // grammars compiled (or found cached) on the compiler's goroutines
	CompileNanos int64 // their time
	CacheHits    int64 // compile requests answered from the cache at once
	VocabNanos   int64 // building the matchers' vocabularies (once each)
	Masks        int64 // token masks computed for sequences
	MaskHits     int64 // of them, copied from the grammar's per-state cache
	MaskNanos    int64 // their time (on the sequences' goroutines)
	SchemaNodes  int64 // JSON Schema nodes visited by conversions (grammar.Work)
	SchemaBytes  int64 // bytes of rules they built
}

// grammarCounters are GrammarStats as the actors update them.
type grammarCounters struct {
	compiles, compileNanos, cacheHits, vocabNanos, masks, maskHits, maskNanos atomic.Int64
	schemaNodes, schemaBytes                                                  atomic.Int64
}

// addWork counts a schema converter's work.
func (c *grammarCounters) addWork(w grammar.Work) {
	c.schemaNodes.Add(w.Nodes)
	c.schemaBytes.Add(w.Bytes)
}

// GrammarStats returns the grammar counters.
func (r *Runtime) GrammarStats() GrammarStats {
	c := &r.grammarStats
	return GrammarStats{Compiles: c.compiles.Load(), CompileNanos: c.compileNanos.Load(), CacheHits: c.cacheHits.Load(), VocabNanos: c.vocabNanos.Load(),
		Masks: c.masks.Load(), MaskHits: c.maskHits.Load(), MaskNanos: c.maskNanos.Load(),
		SchemaNodes: c.schemaNodes.Load(), SchemaBytes: c.schemaBytes.Load()}
}

func grammarKey(g *messages.Grammar) string { return g.Kind + "\x00" + g.Source }

// grammar returns g compiled, from the runtime's cache when it is there,
// stopping when ctx ends. Only the compiler's goroutines call it.
func (r *Runtime) grammar(ctx context.Context, g *messages.Grammar) (*grammar.Grammar, error) {
	c, err := r.grammars.Get(grammarKey(g), func() (*grammar.Grammar, error) {
		c, err := r.compileFn(ctx, g, &r.grammarStats)
		if err != nil {
			return nil, timedOut(ctx, err)
		}
		return c, r.firstMask(c)
	})
	if err != nil {
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errCompileTimeout) { // abandoned: not the grammar's fault
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidRequest, g.Kind, ctx.Err())
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidRequest, g.Kind, err)
	}
	return c, nil
}

// compileFunc compiles a grammar source under ctx, counting a schema
// conversion's work in stats (Runtime.compileFn: compileSource, or a
// test's).
type compileFunc func(ctx context.Context, g *messages.Grammar, stats *grammarCounters) (*grammar.Grammar, error)

// firstMask computes c's first mask over the runtime's vocabulary (then
// cached in c), so that a grammar whose masks pass grammar's work
// bound from the start (root ::= ("a" | "") repeated 3000 times) is
// refused with the compile, a 400 at admission, not when its sequence
// starts. A later state past the bound ends its choice with an error.
func (r *Runtime) firstMask(c *grammar.Grammar) error {
	v, err := r.grammarVocab(false)
	if err != nil {
		return err
	}
	m, err := c.NewMatcher(v)
	if err != nil {
		return err
	}
	if err := m.Mask(make([]uint64, v.MaskWords())); err != nil {
		return fmt.Errorf("the first token mask: %w", err)
	}
	return nil
}

// grammarVocab returns the vocabulary grammar matchers run over, built
// once: every token's bytes as the output text holds them, so control
// tokens (whose text the output drops) are never allowed, unless special
// (SpecialText: their text is in the output, so a grammar may ask for
// <tool_call> or [TOOL_CALLS]). Unknown tokens are never allowed; the
// end-of-generation tokens are the tokenizer's. It is as wide as the
// model's logits rows.
func (r *Runtime) grammarVocab(special bool) (*grammar.Vocab, error) {
	gv := &r.vocabs[vocabIndex(special)]
	gv.once.Do(func() {
		start := time.Now()
		defer func() {
			if p := recover(); p != nil { // built, as an error: never asked for again
				gv.v, gv.err = nil, fmt.Errorf("%w: building the grammar vocabulary: %v", ErrInvalidRequest, p)
			}
			gv.built.Store(true)
			r.grammarStats.vocabNanos.Add(time.Since(start).Nanoseconds())
		}()
		gv.v, gv.err = vocabOf(r.tok, max(r.model.Config.VocabSize, r.tok.VocabSize()), special)
	})
	return gv.v, gv.err
}

// vocabOf is tok's grammar vocabulary, n tokens wide (see grammarVocab).
func vocabOf(tok *tokenizer.Tokenizer, n int, special bool) (*grammar.Vocab, error) {
	pieces := make([][]byte, n)
	var eog []int32
	for id := range int32(tok.VocabSize()) {
		if tok.IsEOG(id) {
			eog = append(eog, id)
			continue
		}
		if tok.TokenType(id) != tokenizer.TypeUnknown && id != tok.UNK() {
			pieces[id] = tok.TokenPiece(id, special)
		}
	}
	return grammar.NewVocab(pieces, eog...)
}

func vocabIndex(special bool) int {
	if special {
		return 1
	}
	return 0
}

// lazyVocab is a grammar vocabulary built on first use.
type lazyVocab struct {
	once  sync.Once
	built atomic.Bool // once has run
	v     *grammar.Vocab
	err   error
}

// compileSource compiles a grammar of any kind (a compileFunc).
func compileSource(ctx context.Context, g *messages.Grammar, stats *grammarCounters) (*grammar.Grammar, error) {
	switch g.Kind {
	case messages.GrammarJSONSchema:
		conv := grammar.NewConverter(ctx)
		c, err := conv.FromJSONSchema([]byte(g.Source))
		stats.addWork(conv.Work())
		return c, err
	case messages.GrammarJSONObject:
		return grammar.JSONObject()
	case messages.GrammarRegex:
		return grammar.FromRegex(g.Source)
	case messages.GrammarChoice:
		var choices []string
		if err := json.Unmarshal([]byte(g.Source), &choices); err != nil {
			return nil, fmt.Errorf("the choices are not a JSON array of strings: %v", err)
		}
		return grammar.FromChoices(choices)
	case messages.GrammarGBNF:
		return grammar.CompileContext(ctx, g.Source)
	}
	return nil, fmt.Errorf("unknown grammar kind %q", g.Kind)
}
