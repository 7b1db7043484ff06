package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeFlags returns the flags README.md lists for command: the names
// (tokens starting with -) in the backquoted list after "`command` flags:".
func readmeFlags(t *testing.T, command string) []string {
	t.Helper()
	b := readFile(t, "../../README.md")
	marker := "`" + command + "` flags: `"
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("README.md has no %q list", marker)
	}
	list, _, ok := strings.Cut(rest, "`")
	if !ok {
		t.Fatalf("README.md's %q list does not end", marker)
	}
	var out []string
	for _, f := range strings.Fields(list) {
		if strings.HasPrefix(f, "-") {
			out = append(out, f)
		}
	}
	return out
}

var helpFlagRE = regexp.MustCompile(`(?m)^  (--?[\w-]+)`)

// helpFlags returns the flags `troupe command --help` lists.
func helpFlags(t *testing.T, command string) []string {
	t.Helper()
	_, errOut, code := troupe(t, command, "--help")
	if code != 0 {
		t.Fatalf("troupe %s --help: exit %d", command, code)
	}
	var out []string
	for _, m := range helpFlagRE.FindAllStringSubmatch(errOut, -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatalf("troupe %s --help lists no flags:\n%s", command, errOut)
	}
	return out
}

// TestReadmeFlags: README.md's flag lists for serve and run are the flags
// `troupe serve --help` and `troupe run --help` list, both ways, written as
// --help writes them (-c, --port).
func TestReadmeFlags(t *testing.T) {
	for _, command := range []string{"serve", "run"} {
		readme, help := readmeFlags(t, command), helpFlags(t, command)
		for _, f := range help {
			if !slices.Contains(readme, f) {
				t.Errorf("README.md's `%s` flag list lacks %s, which troupe %s --help lists: add it to the list after \"`%s` flags:\"",
					command, f, command, command)
			}
		}
		for _, f := range readme {
			if !slices.Contains(help, f) {
				t.Errorf("README.md's `%s` flag list has %s, which troupe %s --help does not list (a typo, a removed flag, or one dash too many or few)",
					command, f, command)
			}
		}
	}
}
