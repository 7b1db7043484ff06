package troupetest

import (
	"fmt"
	"sync"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// Script is a device backend (actors.Backend) whose "forward pass" answers
// from a script: each new sequence takes the next queued reply and is
// steered to its tokens one by one, then to the end-of-turn token. The
// logits it writes favour the scripted token by a wide margin, so any
// sampling settings pick it, while a grammar's mask still applies (a
// scripted token the grammar forbids gives way to an allowed one). It
// keeps no KV: a prompt's content does not matter, only its arrival.
//
// It serves one sequence at a time, as a test drives it: a sequence is
// new when a row with logits does not continue the last one (the next
// position, in a sequence with the same first KV block). A sequence that
// finds the queue empty ends at once (an empty reply).
type Script struct {
	vocab int
	eos   int32

	mu      sync.Mutex
	queue   [][]int32 // replies not yet started
	reply   []int32   // the current sequence's reply: what is left of it
	lastPos int32     // the position of the current sequence's last logits row
	block   int32     // the current sequence's first KV block; -1: none yet
	started int       // replies started
}

var _ actors.Backend = (*Script)(nil)

// NewScript returns a Script for a vocabulary of vocabSize tokens whose
// end of turn is eos (for WriteTinyModel's model: vocabulary size 259 and
// TinyEOS).
func NewScript(vocabSize int, eos int32) *Script {
	return &Script{vocab: vocabSize, eos: eos, block: -1}
}

// Push queues a reply: the tokens of one sequence's output, in order
// (tokenize its text with the runtime's tokenizer, without special
// tokens). The end-of-turn token follows it.
func (s *Script) Push(reply []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, append([]int32(nil), reply...))
}

// Tokenizer turns text into token ids (*actors.Runtime is one: a
// troupe.Model's Runtime()).
type Tokenizer interface {
	TokenizeText(text string, addSpecial, parseSpecial bool) ([]int32, error)
}

// PushText queues a reply given as text, tokenized by tok without special
// tokens added (those written in it, such as <|im_end|>, are parsed).
func (s *Script) PushText(tok Tokenizer, text string) error {
	ids, err := tok.TokenizeText(text, false, true)
	if err != nil {
		return fmt.Errorf("troupetest: scripting %q: %w", text, err)
	}
	s.Push(ids)
	return nil
}

// Started is the number of replies sequences have taken so far.
func (s *Script) Started() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// steer is the scripted margin: a logit this far above the others wins
// under any temperature, top-k, top-p or min-p.
const steer = 1e4

// Forward writes, for each row with logits, a row that steers its sequence
// to the next scripted token.
func (s *Script) Forward(b *model.Batch, logits []float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := 0
	for i, want := range b.Logits {
		if !want {
			continue
		}
		row := logits[r*s.vocab : (r+1)*s.vocab]
		clear(row)
		block := int32(-1)
		if bt := b.BlockTables[b.Seq[i]]; len(bt) > 0 {
			block = bt[0]
		}
		row[s.next(b.Positions[i], block)] = steer
		r++
	}
	return nil
}

// next is the token to steer a logits row at pos, of the sequence whose
// first block is block, to.
func (s *Script) next(pos, block int32) int32 {
	if s.block < 0 || pos != s.lastPos+1 || block != s.block { // a new sequence
		s.reply = nil
		if len(s.queue) > 0 {
			s.reply, s.queue = s.queue[0], s.queue[1:]
		}
		s.started++
	}
	t := s.eos
	if len(s.reply) > 0 {
		t, s.reply = s.reply[0], s.reply[1:]
	}
	s.lastPos, s.block = pos, block
	return t
}

// VocabSize is the width of a logits row.
func (s *Script) VocabSize() int { return s.vocab }

// NumBlocks is the KV blocks the Script pretends to hold: 4096 of 16
// tokens, enough for any test's context.
func (s *Script) NumBlocks() int { return 4096 }

// BlockSize is 16 token slots.
func (s *Script) BlockSize() int { return 16 }

// NumHostBlocks is 0: no swapping.
func (s *Script) NumHostBlocks() int { return 0 }

// SwapOut does nothing: a Script has no KV to move.
func (s *Script) SwapOut([]messages.BlockCopy) error { return nil }

// SwapIn does nothing: a Script has no KV to move.
func (s *Script) SwapIn([]messages.BlockCopy) error { return nil }
