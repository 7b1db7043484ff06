package sched

import "github.com/troupe-llm/troupe/kv"

// Status is where a sequence is in the schedule.
type Status int

const (
	Waiting  Status = iota // not yet admitted, or preempted by recompute
	Running                // holds device blocks
	Swapped                // preempted by swap: its blocks are in the host tier
	Finished               // done, cancelled or failed; holds nothing
)

func (s Status) String() string {
	return [...]string{"waiting", "running", "swapped", "finished"}[s]
}

// Seq is one sequence as the scheduler sees it. The scheduler owns it after
// Add; callers read it and change only Tokens through Done.
type Seq struct {
	ID       kv.SeqID
	Priority int     // lower runs first
	Tokens   []int32 // prompt, then the sampled tokens
	// PromptLen is the prompt's length; Tokens[PromptLen:] are outputs.
	PromptLen int
	// MaxLen is the length at which the sequence ends: prompt plus max
	// tokens, at most the model's context.
	MaxLen int
	// NumComputed is how many leading tokens have their K/V in the cache
	// (or in the host tier when swapped).
	NumComputed int
	// NumCachedTokens is how many prompt tokens the prefix cache held when
	// the sequence was first admitted (OpenAI's cached_tokens).
	NumCachedTokens int
	Status          Status
	// Ready is set while the sequence wants its next step; a step that
	// samples a token for it clears it until Ready is called again.
	Ready bool
	// NoPrefixCache computes every token, none taken from the prefix cache
	// (an embedding pools every token's hidden state).
	NoPrefixCache bool
	// Salt is the sequence's LoRA adapter set as the prefix cache knows
	// it (kv.SaltRootHash; 0: the base model): its blocks are shared only
	// with sequences of the same salt. Set it after Add, before the
	// sequence's first Schedule; preemption and swap keep it.
	Salt uint64
	// Whole computes the sequence in one step or not at all (an encoder's
	// tokens attend to all of it); it waits for a step with the budget.
	Whole bool
	// Spans are [start, end) runs of Tokens computed in one step each,
	// never split across steps (Gemma 3's image rows, which attend to one
	// another both ways): a chunk that would end inside one ends before it
	// and the rest waits for a step with the budget. A span longer than
	// the token budget can never be whole and is split as any tokens.
	Spans [][2]int
	// Draft is the speculative tokens the sequence proposes to follow its
	// last one, set by the caller before its next step (see Chunk.Draft);
	// Done clears it.
	Draft []int32

	arrival  uint64  // Add order: FCFS within a priority
	step     uint64  // the Schedule call that last gave it a chunk
	admitted bool    // NumCachedTokens is set
	host     []int32 // host-tier blocks while Swapped
}

// NumOutput is the number of tokens sampled so far.
func (q *Seq) NumOutput() int { return len(q.Tokens) - q.PromptLen }

// before orders sequences for service: priority, then arrival.
func before(a, b *Seq) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.arrival < b.arrival
}

// cut returns the end of a chunk [start, end) of q's tokens moved back so
// that no span the budget max could hold whole is split; start when none
// of the chunk may run in this step.
func (q *Seq) cut(start, end, max int) int {
	for _, sp := range q.Spans {
		a, b := sp[0], sp[1]
		if a < end && end < b && b-a <= max {
			end = min(end, a)
			if end <= start {
				return start
			}
		}
	}
	return end
}
