// Command troupe runs LLMs: generate text, score perplexity, dump logits, benchmark.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand: it parses its own flags from args and writes its
// results to stdout. A usageError makes main print the usage and exit 2.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"run":        {"generate text from a prompt", runCmd},
	"perplexity": {"perplexity of a text file, as llama-perplexity computes it", perplexityCmd},
	"logits":     {"write the logits of a token sequence as float32 rows", logitsCmd},
	"bench":      {"benchmarks: model (llama-bench), batched (llama-batched-bench's table), serve (an OpenAI-API load generator)", benchCmd},
	"serve":      {"serve the OpenAI-compatible HTTP API", serveCmd},
	"synth":      {"write a random-weight model of a real model's shape (for speed tests)", synthCmd},
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" || args[0] == "version" {
		fmt.Fprintln(stdout, versionLine(buildVersion()))
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "troupe: unknown command %q (run 'troupe help')\n", args[0])
		return 2
	}
	err := cmd.run(args[1:], stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "troupe %s: %s\n", args[0], strings.TrimPrefix(ue.msg, args[0]+": "))
		return 2
	default:
		// An error of the package of the same name (bench: ...) names it once.
		fmt.Fprintf(stderr, "troupe %s: %s\n", args[0], strings.TrimPrefix(oneLine(err.Error()), args[0]+": "))
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: troupe <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'troupe <command> --help' for its flags, 'troupe --version' for the build.")
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
