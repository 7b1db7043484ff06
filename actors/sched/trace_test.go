package sched

import (
	"slices"
	"testing"
)

// small returns a configuration with 4-token blocks, changed by set.
func small(set func(c *Config)) Config {
	c := Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxModelLen: 64, NumBlocks: 16, BlockSize: 4}
	if set != nil {
		set(&c)
	}
	return c
}

func TestTraceAdmission(t *testing.T) {
	runTraceCases(t, []traceCase{{
		name: "priority then arrival",
		cfg:  small(func(c *Config) { c.MaxNumSeqs = 2 }),
		ops: []op{
			add("A", toks(0, 4), 1, 1), add("B", toks(10, 4), 1, 0), add("C", toks(20, 4), 1, 1),
			add("D", toks(30, 4), 1, 0), steps(3),
		},
		want: `
			step 1: B[0:4]* D[0:4]* => B=100(len) D=100(len)
			step 2: A[0:4]* C[0:4]* => A=100(len) C=100(len)
			step 3: idle`,
	}, {
		name: "a new high priority waits for a free slot, then goes first",
		cfg:  small(func(c *Config) { c.MaxNumSeqs = 2 }),
		ops: []op{
			add("A", toks(0, 4), 2, 1), add("B", toks(10, 4), 3, 1), add("C", toks(20, 4), 1, 1), steps(1),
			add("H", toks(30, 4), 1, 0), steps(3),
		},
		want: `
			step 1: A[0:4]* B[0:4]* => A=100 B=100
			step 2: A[4:5]* B[4:5]* => A=101(len) B=101
			step 3: B[5:6]* H[0:4]* => B=102(len) H=100(len)
			step 4: C[0:4]* => C=100(len)`,
	}, {
		name: "FCFS: no one passes a head that does not fit",
		cfg:  small(func(c *Config) { c.NumBlocks = 4 }),
		ops: []op{
			add("A", toks(0, 9), 4, 0), steps(1),
			add("B", toks(10, 8), 1, 0), add("C", toks(20, 3), 1, 0), steps(4),
		},
		want: `
			step 1: A[0:9]* => A=100
			step 2: A[9:10]* => A=101
			step 3: A[10:11]* => A=102
			step 4: A[11:12]* => A=103(len)
			step 5: B[0:8]* C[0:3]* => B=100(len) C=100(len)`,
	}})
}

func TestTraceBudget(t *testing.T) {
	runTraceCases(t, []traceCase{{
		name: "tokens",
		cfg:  small(func(c *Config) { c.MaxNumBatchedTokens = 10 }),
		ops: []op{
			add("A", toks(0, 8), 2, 0), add("B", toks(10, 8), 2, 0), add("C", toks(20, 3), 1, 0), steps(4),
		},
		want: `
			step 1: A[0:8]* B[0:2] => A=100
			step 2: A[8:9]* B[2:8]* C[0:3]* => A=101(len) B=100 C=100(len)
			step 3: B[8:9]* => B=101(len)
			step 4: idle`,
	}, {
		name: "sequences",
		cfg:  small(func(c *Config) { c.MaxNumSeqs = 2 }),
		ops: []op{
			add("A", toks(0, 4), 2, 0), add("B", toks(10, 4), 2, 0), add("C", toks(20, 4), 2, 0), steps(4),
		},
		want: `
			step 1: A[0:4]* B[0:4]* => A=100 B=100
			step 2: A[4:5]* B[4:5]* => A=101(len) B=101(len)
			step 3: C[0:4]* => C=100
			step 4: C[4:5]* => C=101(len)`,
	}, {
		name: "one token per step",
		cfg:  small(func(c *Config) { c.MaxNumBatchedTokens = 1 }),
		ops:  []op{add("A", toks(0, 3), 2, 0), add("B", toks(10, 1), 1, 0), steps(6)},
		want: `
			step 1: A[0:1]
			step 2: A[1:2]
			step 3: A[2:3]* => A=100
			step 4: A[3:4]* => A=101(len)
			step 5: B[0:1]* => B=100(len)
			step 6: idle`,
	}})
}

