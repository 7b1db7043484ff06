package chat

import (
	"fmt"
	"io"
	"strings"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// forItemsVar holds a for loop's items, already turned into a list.
const forItemsVar = "__chat_for_items"

// forStmt is gonja's for loop over Python's iteration: a dict yields its
// keys in order, Undefined nothing, None is a TypeError.
type forStmt struct {
	*controlStructures.ForControlStructure
}

func (s *forStmt) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	obj := r.Eval(s.ObjectEvaluator)
	if obj.IsError() {
		return obj
	}
	items, err := iterate(unwrap(obj))
	if err != nil {
		return err
	}
	if err := charge(r, len(items)); err != nil {
		return err
	}
	inner := *s.ForControlStructure
	at := s.ObjectEvaluator.Position()
	inner.ObjectEvaluator = name(at, forItemsVar)
	sub := r.Inherit()
	sub.Environment.Context.Set(forItemsVar, list(items))
	return inner.Execute(sub, tag)
}

// macroStmt defines gonja's macro with a plain str result: jinja2 returns
// Markup only when autoescaping, and a Markup would escape what is added to
// it.
type macroStmt struct {
	*controlStructures.MacroControlStructure
}

func (s *macroStmt) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	if err := s.MacroControlStructure.Execute(r, tag); err != nil {
		return err
	}
	v, _ := r.Environment.Context.Get(s.Name)
	macro, ok := v.(exec.Macro)
	if !ok {
		return fmt.Errorf("macro %s: unexpected %T", s.Name, v)
	}
	depth := 0 // this render's nesting of calls to the macro
	r.Environment.Context.Set(s.Name, fn(func(va *exec.VarArgs) *exec.Value {
		if err := charge(r, 1); err != nil {
			return exec.AsValue(err)
		}
		if depth >= maxMacroDepth {
			return exec.AsValue(&pyError{"RecursionError", "maximum recursion depth exceeded in macro " + s.Name})
		}
		depth++
		out := macro(va)
		depth--
		if out.IsError() {
			return out
		}
		s := out.String()
		if b := budgetOf(r.Environment.Context); b != nil {
			if len(s) > maxString {
				return exec.AsValue(b.tooBig(&sizeError{len(s)}))
			}
			if err := b.spend(len(s), len(s)); err != nil {
				return exec.AsValue(err)
			}
		}
		return exec.AsValue(s)
	}))
	return nil
}

// maxMacroDepth bounds a macro's recursion, which Python stops with a
// RecursionError and which would otherwise exhaust Go's stack.
const maxMacroDepth = 200

// setStmt is {% set name = expr %}, {% set ns.attr = expr %} (on a
// namespace only, as in jinja2) and the block form {% set name %}…{% endset %}.
type setStmt struct {
	location        *tokens.Token
	target          nodes.Expression // *nodes.Name or *nodes.GetAttribute
	expr, cond, alt nodes.Expression
	body            *nodes.Wrapper
}

func (s *setStmt) Position() *tokens.Token { return s.location }
func (s *setStmt) String() string          { return fmt.Sprintf("set(line %d)", s.location.Line) }

func (s *setStmt) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	var value *exec.Value
	switch {
	case s.body != nil:
		var out strings.Builder
		sub := r.Inherit()
		sub.Output = capped(r, &out)
		if err := sub.ExecuteWrapper(s.body); err != nil {
			return err
		}
		value = exec.AsValue(out.String())
	case s.cond != nil:
		c := r.Eval(s.cond)
		if c.IsError() {
			return c
		}
		if c.IsTrue() {
			value = r.Eval(s.expr)
		} else {
			value = r.Eval(s.alt)
		}
	default:
		value = r.Eval(s.expr)
	}
	if value.IsError() {
		return value
	}
	switch t := s.target.(type) {
	case *nodes.Name:
		r.Environment.Context.Set(t.Name.Val, unwrap(value))
	case *nodes.GetAttribute:
		obj := r.Eval(t.Node)
		if obj.IsError() {
			return obj
		}
		ns, ok := unwrap(obj).(*namespace)
		if !ok {
			return &pyError{"TemplateRuntimeError", "cannot assign attribute on non-namespace object"}
		}
		ns.set(t.Attribute, unwrap(value))
	}
	return nil
}

func setParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	s := &setStmt{location: p.Current()}
	target, err := args.ParseVariableOrLiteral()
	if err != nil {
		return nil, fmt.Errorf("set: target: %w", err)
	}
	switch t := target.(type) {
	case *nodes.Name:
	case *nodes.GetAttribute:
		if t.Attribute == "" {
			return nil, args.Error("set: cannot assign to an index", nil)
		}
	default:
		return nil, args.Error("set: can only assign to a name or a namespace attribute", nil)
	}
	s.target = target
	if args.Match(tokens.Assign) == nil {
		if !args.End() {
			return nil, args.Error("set: expected '=' or the end of the tag", nil)
		}
		if s.body, err = blockBody(p, "endset"); err != nil {
			return nil, err
		}
		return s, nil
	}
	if s.expr, err = args.ParseExpression(); err != nil {
		return nil, err
	}
	if s.cond, s.alt, err = args.ParseCondition(); err != nil {
		return nil, err
	}
	if s.cond != nil && s.alt == nil {
		s.alt = name(s.location, undefinedName)
	}
	if !args.End() {
		return nil, args.Error("set: unexpected tokens", nil)
	}
	return s, nil
}

// filterStmt is {% filter f|g %}…{% endfilter %}.
type filterStmt struct {
	location *tokens.Token
	body     *nodes.Wrapper
	chain    []*nodes.FilterCall
}

func (s *filterStmt) Position() *tokens.Token { return s.location }
func (s *filterStmt) String() string          { return fmt.Sprintf("filter(line %d)", s.location.Line) }

func (s *filterStmt) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	var out strings.Builder
	sub := r.Inherit()
	sub.Output = &cappedWriter{w: &out}
	if err := sub.ExecuteWrapper(s.body); err != nil {
		return err
	}
	value := exec.AsValue(out.String())
	for _, call := range s.chain {
		if value = r.Evaluator().ExecuteFilter(call, value); value.IsError() {
			return value
		}
	}
	_, err := io.WriteString(r.Output, pyStr(unwrap(value)))
	return err
}

func filterParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	s := &filterStmt{location: p.Current()}
	wrapper, _, err := p.WrapUntil("endfilter")
	if err != nil {
		return nil, err
	}
	s.body = wrapper
	for !args.End() {
		call, err := args.ParseFilter()
		if err != nil {
			return nil, err
		}
		s.chain = append(s.chain, call)
		if args.Match(tokens.Pipe) == nil {
			break
		}
	}
	if !args.End() || len(s.chain) == 0 {
		return nil, args.Error("filter: expected filters", nil)
	}
	return s, nil
}

// generationStmt is transformers' {% generation %}…{% endgeneration %}
// (its AssistantTracker extension), which marks the assistant's part for
// training masks; rendered, it is its body.
type generationStmt struct {
	location *tokens.Token
	body     *nodes.Wrapper
}

func (s *generationStmt) Position() *tokens.Token { return s.location }
func (s *generationStmt) String() string          { return fmt.Sprintf("generation(line %d)", s.location.Line) }

func (s *generationStmt) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	return r.ExecuteWrapper(s.body)
}

func generationParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	s := &generationStmt{location: p.Current()}
	if !args.End() {
		return nil, args.Error("generation takes no arguments", nil)
	}
	var err error
	if s.body, err = blockBody(p, "endgeneration"); err != nil {
		return nil, err
	}
	return s, nil
}

// blockBody parses a block's body up to its end tag, which takes no
// arguments.
func blockBody(p *parser.Parser, end string) (*nodes.Wrapper, error) {
	body, endargs, err := p.WrapUntil(end)
	if err != nil {
		return nil, err
	}
	if !endargs.End() {
		return nil, endargs.Error(end+" takes no arguments", nil)
	}
	return body, nil
}
