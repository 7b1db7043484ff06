package sched

import "testing"

func TestTracePreemption(t *testing.T) {
	runTraceCases(t, []traceCase{{
		name: "lowest priority, newest first",
		cfg:  small(func(c *Config) { c.NumBlocks = 5 }),
		ops: []op{
			add("A", toks(0, 8), 8, 0), add("B", toks(10, 4), 8, 1), add("C", toks(20, 4), 8, 1), steps(7), stats(),
		},
		want: `
			step 1: A[0:8]* B[0:4]* C[0:4]* => A=100 B=100 C=100
			step 2: A[8:9]* B[4:5]* | preempt C(recompute) => A=101 B=101
			step 3: A[9:10]* B[5:6]* => A=102 B=102
			step 4: A[10:11]* B[6:7]* => A=103 B=103
			step 5: A[11:12]* B[7:8]* => A=104 B=104
			step 6: A[12:13]* | preempt B(recompute) => A=105
			step 7: A[13:14]* => A=106
			stats run=1 wait=2 swapped=0 free=1/5 queries=16 hits=0 preempt=2 out=0 in=0 rejected=0 host=0/0`,
	}, {
		name: "self-preemption behind a scheduled sequence",
		cfg:  small(func(c *Config) { c.NumBlocks = 3 }),
		ops:  []op{add("A", toks(0, 5), 3, 0), add("B", toks(10, 4), 3, 1), steps(4)},
		want: `
			step 1: A[0:5]* B[0:4]* => A=100 B=100
			step 2: A[5:6]* | preempt B(recompute) => A=101
			step 3: A[6:7]* => A=102(len)
			step 4: B[4:5]* | resume B => B=101`,
	}, {
		name:        "self-preemption behind a sequence that is not ready",
		cfg:         small(func(c *Config) { c.NumBlocks = 3 }),
		manualReady: true,
		ops: []op{
			add("A", toks(0, 5), 3, 0), add("B", toks(10, 4), 3, 1), steps(1), ready("B"), steps(1), stats(),
			ready("A"), steps(3),
		},
		want: `
			step 1: A[0:5]* B[0:4]* => A=100 B=100
			step 2: | preempt B(recompute)
			stats run=1 wait=1 swapped=0 free=1/3 queries=9 hits=0 preempt=1 out=0 in=0 rejected=0 host=0/0
			step 3: A[5:6]* => A=101
			step 4: idle
			step 5: idle`,
	}})
}

func TestTraceRecompute(t *testing.T) {
	runTraceCases(t, []traceCase{{
		name: "resume from the prefix cache",
		cfg:  small(func(c *Config) { c.NumBlocks = 4 }),
		ops: []op{
			add("A", toks(0, 4), 2, 0), add("B", toks(10, 12), 4, 1), steps(1), tables("A", "B"), steps(4),
			cached(toks(10, 12), "B"), stats(),
		},
		want: `
			step 1: A[0:4]* B[0:12]* => A=100 B=100
			tables A=[0] B=[1 2 3]
			step 2: A[4:5]* | preempt B(recompute) => A=101(len)
			step 3: B[8:13]* | resume B => B=101
			step 4: B[13:14]* => B=102
			step 5: B[14:15]* => B=103(len)
			cached 8 B=0
			stats run=0 wait=0 swapped=0 free=4/4 queries=29 hits=8 preempt=1 out=0 in=0 rejected=0 host=0/0`,
	}})
}

func TestTraceSwap(t *testing.T) {
	runTraceCases(t, []traceCase{{
		name: "swap out, swap in behind the prefix cache",
		cfg:  small(func(c *Config) { c.NumBlocks = 4; c.Preemption = Swap; c.NumHostBlocks = 4 }),
		ops: []op{
			add("A", toks(0, 4), 2, 0), add("B", toks(10, 12), 4, 1), steps(1), tables("A", "B"), steps(1), stats(),
			steps(1), tables("B"), steps(3), stats(),
		},
		want: `
			step 1: A[0:4]* B[0:12]* => A=100 B=100
			tables A=[0] B=[1 2 3]
			step 2: A[4:5]* | preempt B(swap) | out 1>0 2>1 3>2 => A=101(len)
			stats run=0 wait=0 swapped=1 free=4/4 queries=16 hits=0 preempt=1 out=1 in=0 rejected=0 host=1/4
			step 3: B[12:13]* | in 2>3 | resume B => B=101
			tables B=[1 2 3 0]
			step 4: B[13:14]* => B=102
			step 5: B[14:15]* => B=103(len)
			step 6: idle
			stats run=0 wait=0 swapped=0 free=4/4 queries=29 hits=8 preempt=1 out=1 in=1 rejected=0 host=4/4`,
	}, {
		name: "swap out and in without prefix cache, partial block",
		cfg: small(func(c *Config) {
			c.NumBlocks = 4
			c.Preemption = Swap
			c.NumHostBlocks = 4
			c.NoPrefixCaching = true
		}),
		ops: []op{
			add("A", toks(0, 4), 2, 0), add("B", toks(10, 10), 4, 1), steps(1), tables("A", "B"), steps(1),
			steps(1), tables("B"), steps(3), stats(),
		},
		want: `
			step 1: A[0:4]* B[0:10]* => A=100 B=100
			tables A=[0] B=[1 2 3]
			step 2: A[4:5]* | preempt B(swap) | out 1>0 2>1 3>2 => A=101(len)
			step 3: B[10:11]* | in 0>2 1>1 2>3 | resume B => B=101
			tables B=[2 1 3]
			step 4: B[11:12]* => B=102
			step 5: B[12:13]* => B=103(len)
			step 6: idle
			stats run=0 wait=0 swapped=0 free=4/4 queries=0 hits=0 preempt=1 out=1 in=1 rejected=0 host=4/4`,
	}, {
		name: "host tier full: recompute",
		cfg:  small(func(c *Config) { c.NumBlocks = 4; c.Preemption = Swap; c.NumHostBlocks = 2 }),
		ops: []op{
			add("A", toks(0, 4), 2, 0), add("B", toks(10, 12), 4, 1), steps(3), stats(),
		},
		want: `
			step 1: A[0:4]* B[0:12]* => A=100 B=100
			step 2: A[4:5]* | preempt B(recompute) => A=101(len)
			step 3: B[8:13]* | resume B => B=101
			stats run=1 wait=0 swapped=0 free=0/4 queries=29 hits=8 preempt=1 out=0 in=0 rejected=0 host=2/2`,
	}})
}
