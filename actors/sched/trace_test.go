package sched

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/datadriven"
)

// TestTrace replays the scheduler traces of testdata/trace: each case is
// "run" with a configuration, a script of moves, and the trace they must
// leave. After the script, every sequence left is run to its end, and every
// device and host block must be free. go test -rewrite updates the files.
func TestTrace(t *testing.T) {
	cfg := Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxModelLen: 64, NumBlocks: 16, BlockSize: 4}
	replay(t, "testdata/trace", traceRun{cfg: cfg, eos: -1}, func(t *testing.T, c *datadriven.Case, r traceRun) string {
		h := newHarness(t, r.cfg)
		h.eos, h.manualReady = r.eos, r.manualReady
		for _, line := range c.Input {
			o, err := parseOp(line)
			if err != nil {
				t.Fatalf("%s: %q: %v", c.Pos, line, err)
			}
			o(h)
		}
		out := strings.Join(h.lines, "\n")
		h.drain(200)
		return out
	})
}

// traceRun is what a run directive sets: the configuration (4-token
// blocks unless changed), the stop token (-1: none), whether the script's
// ready moves, not the harness, mark sequences ready, and the output limit
// of a draft trace's sequence.
type traceRun struct {
	cfg         Config
	eos         int32
	manualReady bool
	maxTokens   int
}

// replay runs the cases of the files in dir, each a "run" directive whose
// arguments change r (traceRun.set), through run.
func replay(t *testing.T, dir string, r traceRun, run func(t *testing.T, c *datadriven.Case, r traceRun) string) {
	datadriven.RunDir(t, dir, func(t *testing.T, c *datadriven.Case) string {
		if c.Cmd != "run" {
			t.Fatalf("%s: unknown directive %q", c.Pos, c.Cmd)
		}
		r := r
		for _, a := range c.Args {
			if err := r.set(a); err != nil {
				t.Fatalf("%s: %v", c.Pos, err)
			}
		}
		return run(t, c, r)
	})
}

// set applies one argument of a run directive.
func (r *traceRun) set(a datadriven.Arg) error {
	cfg := &r.cfg
	ints := map[string]*int{"max-num-seqs": &cfg.MaxNumSeqs, "max-num-batched-tokens": &cfg.MaxNumBatchedTokens,
		"max-model-len": &cfg.MaxModelLen, "num-blocks": &cfg.NumBlocks, "num-host-blocks": &cfg.NumHostBlocks,
		"spec-max-seqs": &cfg.SpecMaxSeqs, "max-tokens": &r.maxTokens}
	n, err := strconv.Atoi(a.Val)
	if err != nil {
		err = fmt.Errorf("%s=%q: %w", a.Key, a.Val, err)
	}
	if p, ok := ints[a.Key]; ok {
		*p = n
		return err
	}
	switch a.Key {
	case "eos":
		r.eos = int32(n)
		return err
	case "no-prefix-caching":
		cfg.NoPrefixCaching = true
	case "manual-ready":
		r.manualReady = true
	case "preemption":
		switch a.Val {
		case "swap":
			cfg.Preemption = Swap
		case "recompute":
			cfg.Preemption = Recompute
		default:
			return fmt.Errorf("preemption=%q: swap or recompute", a.Val)
		}
	default:
		return fmt.Errorf("unknown argument %q", a.Key)
	}
	return nil
}

// parseOp reads one move of a script: a verb and its words (see
// testdata/trace/README.md).
func parseOp(line string) (op, error) {
	w := strings.Fields(line)
	verb, args := w[0], w[1:]
	switch verb {
	case "schedule":
		return schedule(), nil
	case "done":
		return done(), nil
	case "fail":
		return fail(), nil
	case "stats":
		return stats(), nil
	case "trigger":
		return trigger(), nil
	case "cancel":
		return cancel(args...), nil
	case "ready":
		return ready(args...), nil
	case "tables":
		return tables(args...), nil
	case "state":
		return state(args...), nil
	case "steps":
		if len(args) != 1 {
			return nil, fmt.Errorf("steps takes a count")
		}
		n, err := strconv.Atoi(args[0])
		return steps(n), err
	case "cached":
		if len(args) == 0 {
			return nil, fmt.Errorf("cached takes prompt=…")
		}
		p, err := datadriven.Tokens(args[0], "prompt")
		return cached(p, args[1:]...), err
	case "add":
		return parseAdd(args)
	}
	return nil, fmt.Errorf("unknown move %q", verb)
}

// parseAdd reads "add NAME prompt=… max=N prio=N".
func parseAdd(args []string) (op, error) {
	if len(args) != 4 {
		return nil, fmt.Errorf("add takes NAME prompt=… max=N prio=N")
	}
	p, err := datadriven.Tokens(args[1], "prompt")
	if err != nil {
		return nil, err
	}
	var n [2]int
	for i, key := range []string{"max", "prio"} {
		v, ok := strings.CutPrefix(args[2+i], key+"=")
		if !ok {
			return nil, fmt.Errorf("add: %q, want %s=N", args[2+i], key)
		}
		if n[i], err = strconv.Atoi(v); err != nil {
			return nil, fmt.Errorf("add: %s: %w", key, err)
		}
	}
	return add(args[0], p, n[0], n[1]), nil
}
