package sched

import (
	"slices"
	"testing"
)

func TestTraceNeverFits(t *testing.T) {
	runTraceCases(t, []traceCase{{
		name: "rejected at Add",
		cfg:  small(func(c *Config) { c.MaxModelLen = 16; c.NumBlocks = 3 }),
		ops: []op{
			add("E", nil, 1, 0),
			add("L", toks(0, 16), 1, 0), // prompt fills the context
			add("M", toks(0, 15), 0, 0), // 15 tokens to compute: 4 blocks
			add("O", toks(0, 12), 2, 0), // 13 tokens: 4 blocks
			add("N", toks(0, 12), 1, 0), // 12 tokens: 3 blocks
			add("P", toks(0, 11), 0, 0), // 15 tokens: 4 blocks
			add("N", toks(0, 12), 1, 0), stats(), steps(2),
		},
		want: `
			add E: never fits
			add L: never fits
			add M: never fits
			add O: never fits
			add P: never fits
			add N: exists
			stats run=0 wait=1 swapped=0 free=3/3 queries=0 hits=0 preempt=0 out=0 in=0 rejected=5 host=0/0
			step 1: N[0:12]* => N=100(len)
			step 2: idle`,
	}, {
		name: "fits the context exactly",
		cfg:  small(func(c *Config) { c.MaxModelLen = 13; c.NumBlocks = 3 }),
		ops:  []op{add("A", toks(0, 10), 0, 0), steps(4)},
		want: `
			step 1: A[0:10]* => A=100
			step 2: A[10:11]* => A=101
			step 3: A[11:12]* => A=102(len)
			step 4: idle`,
	}})
}

func TestTraceFinish(t *testing.T) {
	swap := func(c *Config) { c.NumBlocks = 4; c.Preemption = Swap; c.NumHostBlocks = 4 }
	runTraceCases(t, []traceCase{{
		name: "waiting",
		cfg:  small(func(c *Config) { c.MaxNumSeqs = 1 }),
		ops:  []op{add("A", toks(0, 4), 3, 0), add("W", toks(10, 4), 3, 0), steps(1), cancel("W"), steps(1)},
		want: `
			step 1: A[0:4]* => A=100
			cancel W(waiting): free 15 host 0
			step 2: A[4:5]* => A=101`,
	}, {
		name: "running mid-prefill",
		cfg:  small(func(c *Config) { c.MaxNumBatchedTokens = 5 }),
		ops:  []op{add("L", toks(0, 12), 3, 0), steps(2), cancel("L"), steps(1)},
		want: `
			step 1: L[0:5]
			step 2: L[5:10]
			cancel L(running): free 16 host 0
			step 3: idle`,
	}, {
		name: "running decode",
		cfg:  small(nil),
		ops:  []op{add("A", toks(0, 6), 3, 0), add("B", toks(10, 4), 3, 0), steps(1), cancel("A"), steps(1)},
		want: `
			step 1: A[0:6]* B[0:4]* => A=100 B=100
			cancel A(running): free 15 host 0
			step 2: B[4:5]* => B=101`,
	}, {
		name: "swapped",
		cfg:  small(swap),
		ops:  []op{add("A", toks(0, 4), 2, 0), add("B", toks(10, 12), 4, 1), steps(2), state("B"), cancel("B"), steps(1)},
		want: `
			step 1: A[0:4]* B[0:12]* => A=100 B=100
			step 2: A[4:5]* | preempt B(swap) | out 1>0 2>1 3>2 => A=101(len)
			state B=swapped,ready[100]
			cancel B(swapped): free 4 host 4
			step 3: idle`,
	}, {
		name: "in flight, its prefix blocks hit after",
		cfg:  small(nil),
		ops: []op{
			add("A", toks(0, 9), 3, 0), add("B", toks(20, 4), 3, 0), schedule(), cancel("A"), done(),
			add("C", toks(0, 10), 1, 0), steps(1), stats(),
		},
		want: `
			step 1: A[0:9]* B[0:4]* => B=100
			cancel A(running, in flight): free 15 host 0
			step 2: B[4:5]* C[8:10]* => B=101 C=100(len)
			stats run=1 wait=0 swapped=0 free=14/16 queries=23 hits=8 preempt=0 out=0 in=0 rejected=0 host=0/0`,
	}, {
		name: "swapped out in flight",
		cfg:  small(swap),
		ops: []op{
			add("A", toks(0, 4), 2, 0), add("B", toks(10, 12), 4, 1), steps(1), schedule(), cancel("B"), done(),
		},
		want: `
			step 1: A[0:4]* B[0:12]* => A=100 B=100
			step 2: A[4:5]* | preempt B(swap) | out 1>0 2>1 3>2 => A=101(len)
			cancel B(swapped): free 2 host 4`,
	}, {
		name: "swapped in in flight",
		cfg:  small(swap),
		ops: []op{
			add("A", toks(0, 4), 2, 0), add("B", toks(10, 12), 4, 1), steps(2), schedule(), cancel("B"), done(),
			stats(),
		},
		want: `
			step 1: A[0:4]* B[0:12]* => A=100 B=100
			step 2: A[4:5]* | preempt B(swap) | out 1>0 2>1 3>2 => A=101(len)
			step 3: B[12:13]* | in 2>3 | resume B
			cancel B(running, in flight): free 4 host 1
			stats run=0 wait=0 swapped=0 free=4/4 queries=29 hits=8 preempt=1 out=1 in=1 rejected=0 host=4/4`,
	}})
}

