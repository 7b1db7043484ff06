package datadriven

import (
	"fmt"
	"strings"
	"testing"
)

const file = `# a comment

echo a=1 b
x
y
----
old
output

echo
----

# last
echo c=3
----
z`

func TestParse(t *testing.T) {
	cases, err := Parse("f.txt", strings.Split(file, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 {
		t.Fatalf("%d cases, want 3", len(cases))
	}
	c := cases[0]
	if c.Pos != "f.txt:3" || c.Cmd != "echo" || strings.Join(c.Input, "|") != "x|y" || c.Want != "old\noutput" {
		t.Errorf("case 1: %+v", c)
	}
	if v, ok := c.Arg("a"); v != "1" || !ok {
		t.Errorf("a = %q, %v; want 1, true", v, ok)
	}
	if v, ok := c.Arg("b"); v != "" || !ok {
		t.Errorf("b = %q, %v; want \"\", true", v, ok)
	}
	if _, ok := c.Arg("c"); ok {
		t.Error("c found in case 1")
	}
	if cases[1].Want != "" || cases[2].Want != "z" {
		t.Errorf("outputs %q, %q; want \"\", \"z\"", cases[1].Want, cases[2].Want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{"echo\nx", "echo\n\n----\n"} {
		if _, err := Parse("f.txt", strings.Split(src, "\n")); err == nil {
			t.Errorf("%q: no error", src)
		}
	}
}

func TestRewritten(t *testing.T) {
	lines := strings.Split(file, "\n")
	cases, err := Parse("f.txt", lines)
	if err != nil {
		t.Fatal(err)
	}
	got := rewritten(lines, cases, []string{"new", "two\nlines", ""})
	want := strings.Replace(strings.Replace(file, "old\noutput", "new", 1), "echo\n----\n", "echo\n----\ntwo\nlines\n", 1)
	want = strings.Replace(want, "----\nz", "----", 1) + "\n"
	if got != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", got, want)
	}
}

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		word, want string
		err        bool
	}{
		{"p=", "[]", false},
		{"p=5", "[5]", false},
		{"p=0+3,50,7+2", "[0 1 2 50 7 8]", false},
		{"q=1", "", true},
		{"p=x", "", true},
		{"p=1+-2", "", true},
	} {
		got, err := Tokens(tc.word, "p")
		if (err != nil) != tc.err || (err == nil && fmt.Sprint(got) != tc.want) {
			t.Errorf("Tokens(%q) = %v, %v; want %s, error %v", tc.word, got, err, tc.want, tc.err)
		}
	}
}
