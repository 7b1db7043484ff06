package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// newFlags returns a FlagSet whose errors come back as usageErrors (see
// parse) and whose -h lists its flags as the README writes them.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("troupe "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [flags]\n\nflags:\n", fs.Name())
		printFlags(fs)
	}
	return fs
}

// parse parses args and turns flag errors and stray arguments into
// usageErrors of one line with a hint; only -h prints the usage.
func parse(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {} // the flag package prints the error and the usage on every error
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return err
		}
		if msg := unsupportedError(fs); msg != "" {
			return usageError{msg}
		}
		return usageError{fmt.Sprintf("%s (see %s --help)", flagError(err.Error()), fs.Name())}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q (see %s --help)", fs.Arg(0), fs.Name())}
	}
	return nil
}

var flagNameRE = regexp.MustCompile(`(^|\s)-([A-Za-z0-9][\w-]+)`)

// flagError rewrites one of the flag package's errors with the names as
// the README writes them: "flag provided but not defined: -foo" is
// "unknown flag --foo".
func flagError(msg string) string {
	msg = strings.Replace(msg, "flag provided but not defined: ", "unknown flag ", 1)
	return flagNameRE.ReplaceAllString(msg, "$1--$2")
}

// dashed is a flag's name as the README and the usage write it: -c for
// one letter, --name otherwise.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// printFlags lists fs's flags as flag.PrintDefaults does, but with the
// names dashed. A peer's flags (peerflags.go) are not listed: a flag's
// line ends with the peer names that are its aliases.
func printFlags(fs *flag.FlagSet) {
	w := fs.Output()
	aliases := peerNames(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(peerValue); ok {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		if a := aliases[f.Name]; len(a) > 0 {
			usage += " (also " + strings.Join(a, ", ") + ")"
		}
		line := "  " + dashed(f.Name)
		if arg != "" {
			line += " " + arg
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "[]" && !strings.Contains(usage, "(default") {
			if arg == "string" {
				d = fmt.Sprintf("%q", d)
			}
			line += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintln(w, line)
	})
}
