package grammar

import (
	"errors"
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line, col int // 0: not a SyntaxError
		want      string
	}{
		{"no root", `a ::= "x"`, 0, 0, "no rule named root"},
		{"missing ::=", "root = \"x\"", 1, 6, "expecting ::="},
		{"undefined", "root ::= foo", 1, 10, `undefined rule "foo"`},
		{"unterminated string", `root ::= "abc`, 1, 14, "unexpected end"},
		{"unterminated class", `root ::= [a-z`, 1, 14, "unexpected end"},
		{"bad escape", `root ::= "\q"`, 1, 11, "unknown escape"},
		{"bad hex", `root ::= "\xZZ"`, 1, 13, "hex digits"},
		{"dangling star", `root ::= * "a"`, 1, 10, "expecting an item"},
		{"unclosed paren", `root ::= ( "a"`, 1, 15, "expecting )"},
		{"second line", "root ::= a\na ::= \"x\" )", 2, 11, "expecting newline"},
		{"range reversed", `root ::= [z-a]`, 1, 14, "before start"},
		{"rep max < min", `root ::= "a"{3,2}`, 1, 18, "below minimum"},
		{"rep bad", `root ::= "a"{x}`, 1, 14, "expecting an integer"},
		{"twice", "root ::= \"a\"\nroot ::= \"b\"", 2, 1, "defined twice"},
		{"token refs", `root ::= <[12]>`, 1, 10, "token references"},
		{"left recursion", "root ::= root \"a\" | \"a\"", 0, 0, "left-recursive"},
		{"hidden left recursion", "root ::= x root \"a\" | \"b\"\nx ::= \"c\"?", 0, 0, "left-recursive"},
		{"left recursion through a nullable star", "root ::= x* root \"a\" | \"b\"\nx ::= \"c\"", 0, 0, "left-recursive"},
		{"huge repetition", `root ::= "a"{20000}`, 0, 0, "too complex"},
		{"nested repetition", `root ::= "a"{1000}{1000}{1000}`, 0, 0, "too complex"},
		{"deep parens", "root ::= " + strings.Repeat("(", 500) + `"a"` + strings.Repeat(")", 500), 0, 0, "too complex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.src)
			if err == nil {
				t.Fatalf("Compile(%q) succeeded", tt.src)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			var se *SyntaxError
			if tt.line > 0 {
				if !errors.As(err, &se) {
					t.Fatalf("error %v is not a SyntaxError", err)
				}
				if se.Line != tt.line || se.Col != tt.col {
					t.Fatalf("error at %d:%d, want %d:%d (%v)", se.Line, se.Col, tt.line, tt.col, err)
				}
			}
		})
	}
}

const jsonGBNF = `
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
`

