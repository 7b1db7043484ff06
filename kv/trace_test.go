package kv

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/datadriven"
)

// TestTrace replays the block-manager traces of testdata/trace: each case is
// "run" with the manager's size, a script of calls one a line, and the
// trace they must leave. Every call is followed by the invariant check; a
// call that fails must leave the manager unchanged. go test -rewrite
// updates the files (testdata/trace/README.md).
func TestTrace(t *testing.T) {
	datadriven.RunDir(t, "testdata/trace", func(t *testing.T, c *datadriven.Case) string {
		if c.Cmd != "run" {
			t.Fatalf("%s: unknown directive %q", c.Pos, c.Cmd)
		}
		m, err := newTraceManager(c.Args)
		if err != nil {
			t.Fatalf("%s: %v", c.Pos, err)
		}
		var out []string
		for _, line := range c.Input {
			before := takeSnapshot(m)
			got, err := traceCall(m, strings.Fields(line))
			switch {
			case managerError(err):
				if !takeSnapshot(m).equal(before) {
					t.Fatalf("%s: %q failed (%v) and changed the manager", c.Pos, line, err)
				}
				got = fmt.Sprintf("%s: %v", line, err)
			case err != nil:
				t.Fatalf("%s: %q: %v", c.Pos, line, err)
			}
			mustCheck(t, m)
			if err := sharedPrefixes(m); err != nil {
				t.Fatalf("%s: after %q: %v", c.Pos, line, err)
			}
			if got != "" {
				out = append(out, got)
			}
		}
		return strings.Join(out, "\n")
	})
}

