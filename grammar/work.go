package grammar

import (
	"context"
	"fmt"
)

// Bounds of the work one Converter does, over all its conversions: the
// schema nodes visited (a node reached twice counts twice) and the bytes of
// rule bodies built (a body built twice, even one that dedupes to a rule
// already there, counts twice). A schema past them is ErrTooComplex.
// A node is at least 2 bytes of schema ({}), and a real schema's nodes are
// visited a few times each: 2^18 visits is well past a schema of a few MB.
const (
	MaxSchemaNodes = 1 << 18
	MaxSchemaBytes = 2 * MaxSourceBytes
)

// ctxCheckEvery is how many units of work pass between two looks at a
// conversion's or compile's context.
const ctxCheckEvery = 1 << 12

// Work is what a Converter has spent.
type Work struct {
	Nodes int64 // schema nodes visited, memoized ones included
	Bytes int64 // bytes of rule bodies built
}

// A Converter writes JSON Schemas as GBNF under one work budget (Work,
// bounded by MaxSchemaNodes and MaxSchemaBytes) and a context: the tool-call
// grammar of a request converts every tool's schema with one Converter, so
// that many schemas cannot multiply the bound. A conversion whose context
// ends stops with the context's error. A Converter belongs to one goroutine.
type Converter struct {
	ctx  context.Context
	work Work
	next int64 // Nodes+Bytes at which the context is looked at next
}

// NewConverter returns a Converter whose conversions stop when ctx ends.
func NewConverter(ctx context.Context) *Converter {
	if ctx == nil {
		ctx = context.Background()
	}
	return &Converter{ctx: ctx}
}

// Work returns what the converter has spent so far.
func (v *Converter) Work() Work { return v.work }

// spend charges nodes and bytes; the error is ErrTooComplex past a bound,
// or the context's error once it has ended.
func (v *Converter) spend(nodes, bytes int, path string) error {
	v.work.Nodes += int64(nodes)
	v.work.Bytes += int64(bytes)
	switch {
	case v.work.Nodes > MaxSchemaNodes:
		return fmt.Errorf("json schema: at %q: more than %d schema nodes visited: %w", path, MaxSchemaNodes, ErrTooComplex)
	case v.work.Bytes > MaxSchemaBytes:
		return fmt.Errorf("json schema: at %q: more than %d bytes of rules built: %w", path, MaxSchemaBytes, ErrTooComplex)
	}
	if total := v.work.Nodes + v.work.Bytes; total >= v.next {
		v.next = total + ctxCheckEvery
		if err := v.ctx.Err(); err != nil {
			return fmt.Errorf("json schema: %w", context.Cause(v.ctx))
		}
	}
	return nil
}

// FromJSONSchema compiles the grammar of a schema (as the package's
// FromJSONSchema), converting under v's budget and compiling under its
// context.
func (v *Converter) FromJSONSchema(schema []byte) (*Grammar, error) {
	src, err := v.JSONSchemaGBNF(schema)
	if err != nil {
		return nil, err
	}
	return CompileContext(v.ctx, src)
}
