// Package datadriven runs tests written as data files, in the style of
// pebble's (github.com/cockroachdb/datadriven): a file is a list of cases,
// each a directive line with arguments, input lines, a line "----" and the
// output the case must produce, ended by a blank line or the end of the
// file. Lines starting with # between cases are comments.
//
//	# A waits for B.
//	run max-num-seqs=2
//	add A prompt=0+4
//	steps 2
//	----
//	step 1: A[0:4]*
//	step 2: idle
//
// go test -rewrite writes the outputs the test produced into the files in
// place of the expected ones (check the diff before committing it).
//
// The package is for tests only; it is safe for one goroutine per file.
package datadriven

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the datadriven testdata files with the outputs the tests produce")

// Case is one case of a file.
type Case struct {
	Pos   string   // file:line of its directive, its subtest name
	Cmd   string   // the directive's first word
	Args  []Arg    // the directive's other words
	Input []string // the lines between the directive and "----"
	Want  string   // the expected output, lines joined by "\n"

	out [2]int // the output's lines in the file: [from, to)
}

// Arg is one word of a directive: key=value, or a key alone (Val "").
type Arg struct {
	Key, Val string
}

// Arg returns the value of the argument key and whether it is there.
func (c *Case) Arg(key string) (string, bool) {
	for _, a := range c.Args {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// RunDir runs every *.txt file of dir as a subtest named after the file.
func RunDir(t *testing.T, dir string, run func(t *testing.T, c *Case) string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("datadriven: no *.txt files in %s", dir)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { RunFile(t, f, run) })
	}
}

// RunFile runs each case of file as a subtest: run returns its output,
// which must equal the expected one (or, with -rewrite, replaces it).
func RunFile(t *testing.T, file string, run func(t *testing.T, c *Case) string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	cases, err := Parse(filepath.Base(file), lines)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(cases))
	for i, c := range cases {
		t.Run(c.Pos, func(t *testing.T) {
			got[i] = strings.TrimRight(run(t, c), "\n")
			if !*rewrite && got[i] != c.Want {
				t.Errorf("%s: output:\n%s\n\nwant:\n%s\n\nfirst difference at output line %d (go test -rewrite updates the file)",
					c.Pos, got[i], c.Want, diffLine(got[i], c.Want))
			}
		})
	}
	if *rewrite && !t.Failed() {
		if err := os.WriteFile(file, []byte(rewritten(lines, cases, got)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Parse reads the cases of a file's lines; name is the file's, for Pos.
func Parse(name string, lines []string) ([]*Case, error) {
	var cases []*Case
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := &Case{Pos: fmt.Sprintf("%s:%d", name, i+1)}
		words := strings.Fields(l)
		c.Cmd = words[0]
		for _, w := range words[1:] {
			k, v, _ := strings.Cut(w, "=")
			c.Args = append(c.Args, Arg{k, v})
		}
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			if strings.TrimSpace(lines[i]) == "" {
				return nil, fmt.Errorf("%s: a blank line before the case's ----", c.Pos)
			}
			c.Input = append(c.Input, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s: no ---- after the case", c.Pos)
		}
		c.out[0] = i + 1
		for i++; i < len(lines) && lines[i] != ""; i++ {
		}
		c.out[1] = i
		c.Want = strings.Join(lines[c.out[0]:c.out[1]], "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

// rewritten is the file's lines with each case's output replaced by got.
func rewritten(lines []string, cases []*Case, got []string) string {
	var b strings.Builder
	at := 0
	for i, c := range cases {
		for _, l := range lines[at:c.out[0]] {
			b.WriteString(l + "\n")
		}
		if got[i] != "" {
			b.WriteString(got[i] + "\n")
		}
		at = c.out[1]
	}
	for _, l := range lines[at:] {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// diffLine returns the 1-based number of the first line where a and b
// differ.
func diffLine(a, b string) int {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}