// newTraceManager makes the manager of a run directive: blocks=N (required),
// block-size=N (4), no-prefix-caching, hash=collide|no-parent (a broken
// hash, to show a collision costs a hit but never gives one).
func newTraceManager(args []datadriven.Arg) (*BlockManager, error) {
	blocks, bs, caching, hash := 0, 4, true, BlockHash
	for _, a := range args {
		var err error
		switch a.Key {
		case "blocks":
			blocks, err = strconv.Atoi(a.Val)
		case "block-size":
			bs, err = strconv.Atoi(a.Val)
		case "no-prefix-caching":
			caching = false
		case "hash":
			switch a.Val {
			case "collide": // every block hashes alike
				hash = func(uint64, []int32) uint64 { return 42 }
			case "no-parent": // a block's hash ignores its prefix
				hash = func(_ uint64, t []int32) uint64 { return BlockHash(RootHash, t) }
			default:
				err = fmt.Errorf("hash=%q: collide or no-parent", a.Val)
			}
		default:
			err = fmt.Errorf("unknown argument %q", a.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	if blocks == 0 {
		return nil, fmt.Errorf("run needs blocks=N")
	}
	m := NewBlockManager(blocks, bs, caching)
	m.hash = hash
	return m, nil
}

// refusal is an error the manager returned for a call it refused: the
// call's result in a trace, not a script error.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }

// refused wraps a manager's error as a refusal (nil stays nil).
func refused(err error) error {
	if err == nil {
		return nil
	}
	return refusal{err}
}

// managerError reports whether err is one the manager returned for a call
// it refuses (its text is the call's trace line, so a changed error shows).
func managerError(err error) bool {
	var r refusal
	return errors.As(err, &r)
}

// traceQuery answers a call that only reads the manager (or resets its
// cache); ok is false for the other calls.
func traceQuery(m *BlockManager, verb string, args []string) (got string, ok bool, err error) {
	ok = true
	got, err = func() (string, error) {
		switch verb {
		case "stats":
			s := m.Stats()
			return fmt.Sprintf("stats free=%d/%d cached=%d seqs=%d queries=%d hits=%d evictions=%d window-freed=%d registered=%d",
				s.NumFreeBlocks, s.NumBlocks, s.NumCachedBlocks, s.NumSeqs, s.PrefixQueries, s.PrefixHits, s.Evictions, s.WindowFreed, len(m.cached)), nil
		case "usage":
			return fmt.Sprintf("usage %v", m.Usage()), nil
		case "reset":
			m.ResetPrefixCache()
			return "", nil
		case "cached":
			if len(args) != 1 {
				return "", fmt.Errorf("cached takes prompt=…")
			}
			p, err := datadriven.Tokens(args[0], "prompt")
			return fmt.Sprintf("cached %s: %d", args[0], cachedTokens(m, p)), err
		case "num-cached":
			var salt uint64
			if len(args) == 2 {
				v, ok := strings.CutPrefix(args[1], "salt=")
				var err error
				if salt, err = strconv.ParseUint(v, 10, 64); !ok || err != nil {
					return "", fmt.Errorf("num-cached: %q, want salt=N", args[1])
				}
			} else if len(args) != 1 {
				return "", fmt.Errorf("num-cached takes prompt=… and salt=N")
			}
			p, err := datadriven.Tokens(args[0], "prompt")
			if err != nil {
				return "", err
			}
			before := takeSnapshot(m) // LRU order and counters included
			n := m.NumCachedTokens(salt, p)
			if !takeSnapshot(m).equal(before) {
				return "", fmt.Errorf("NumCachedTokens changed the manager")
			}
			if c := len(m.lookup(salt, p, nil)) * m.blockSize; n != c {
				return "", fmt.Errorf("NumCachedTokens %d, a lookup finds %d", n, c)
			}
			return fmt.Sprintf("num-cached %s: %d", strings.Join(args, " "), n), nil
		case "can-alloc":
			if len(args) != 1 {
				return "", fmt.Errorf("can-alloc takes prompt=…")
			}
			p, err := datadriven.Tokens(args[0], "prompt")
			return fmt.Sprintf("can-alloc %s: %v", args[0], canAllocate(m, p)), err
		}
		ok = false
		return "", nil
	}()
	return got, ok, err
}

// traceCall makes one call of a script and returns its trace line (or "").
func traceCall(m *BlockManager, w []string) (string, error) {
	verb, args := w[0], w[1:]
	if got, ok, err := traceQuery(m, verb, args); ok {
		return got, err
	}
	switch verb {
	case "alloc-upto":
		return allocUpTo(m, args)
	case "alloc-from", "alloc-fresh":
		return allocFrom(m, verb, args)
	case "hold", "import":
		return holdImport(m, verb, args)
	}
	if len(args) != 2 && !((verb == "free" || verb == "seq" || verb == "registered") && len(args) == 1) {
		return "", fmt.Errorf("%s takes a sequence id and prompt=… (can, accept: n=N; free-before: pos=N; free, seq, registered: the id alone)", verb)
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return "", fmt.Errorf("%s: sequence id %q: %w", verb, args[0], err)
	}
	id := SeqID(n)
	switch verb {
	case "free":
		return "", refused(m.Free(id))
	case "registered":
		var reg []bool
		for _, b := range m.BlockTable(id) {
			reg = append(reg, b != NoBlock && m.blocks[b].cached)
		}
		return fmt.Sprintf("registered %d: %v", id, reg), nil
	case "seq":
		return fmt.Sprintf("seq %d: table %v tokens %d live %d", id, m.BlockTable(id), m.NumTokens(id), m.NumLiveBlocks(id)), nil
	case "accept":
		v, ok := strings.CutPrefix(args[1], "n=")
		k, err := strconv.Atoi(v)
		if !ok || err != nil {
			return "", fmt.Errorf("accept: %q, want n=N", args[1])
		}
		if err := m.AcceptDraft(id, k); err != nil {
			return "", refused(err)
		}
		return fmt.Sprintf("accept %d n=%d: table %v tokens %d", id, k, m.BlockTable(id), m.NumTokens(id)), nil
	case "free-before":
		v, ok := strings.CutPrefix(args[1], "pos=")
		pos, err := strconv.Atoi(v)
		if !ok || err != nil {
			return "", fmt.Errorf("free-before: %q, want pos=N", args[1])
		}
		freed, err := m.FreeBefore(id, pos)
		if err != nil {
			return "", refused(err)
		}
		return fmt.Sprintf("free-before %d pos=%d: freed %d table %v", id, pos, freed, m.BlockTable(id)), nil
	case "can":
		v, ok := strings.CutPrefix(args[1], "n=")
		k, err := strconv.Atoi(v)
		if !ok || err != nil {
			return "", fmt.Errorf("can: %q, want n=N", args[1])
		}
		return fmt.Sprintf("can %d n=%d: %v", id, k, m.CanAppendTokens(id, k)), nil
	}
	p, err := datadriven.Tokens(args[1], "prompt")
	if err != nil {
		return "", err
	}
	switch verb {
	case "alloc":
		cached, err := allocate(m, id, p)
		if err != nil {
			return "", refused(err)
		}
		return fmt.Sprintf("alloc %d: table %v tokens %d cached %d", id, m.BlockTable(id), m.NumTokens(id), cached), nil
	case "draft":
		if err := m.AppendDraft(id, p); err != nil {
			return "", refused(err)
		}
		return fmt.Sprintf("draft %d: table %v tokens %d draft %d", id, m.BlockTable(id), m.NumTokens(id), m.DraftLen(id)), nil
	case "append":
		if err := m.AppendTokens(id, p); err != nil {
			return "", refused(err)
		}
		return fmt.Sprintf("append %d: table %v tokens %d", id, m.BlockTable(id), m.NumTokens(id)), nil
	}
	return "", fmt.Errorf("unknown call %q", verb)
}

// seqPrompt reads a call's first two arguments: a sequence id and
// prompt=….
func seqPrompt(verb string, args []string) (SeqID, []int32, error) {
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return 0, nil, fmt.Errorf("%s: sequence id %q: %w", verb, args[0], err)
	}
	p, err := datadriven.Tokens(args[1], "prompt")
	return SeqID(n), p, err
}

// seqPromptNums reads a call's "ID prompt=P" and then its key=N
// arguments, each one of keys (0 unless given).
func seqPromptNums(verb string, args []string, keys ...string) (SeqID, []int32, map[string]int, error) {
	if len(args) < 2 {
		return 0, nil, nil, fmt.Errorf("%s takes a sequence id, prompt=… and %s=N", verb, strings.Join(keys, "=N, "))
	}
	id, p, err := seqPrompt(verb, args)
	if err != nil {
		return 0, nil, nil, err
	}
	num := make(map[string]int, len(keys))
	for _, a := range args[2:] {
		k, v, _ := strings.Cut(a, "=")
		if !slices.Contains(keys, k) {
			return 0, nil, nil, fmt.Errorf("%s: unknown argument %q", verb, a)
		}
		if num[k], err = strconv.Atoi(v); err != nil {
			return 0, nil, nil, fmt.Errorf("%s: %q: %w", verb, a, err)
		}
	}
	return id, p, num, nil
}

// allocUpTo is "alloc-upto ID prompt=P n=N": AllocateUpTo of N tokens of P.
func allocUpTo(m *BlockManager, args []string) (string, error) {
	if len(args) != 3 {
		return "", fmt.Errorf("alloc-upto takes a sequence id, prompt=… and n=N")
	}
	id, p, num, err := seqPromptNums("alloc-upto", args, "n")
	if err != nil {
		return "", err
	}
	k := num["n"]
	cached, err := m.AllocateUpTo(id, p, k)
	if err != nil {
		return "", refused(err)
	}
	return fmt.Sprintf("alloc-upto %d n=%d: table %v tokens %d cached %d", id, k, m.BlockTable(id), m.NumTokens(id), cached), nil
}

// allocFrom is "alloc-from ID prompt=P from=N salt=S" (AllocateFrom of all
// of P) and "alloc-fresh ID prompt=P from=N salt=S" (AllocateFresh); from
// and salt are 0 unless given.
func allocFrom(m *BlockManager, verb string, args []string) (string, error) {
	id, p, num, err := seqPromptNums(verb, args, "from", "salt")
	if err != nil {
		return "", err
	}
	from, salt, cached := num["from"], uint64(num["salt"]), 0
	if verb == "alloc-fresh" {
		err = m.AllocateFresh(id, salt, p, len(p), from)
	} else {
		cached, err = m.AllocateFrom(id, salt, p, len(p), from)
	}
	if err != nil {
		return "", refused(err)
	}
	return fmt.Sprintf("%s %d: table %v tokens %d cached %d", verb, id, m.BlockTable(id), m.NumTokens(id), cached), nil
}

// sharedPrefixes checks that two tables share a block only where they hold
// the same tokens up to it: a hit never gives a block computed after
// another prefix, whatever the hash does.
func sharedPrefixes(m *BlockManager) error {
	for id, s := range m.seqs {
		for other, o := range m.seqs {
			if other <= id {
				continue
			}
		blocks:
			for k := range min(len(s.table), len(o.table)) {
				if s.table[k] == NoBlock || s.table[k] != o.table[k] {
					continue
				}
				for i := range k {
					a, b := s.table[i], o.table[i]
					if a == NoBlock || b == NoBlock {
						continue blocks
					}
					if !slices.Equal(m.blockTokens(a), m.blockTokens(b)) {
						return fmt.Errorf("seqs %d and %d share block %d (#%d) after different blocks #%d (%d, %d)", id, other, s.table[k], k, i, a, b)
					}
				}
			}
		}
	}
	return nil
}

// holdImport is "hold ID prompt=P from=N max=N" (HoldPrefix) and "import ID
// prompt=P from=N end=N" (ImportPrefix); the numbers are 0 unless given.
func holdImport(m *BlockManager, verb string, args []string) (string, error) {
	id, p, num, err := seqPromptNums(verb, args, "from", "max", "end")
	if err != nil {
		return "", err
	}
	if verb == "hold" {
		held, err := m.HoldPrefix(id, 0, p, num["from"], num["max"])
		if err != nil {
			return "", refused(err)
		}
		return fmt.Sprintf("hold %d: %v", id, held), nil
	}
	cached, blocks, err := m.ImportPrefix(id, 0, p, num["from"], num["end"])
	if err != nil {
		return "", refused(err)
	}
	if blocks == nil {
		return fmt.Sprintf("import %d: cached %d, nothing new", id, cached), nil
	}
	return fmt.Sprintf("import %d: cached %d new %v table %v", id, cached, blocks, m.BlockTable(id)), nil
}