func TestMatch(t *testing.T) {
	tests := []struct {
		name, src string
		accept    []string // complete sentences
		prefix    []string // accepted but not complete
		reject    []string
	}{
		{"literal", `root ::= "abc"`, []string{"abc"}, []string{"", "ab"}, []string{"abd", "abcd", "x"}},
		{"alternatives", `root ::= "cat" | "dog" | "co"`, []string{"cat", "dog", "co"}, []string{"c", "d"}, []string{"cow", "dot"}},
		{"class", `root ::= [a-c0-9]+`, []string{"a", "ab0c9"}, []string{""}, []string{"d", "a-"}},
		{"negated", `root ::= [^a-c]`, []string{"d", "é", "€", "😀", "\x00"}, []string{"\xc3", "\xf0\x9f"}, []string{"a", "dd", "\xff", "\xed\xa0\x80"}},
		{"any", `root ::= . "!"`, []string{"x!", "é!", "😀!"}, []string{"x"}, []string{"!!!", "\x80"}},
		{"unicode class", `root ::= [α-ω]{2}`, []string{"αω", "λμ"}, []string{"α", "\xce"}, []string{"a", "αa", "ΑΩ"}},
		{"escapes", `root ::= "\x41\u00e9\n\t\"" [\]\\]`, []string{"Aé\n\t\"]", "Aé\n\t\"\\"}, nil, []string{"A"[:1] + "e"}},
		{"optional", `root ::= "a" "b"? "c"`, []string{"ac", "abc"}, []string{"a", "ab"}, []string{"abbc", "c"}},
		{"star", `root ::= "a"*`, []string{"", "a", "aaaa"}, nil, []string{"b"}},
		{"counted", `root ::= "a"{2,3}`, []string{"aa", "aaa"}, []string{"a"}, []string{"aaaa"}},
		{"at least", `root ::= "a"{2,}`, []string{"aa", "aaaaa"}, []string{"a"}, []string{"b"}},
		{"exact", `root ::= ("ab"){2}`, []string{"abab"}, []string{"aba"}, []string{"ababab"}},
		{"group rep", `root ::= ("x" | "yz")+ "."`, []string{"x.", "yzxyz."}, []string{"y"}, []string{".", "yx."}},
		{"nested rules", "root ::= a b\na ::= \"1\" | \"2\" a\nb ::= [0-9]", []string{"10", "2213"}, []string{"2"}, []string{"3"}},
		{"nullable star", `root ::= ("a"?)* "."`, []string{".", "a.", "aaa."}, []string{"a", ""}, []string{"b", "a.a"}},
		{"nested stars", `root ::= ( [x]* )* ( "y"? "z"? )+`, []string{"", "x", "xxyzzy"}, nil, []string{"a", "xyx"}},
		{"tail cycle", "root ::= a \"!\"\na ::= b | \"x\"\nb ::= a | \"y\"", []string{"x!", "y!"}, []string{"x"}, []string{"!", "xy!"}},
		{"comments", "# c\nroot ::= \"a\" # x\n  # y\n", []string{"a"}, nil, []string{"b"}},
		{"balanced", "root ::= \"(\" root \")\" | \"\"", []string{"", "()", "((()))"}, []string{"((", "(()"}, []string{")", "())"}},
		{"json", jsonGBNF, []string{`{}`, `{"a": [1, -2.5e3, true, null, "x\u00e9\n"]}`, "{\"k\":{\"é\":[]}}\n  "}, []string{`{"a":`}, []string{`[]`, `{"a"}`, `{"a":01}`, "{\"\x01\":1}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			run := func(s string) (ok, end bool) {
				m, err := g.NewMatcher(nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.AcceptBytes([]byte(s)); err != nil {
					if !errors.Is(err, ErrRejected) {
						t.Fatalf("%q: %v", s, err)
					}
					return false, false
				}
				return true, m.CanEnd()
			}
			for _, s := range tt.accept {
				if ok, end := run(s); !ok || !end {
					t.Errorf("%q: accepted %v, complete %v; want a complete match", s, ok, end)
				}
			}
			for _, s := range tt.prefix {
				if ok, end := run(s); !ok || end {
					t.Errorf("%q: accepted %v, complete %v; want an incomplete prefix", s, ok, end)
				}
			}
			for _, s := range tt.reject {
				if ok, _ := run(s); ok {
					t.Errorf("%q accepted; want rejected", s)
				}
			}
		})
	}
}

// TestUnproductive checks that alternatives matching nothing are pruned, so
// the matcher never enters a prefix it cannot complete.
func TestUnproductive(t *testing.T) {
	for _, src := range []string{"root ::= []", `root ::= "a" [^\x00-\U0010FFFF]`, "root ::= x\nx ::= \"a\" x"} {
		if _, err := Compile(src); err == nil || !strings.Contains(err.Error(), "matches no string") {
			t.Errorf("%q: %v, want an error", src, err)
		}
	}
	g, err := Compile("root ::= \"a\" x | \"ab\"\nx ::= \"b\" [] | \"c\" x")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := g.NewMatcher(nil)
	if err := m.AcceptBytes([]byte("ab")); err != nil || !m.CanEnd() {
		t.Fatalf("ab: %v", err)
	}
	m, _ = g.NewMatcher(nil)
	if err := m.AcceptBytes([]byte("ac")); err == nil {
		t.Fatal("ac accepted: it has no completion")
	}
}
