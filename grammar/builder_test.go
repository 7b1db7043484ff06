package grammar

import (
	"strings"
	"testing"
)

// TestBuilder: rules keep their names where free, take a suffix where a
// name holds another body, are shared where the body is the same; the
// rules of two schemas live in one grammar without renaming (their
// primitives shared, their $defs apart), and the whole compiles to the
// language it says.
func TestBuilder(t *testing.T) {
	b := NewBuilder(nil)
	a := b.Rule("item", Lit("a"))
	if again := b.Rule("item", Lit("a")); again != a {
		t.Errorf("the same rule twice: %q and %q", a, again)
	}
	if other := b.Rule("item", Lit("b")); other.String() != "item1" {
		t.Errorf("a taken name: %q, want item1", other)
	}
	if s := b.Rule("string", Lit("x")); s.String() == "string" {
		t.Errorf("a primitive's name given to another body")
	}
	one, err := b.Schema("one", []byte(`{"type": "object", "properties": {"k": {"$ref": "#/$defs/d"}}, "required": ["k"], "$defs": {"d": {"type": "string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	two, err := b.Schema("two", []byte(`{"type": "object", "properties": {"k": {"$ref": "#/$defs/d"}}, "required": ["k"], "$defs": {"d": {"type": "integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	list := b.Declare("list") // recursive: a list of lists or items
	b.Define(list, Seq(Lit("("), Opt(List(Alt(a, list), Lit(","))), Lit(")")))
	src, err := b.GBNF(Alt(Seq(Lit("1"), one), Seq(Lit("2"), two), list, Seq(Lit("t"), TextWithout("<|"), Lit("<|"))))
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{"\nref-d ::=", "\nref-d1 ::=", "\nstring ::=", "\ninteger ::="} {
		if strings.Count(src, rule) != 1 {
			t.Errorf("%q: not once in\n%s", rule, src)
		}
	}
	g, err := Compile(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	for in, ok := range map[string]bool{
		`1{"k": "s"}`: true, `1{"k": 1}`: false, `2{"k": 1}`: true, `2{"k": "s"}`: false,
		"(a,(a,()),a)": true, "(b)": false, "(a,)": false, "tx<y<|": true, "t<|<|": false,
	} {
		if got := accepts(t, g, in); got != ok {
			t.Errorf("%q: accepted %v, want %v\n%s", in, got, ok, src)
		}
	}
	if _, err := NewBuilder(nil).Schema("x", []byte(`{"not": {}}`)); err == nil {
		t.Error("an unsupported schema: no error")
	}
	b = NewBuilder(nil)
	b.Rule("root", Lit("x"))
	if _, err := b.GBNF(Lit("y")); err == nil {
		t.Error("a rule named root beside the root: no error")
	}
}

// accepts reports whether g accepts in whole.
func accepts(t *testing.T, g *Grammar, in string) bool {
	m, err := g.NewMatcher(smallVocab(t))
	if err != nil {
		t.Fatal(err)
	}
	return m.AcceptBytes([]byte(in)) == nil && m.CanEnd()
}