func TestTraceFail(t *testing.T) {
	p := toks(0, 12)
	runTraceCases(t, []traceCase{{
		name: "requeue and reset the prefix cache",
		cfg:  small(nil),
		ops: []op{
			add("A", toks(20, 4), 3, 0), steps(1), add("B", append(slices.Clone(p), 50), 1, 0),
			add("C", append(slices.Clone(p), 60), 1, 0), schedule(), fail(),
			cached(p, "B", "C"), state("A", "B", "C"), stats(), steps(2), cached(p, "B", "C"),
		},
		want: `
			step 1: A[0:4]* => A=100
			step 2: A[4:5]* B[0:13]* C[12:13]*
			fail: requeue A B C
			cached 0 B=0 C=0
			state A=waiting,ready[100] B=waiting,ready[] C=waiting,ready[]
			stats run=0 wait=3 swapped=0 free=16/16 queries=30 hits=12 preempt=0 out=0 in=0 rejected=0 host=0/0
			step 3: A[0:5]* B[0:13]* C[12:13]* | resume A => A=101 B=100(len) C=100(len)
			step 4: A[5:6]* => A=102(len)
			cached 8 B=0 C=12`,
	}, {
		name:        "swapped-out victim recomputes, a victim not ready stays so",
		cfg:         small(func(c *Config) { c.NumBlocks = 4; c.Preemption = Swap; c.NumHostBlocks = 4 }),
		manualReady: true,
		ops: []op{
			add("A", toks(0, 8), 3, 0), add("B", toks(10, 4), 3, 1), add("C", toks(20, 4), 3, 2), steps(1),
			ready("A"), schedule(), fail(), state("A", "B", "C"), stats(), steps(1), ready("B", "C"), steps(3),
		},
		want: `
			step 1: A[0:8]* B[0:4]* C[0:4]* => A=100 B=100 C=100
			step 2: A[8:9]* | preempt C(swap) | out 3>0
			fail: requeue A C
			state A=waiting,ready[100] B=running[100] C=waiting[100]
			stats run=1 wait=2 swapped=0 free=3/4 queries=16 hits=0 preempt=1 out=1 in=0 rejected=0 host=4/4
			step 3: A[0:9]* | resume A => A=101
			step 4: | preempt B(swap) | out 2>0
			step 5: idle
			step 6: idle`,
	}, {
		name: "cancelled in flight, then failed",
		cfg:  small(nil),
		ops: []op{
			add("A", toks(0, 4), 3, 0), add("B", toks(10, 4), 3, 0), steps(1), schedule(), cancel("A"), fail(),
			steps(1),
		},
		want: `
			step 1: A[0:4]* B[0:4]* => A=100 B=100
			step 2: A[4:5]* B[4:5]*
			cancel A(running, in flight): free 14 host 0
			fail: requeue B
			step 3: B[0:5]* | resume B => B=101`,
	}, {
		name: "swapped in by the failed step",
		cfg:  small(func(c *Config) { c.NumBlocks = 4; c.Preemption = Swap; c.NumHostBlocks = 4 }),
		ops: []op{
			add("A", toks(0, 4), 2, 0), add("B", toks(10, 12), 4, 1), steps(2), schedule(), fail(), stats(), steps(1),
		},
		want: `
			step 1: A[0:4]* B[0:12]* => A=100 B=100
			step 2: A[4:5]* | preempt B(swap) | out 1>0 2>1 3>2 => A=101(len)
			step 3: B[12:13]* | in 2>3 | resume B
			fail: requeue B
			stats run=0 wait=1 swapped=0 free=4/4 queries=29 hits=8 preempt=1 out=1 in=1 rejected=0 host=4/4
			step 4: B[0:13]* | resume B => B=101`,
	}})
}

func TestTraceFinishReasons(t *testing.T) {
	runTraceCases(t, []traceCase{{
		name: "stop token, max tokens, context",
		cfg:  small(func(c *Config) { c.MaxModelLen = 10 }),
		eos:  102,
		ops: []op{
			add("A", toks(0, 4), 5, 0), add("B", toks(10, 4), 2, 0), add("C", toks(20, 8), 0, 0), steps(4),
			state("A", "B", "C"),
		},
		want: `
			step 1: A[0:4]* B[0:4]* C[0:8]* => A=100 B=100 C=100
			step 2: A[4:5]* B[4:5]* C[8:9]* => A=101 B=101(len) C=101(len)
			step 3: A[5:6]* => A=102(stop)
			step 4: idle
			state A=finished[100 101] B=finished[100 101] C=finished[100 101]`,
	}})
}

func TestTraceTrigger(t *testing.T) {
	runTraceCases(t, []traceCase{{
		name:        "fire and pending",
		cfg:         small(func(c *Config) { c.MaxNumBatchedTokens = 8; c.MaxNumSeqs = 3 }),
		manualReady: true,
		ops: []op{
			trigger(), add("A", toks(0, 3), 3, 0), trigger(), add("B", toks(10, 6), 3, 0), trigger(),
			steps(1), trigger(), ready("A"), trigger(), steps(1), trigger(), ready("A", "B"),
			add("C", toks(20, 1), 3, 0), trigger(), steps(1), trigger(),
			add("D", toks(30, 1), 1, 0), add("E", toks(40, 1), 1, 0), trigger(), add("F", toks(50, 1), 1, 0), trigger(),
		},
		want: `
			trigger fire=false pending=false
			trigger fire=false pending=true
			trigger fire=true pending=true
			step 1: A[0:3]* B[0:5] => A=100
			trigger fire=false pending=true
			trigger fire=true pending=true
			step 2: A[3:4]* B[5:6]* => A=101 B=100
			trigger fire=false pending=false
			trigger fire=true pending=true
			step 3: A[4:5]* B[6:7]* C[0:1]* => A=102(len) B=101 C=100
			trigger fire=false pending=false
			trigger fire=false pending=true
			trigger fire=true pending=true`,
	}})
}
