package chat

import (
	"fmt"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// gonja parses jinja2 faithfully but evaluates with Go's types: a missing
// key is nil like None, a + b concatenates anything, dict literals lose
// Python's falsy-when-empty, list[-1] fails on one item. So after parsing,
// the tree is rewritten so that attribute and item access, the binary
// operators, literals and printing go through filters with Python's
// semantics (operatorFilters): a.b becomes a|__getattr("b"), a + b becomes
// a|__op("+", b), {{ x }} becomes {{ x|__str }}. Control flow (if, for,
// and/or/not, macros) stays gonja's; for, set, filter and macro blocks get
// thin wrappers (stmt.go).

// undefinedName is never set, so it evaluates to Undefined.
const undefinedName = "__chat_undefined"

func rewriteNodes(ns []nodes.Node) error {
	for _, n := range ns {
		if err := rewriteNode(n); err != nil {
			return err
		}
	}
	return nil
}

func rewriteWrapper(w *nodes.Wrapper) error {
	if w == nil {
		return nil
	}
	return rewriteNodes(w.Nodes)
}

func rewriteNode(n nodes.Node) error {
	switch n := n.(type) {
	case *nodes.Output:
		n.Expression = printed(expr(n.Expression))
		n.Condition = expr(n.Condition)
		if n.Alternative != nil {
			n.Alternative = printed(expr(n.Alternative))
		}
	case *nodes.Wrapper:
		return rewriteWrapper(n)
	case *nodes.ControlStructureBlock:
		return rewriteStatement(n)
	}
	return nil
}

func rewriteStatement(block *nodes.ControlStructureBlock) error {
	switch s := block.ControlStructure.(type) {
	case *controlStructures.IfControlStructure:
		for i, c := range s.Conditions {
			s.Conditions[i] = expr(c)
		}
		for _, w := range s.Wrappers {
			if err := rewriteWrapper(w); err != nil {
				return err
			}
		}
	case *controlStructures.ForControlStructure:
		s.ObjectEvaluator = expr(s.ObjectEvaluator)
		s.IfCondition = expr(s.IfCondition)
		if err := rewriteWrapper(s.BodyWrapper); err != nil {
			return err
		}
		if err := rewriteWrapper(s.EmptyWrapper); err != nil {
			return err
		}
		block.ControlStructure = &forStmt{s}
	case *controlStructures.MacroControlStructure:
		for _, p := range s.Kwargs {
			if none, ok := p.Value.(*nodes.None); ok && none.Location == p.Key.Position() {
				// gonja's placeholder for a parameter without default:
				// jinja2 leaves it Undefined when the caller omits it.
				p.Value = name(none.Location, undefinedName)
				continue
			}
			p.Value = expr(p.Value)
		}
		if err := rewriteWrapper(s.Wrapper); err != nil {
			return err
		}
		block.ControlStructure = &macroStmt{s}
	case *setStmt:
		if a, ok := s.target.(*nodes.GetAttribute); ok {
			a.Node = expr(a.Node)
		}
		s.expr, s.cond, s.alt = expr(s.expr), expr(s.cond), expr(s.alt)
		return rewriteWrapper(s.body)
	case *generationStmt:
		return rewriteWrapper(s.body)
	case *filterStmt:
		for _, c := range s.chain {
			rewriteCall(c)
		}
		return rewriteWrapper(s.body)
	case *controlStructures.BreakControlStructure, *controlStructures.ContinueControlStructure,
		*controlStructures.RawControlStructure:
	default:
		return fmt.Errorf("unsupported statement %s", block.Name)
	}
	return nil
}

func rewriteCall(c *nodes.FilterCall) {
	for i, a := range c.Args {
		c.Args[i] = expr(a)
	}
	for k, a := range c.Kwargs {
		c.Kwargs[k] = expr(a)
	}
}

var binaryOps = map[tokens.Type]string{
	tokens.Addition: "+", tokens.Subtraction: "-", tokens.Multiply: "*", tokens.Division: "/",
	tokens.FloorDivision: "//", tokens.Modulo: "%", tokens.Power: "**",
	tokens.Equals: "==", tokens.Ne: "!=", tokens.LowerThan: "<", tokens.GreaterThan: ">",
	tokens.LowerThanOrEqual: "<=", tokens.GreaterThanOrEqual: ">=",
}

// expr rewrites one expression (see the comment at the top of the file).
func expr(e nodes.Expression) nodes.Expression {
	switch n := e.(type) {
	case nil:
		return nil
	case *nodes.None:
		return name(n.Location, "none")
	case *nodes.List:
		return apply(&nodes.List{Location: n.Location, Val: exprs(n.Val)}, n.Location, "__list")
	case *nodes.Tuple:
		return apply(&nodes.List{Location: n.Location, Val: exprs(n.Val)}, n.Location, "__tuple")
	case *nodes.Dict:
		var kv []nodes.Expression
		for _, p := range n.Pairs {
			kv = append(kv, expr(p.Key), expr(p.Value))
		}
		return apply(&nodes.List{Location: n.Token, Val: kv}, n.Token, "__dict")
	case *nodes.BinaryExpression:
		// gonja's tree does not tell a < b < c (Python: a < b and b < c)
		// from (a < b) < c; both evaluate as the latter.
		tok := n.Operator.Token
		left, right := expr(n.Left), expr(n.Right)
		if op, ok := binaryOps[tok.Type]; ok {
			return apply(left, tok, "__op", str(tok, op), right, str(tok, describe(n.Left)), str(tok, describe(n.Right)))
		}
		switch tok.Type {
		case tokens.Tilde:
			return apply(left, tok, "__concat", right)
		case tokens.In:
			return &nodes.TestExpression{Expression: left, Test: &nodes.TestCall{
				Token: tok, Name: "in", Args: []nodes.Expression{right}, Kwargs: map[string]nodes.Expression{}}}
		}
		n.Left, n.Right = left, right // and, or
		return n
	case *nodes.GetItem:
		if n.Arg == nil {
			return n
		}
		return apply(expr(n.Node), n.Location, "__getitem", expr(n.Arg))
	case *nodes.GetAttribute:
		if n.Attribute == "" {
			return apply(expr(n.Node), n.Location, "__getitem", &nodes.Integer{Location: n.Location, Val: n.Index})
		}
		return apply(expr(n.Node), n.Location, "__getattr", str(n.Location, n.Attribute))
	case *nodes.GetSlice:
		n.Node, n.Start, n.End, n.Step = expr(n.Node), expr(n.Start), expr(n.End), expr(n.Step)
		return n
	case *nodes.Call:
		if f, ok := n.Func.(*nodes.Name); ok && f.Name.Val == condFunc && len(n.Args) == 3 {
			return conditional(n)
		}
		n.Func = expr(n.Func)
		n.Parent = nil // gonja's fallback for methods it knows; ours come from __getattr
		n.Args = exprs(n.Args)
		for k, a := range n.Kwargs {
			n.Kwargs[k] = expr(a)
		}
		return n
	case *nodes.FilteredExpression:
		n.Expression = expr(n.Expression)
		for _, c := range n.Filters {
			rewriteCall(c)
		}
		return n
	case *nodes.TestExpression:
		n.Expression = expr(n.Expression)
		n.Test.Args = exprs(n.Test.Args)
		for k, a := range n.Test.Kwargs {
			n.Test.Kwargs[k] = expr(a)
		}
		return n
	case *nodes.Negation:
		n.Term = expr(n.Term)
		return n
	case *nodes.UnaryExpression:
		n.Term = expr(n.Term)
		return n
	}
	return e // names and literals
}

// conditional turns cond.go's __chat_cond(C, A, B) into
// (C and (A,) or (B,))[0], which evaluates only the branch taken.
func conditional(n *nodes.Call) nodes.Expression {
	at := n.Location
	op := func(t tokens.Type, v string) *nodes.BinOperator {
		return &nodes.BinOperator{Token: &tokens.Token{Type: t, Val: v, Pos: at.Pos, Line: at.Line, Col: at.Col}}
	}
	c, a, b := n.Args[0], n.Args[1], n.Args[2]
	and := &nodes.BinaryExpression{Left: c, Right: &nodes.Tuple{Location: at, Val: []nodes.Expression{a}}, Operator: op(tokens.And, "and")}
	or := &nodes.BinaryExpression{Left: and, Right: &nodes.Tuple{Location: at, Val: []nodes.Expression{b}}, Operator: op(tokens.Or, "or")}
	return expr(&nodes.GetItem{Location: at, Node: or, Arg: &nodes.Integer{Location: at, Val: 0}})
}

// describe names an operand for an UndefinedError: "tools",
// "message.content", "" for anything but a variable or a lookup.
func describe(e nodes.Expression) string {
	switch n := e.(type) {
	case *nodes.Name:
		return n.Name.Val
	case *nodes.GetAttribute:
		if d := describe(n.Node); d != "" && n.Attribute != "" {
			return d + "." + n.Attribute
		}
	case *nodes.GetItem:
		if d := describe(n.Node); d != "" {
			if s, ok := n.Arg.(*nodes.String); ok {
				return d + "[" + strRepr(s.Val) + "]"
			}
			return d + "[…]"
		}
	}
	return ""
}

func exprs(es []nodes.Expression) []nodes.Expression {
	for i, e := range es {
		es[i] = expr(e)
	}
	return es
}

// printed makes {{ e }} print e as Python's str() does.
func printed(e nodes.Expression) nodes.Expression { return apply(e, e.Position(), "__str") }

func apply(e nodes.Expression, tok *tokens.Token, filter string, args ...nodes.Expression) nodes.Expression {
	return &nodes.FilteredExpression{Expression: e, Filters: []*nodes.FilterCall{{
		Token: tok, Name: filter, Args: args, Kwargs: map[string]nodes.Expression{},
	}}}
}

func name(at *tokens.Token, n string) *nodes.Name {
	return &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: n, Pos: at.Pos, Line: at.Line, Col: at.Col}}
}

func str(at *tokens.Token, s string) *nodes.String {
	return &nodes.String{Location: at, Val: s}
}