// A long prompt is prefilled in chunks of what the decoders leave of the
// budget, whatever its priority: they decode every step.
func TestTraceChunkedPrefill(t *testing.T) {
	long := toks(100, 30)
	runTraceCases(t, []traceCase{{
		name: "long prompt of higher priority",
		cfg:  small(func(c *Config) { c.MaxNumBatchedTokens = 8 }),
		ops:  []op{add("A", toks(0, 4), 8, 1), add("B", toks(10, 4), 8, 1), steps(1), add("L", long, 1, 0), steps(6)},
		want: `
			step 1: A[0:4]* B[0:4]* => A=100 B=100
			step 2: A[4:5]* B[4:5]* L[0:6] => A=101 B=101
			step 3: L[6:12] A[5:6]* B[5:6]* => A=102 B=102
			step 4: L[12:18] A[6:7]* B[6:7]* => A=103 B=103
			step 5: L[18:24] A[7:8]* B[7:8]* => A=104 B=104
			step 6: L[24:30]* A[8:9]* B[8:9]* => L=100(len) A=105 B=105
			step 7: A[9:10]* B[9:10]* => A=106 B=106`,
	}, {
		name: "long prompt of the same priority",
		cfg:  small(func(c *Config) { c.MaxNumBatchedTokens = 8 }),
		ops:  []op{add("A", toks(0, 4), 8, 0), add("B", toks(10, 4), 8, 0), steps(1), add("L", long, 1, 0), steps(6)},
		want: `
			step 1: A[0:4]* B[0:4]* => A=100 B=100
			step 2: A[4:5]* B[4:5]* L[0:6] => A=101 B=101
			step 3: A[5:6]* B[5:6]* L[6:12] => A=102 B=102
			step 4: A[6:7]* B[6:7]* L[12:18] => A=103 B=103
			step 5: A[7:8]* B[7:8]* L[18:24] => A=104 B=104
			step 6: A[8:9]* B[8:9]* L[24:30]* => A=105 B=105 L=100(len)
			step 7: A[9:10]* B[9:10]* => A=106 B=106`,
	}, {
		name: "a budget of two",
		cfg:  small(func(c *Config) { c.MaxNumBatchedTokens = 2 }),
		ops:  []op{add("A", toks(0, 2), 5, 1), steps(2), add("L", toks(20, 3), 1, 0), steps(4)},
		want: `
			step 1: A[0:2]* => A=100
			step 2: A[2:3]* => A=101
			step 3: A[3:4]* L[0:1] => A=102
			step 4: L[1:2] A[4:5]* => A=103
			step 5: L[2:3]* A[5:6]* => L=100(len) A=104(len)
			step 6: idle`,
	}, {
		name:        "a budget of one: decoders first",
		cfg:         small(func(c *Config) { c.MaxNumBatchedTokens = 1 }),
		manualReady: true,
		ops: []op{
			add("A", toks(0, 1), 3, 1), steps(1), add("L", toks(20, 3), 1, 0), steps(1), ready("A"), steps(2),
			ready("A"), steps(2),
		},
		want: `
			step 1: A[0:1]* => A=100
			step 2: L[0:1]
			step 3: A[1:2]* => A=101
			step 4: L[1:2]
			step 5: L[2:3]* => L=100(len)
			step 6: A[2:3]* => A=102(len)`, // the last prompt token costs one, as a decode: priority
	}, {
		name: "two prompts share what is left, in order",
		cfg:  small(func(c *Config) { c.MaxNumBatchedTokens = 8 }),
		ops:  []op{add("A", toks(0, 4), 4, 0), steps(1), add("L", toks(20, 9), 1, 0), add("M", toks(40, 9), 1, 0), steps(4)},
		want: `
			step 1: A[0:4]* => A=100
			step 2: A[4:5]* L[0:7] => A=101
			step 3: A[5:6]* L[7:9]* M[0:5] => A=102 L=100(len)
			step 4: A[6:7]* M[5:9]* => A=103(len) M=100(len)
			step 5: idle`,
	}})
}

func TestTracePrefixCache(t *testing.T) {
	p := toks(0, 12) // three full blocks
	runTraceCases(t, []traceCase{{
		name: "hits on freed and on running blocks",
		cfg:  small(nil),
		ops: []op{
			add("A", append(slices.Clone(p), 50, 51), 1, 0), steps(1), tables(), stats(),
			add("B", append(slices.Clone(p), 60, 61, 62), 3, 0), steps(1),
			add("C", append(slices.Clone(p), 70), 2, 0), steps(1), tables("B", "C"),
			cached(p, "A", "B", "C"), stats(),
			add("D", p, 1, 0), steps(1), stats(),
		},
		want: `
			step 1: A[0:14]* => A=100(len)
			tables
			stats run=0 wait=0 swapped=0 free=16/16 queries=14 hits=0 preempt=0 out=0 in=0 rejected=0 host=0/0
			step 2: B[12:15]* => B=100
			step 3: B[15:16]* C[12:13]* => B=101 C=100
			tables B=[0 1 2 4] C=[0 1 2 5]
			cached 8 A=0 B=12 C=12
			stats run=2 wait=0 swapped=0 free=11/16 queries=42 hits=24 preempt=0 out=0 in=0 rejected=0 host=0/0
			step 4: B[16:17]* C[13:14]* D[8:12]* => B=102(len) C=101(len) D=100(len)
			stats run=0 wait=0 swapped=0 free=16/16 queries=54 hits=32 preempt=0 out=0 in=0 rejected=0 host=0/0`,
	}, {
		name: "a hit on a block computed in the same step",
		cfg:  small(nil),
		ops: []op{
			add("A", append(slices.Clone(p), 50), 1, 0), add("B", append(slices.Clone(p), 60), 1, 0),
			steps(1), add("C", append(slices.Clone(p), 70), 1, 0), schedule(), tables("C"), done(),
		},
		want: `
			step 1: A[0:13]* B[12:13]* => A=100(len) B=100(len)
			step 2: C[12:13]* => C=100(len)
			tables C=[0 1 2 5]`,
	}, {
		name: "no prefix caching",
		cfg:  small(func(c *Config) { c.NoPrefixCaching = true }),
		ops: []op{
			add("A", append(slices.Clone(p), 50), 1, 0), steps(1), add("B", append(slices.Clone(p), 60), 1, 0),
			steps(1), cached(p, "B"), stats(),
		},
		want: `
			step 1: A[0:13]* => A=100(len)
			step 2: B[0:13]* => B=100(len)
			cached 0 B=0
			stats run=0 wait=0 swapped=0 free=16/16 queries=0 hits=0 preempt=0 out=0 in=0 rejected=0 host=0/0`,
	}})
}
