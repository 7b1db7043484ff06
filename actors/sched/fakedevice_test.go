package sched

import (
	"fmt"
	"slices"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

// The fake model. A position's simulated K/V is a hash chained over the
// tokens up to it (mix), so it stands for the whole prefix, as a real K/V
// does; the next token is a hash of every K/V the step reads through the
// block table: with a sliding window (Config.Window), the K/V of the
// positions in the window of the last one. A wrong block table, a wrong prefix hit, a lost or misdirected
// swap copy or a stale block changes what is read, and is caught.

const kvSeed uint64 = 0x9e3779b97f4a7c15

func mix(prev uint64, tok int32) uint64 {
	h := (prev ^ uint64(uint32(tok))) * 0x100000001b3
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

// kvChain returns the simulated K/V of every position of tokens.
func kvChain(tokens []int32) []uint64 {
	v := make([]uint64, len(tokens))
	prev := kvSeed
	for i, t := range tokens {
		prev = mix(prev, t)
		v[i] = prev
	}
	return v
}

// nextToken is the fake model's next token after the K/V vals (those the
// last position attends to).
func nextToken(vals []uint64, vocab int) int32 {
	h := uint64(14695981039346656037)
	for _, v := range vals {
		h = (h ^ v) * 1099511628211
		h ^= h >> 31
	}
	return int32(h % uint64(vocab))
}

// generate is what a sequence produces alone: tokens after prompt until eos
// (not output) or maxLen tokens in all, reading the last window positions (0:
// all).
func generate(prompt []int32, maxLen, vocab, window int, eos int32) (out []int32, finish string) {
	tokens := slices.Clone(prompt)
	vals := kvChain(tokens)
	for {
		tok := nextToken(vals[kv.WindowStart(len(vals)-1, window):], vocab)
		if tok == eos {
			return out, messages.FinishStop
		}
		out, tokens = append(out, tok), append(tokens, tok)
		if len(tokens) >= maxLen {
			return out, messages.FinishLength
		}
		vals = append(vals, mix(vals[len(vals)-1], tok))
	}
}

// device simulates a device's KV cache and host tier: per block slot, the
// K/V written into it by the chunks of a plan or copied by SwapOut/SwapIn.
type device struct {
	bs, vocab int
	window    int        // Config.Window: a token reads the positions from kv.WindowStart
	kv, host  [][]uint64 // (num_blocks)(block_size), (num_host_blocks)(block_size)
	dirtyKV   []int32    // device blocks the last plan wrote
	dirtyHost []int32    // host blocks the last plan wrote
	poison    uint64
}

func newDevice(cfg Config, vocab int) *device {
	d := &device{bs: cfg.BlockSize, vocab: vocab, window: cfg.Window, poison: 0xbad}
	d.kv = make([][]uint64, cfg.NumBlocks)
	for i := range d.kv {
		d.kv[i] = make([]uint64, cfg.BlockSize)
	}
	d.host = make([][]uint64, cfg.NumHostBlocks)
	for i := range d.host {
		d.host[i] = make([]uint64, cfg.BlockSize)
	}
	return d
}

func (d *device) read(table []int32, pos int) uint64 { return d.kv[table[pos/d.bs]][pos%d.bs] }

// run executes p as a device would, the copies first, and returns one token
// per chunk with Logits. Its error names the first K/V a chunk reads that is
// not the K/V of its sequence's tokens.
func (d *device) run(s *Scheduler, p *Plan) ([]int32, error) {
	d.dirtyKV, d.dirtyHost = d.dirtyKV[:0], d.dirtyHost[:0]
	if len(p.SwapOut) > 0 && len(p.SwapIn) > 0 {
		for _, o := range p.SwapOut {
			for _, i := range p.SwapIn {
				if o.Dst == i.Src {
					return nil, fmt.Errorf("host block %d swapped out and in by one plan", o.Dst)
				}
			}
		}
	}
	for _, c := range p.SwapOut {
		copy(d.host[c.Dst], d.kv[c.Src])
		d.dirtyHost = append(d.dirtyHost, c.Dst)
	}
	for _, c := range p.SwapIn {
		copy(d.kv[c.Dst], d.host[c.Src])
		d.dirtyKV = append(d.dirtyKV, c.Dst)
	}
	tables := make([][]int32, len(p.Chunks))
	for i, c := range p.Chunks {
		t := s.BlockTable(c.Seq)
		if want := (c.End + d.bs - 1) / d.bs; len(t) != want || s.blocks.NumTokens(c.Seq.ID) != c.End {
			return nil, fmt.Errorf("seq %d: chunk [%d:%d] with a table of %d blocks covering %d tokens",
				c.Seq.ID, c.Start, c.End, len(t), s.blocks.NumTokens(c.Seq.ID))
		}
		tables[i] = slices.Clone(t)
		for pos := c.Start; pos < c.End; pos += d.bs - pos%d.bs {
			d.dirtyKV = append(d.dirtyKV, t[pos/d.bs])
		}
		// Every token of the chunk reads its window; the first reads from
		// furthest back, and the chain below reads position Start-1.
		from := kv.WindowStart(c.Start, d.window)
		if c.Start > 0 {
			from = min(from, c.Start-1)
		}
		if n := kv.NumFreed(t); n*d.bs > from || slices.Contains(t[n:], kv.NoBlock) {
			return nil, fmt.Errorf("seq %d: chunk [%d:%d] reads from position %d, its table %v has freed blocks",
				c.Seq.ID, c.Start, c.End, from, t)
		}
	}
	// Forward writes a layer's K/V before it attends, so a chunk may read
	// what another chunk of the step writes: compute to a fixed point. Two
	// chunks writing one slot never settle.
	for pass := 0; ; pass++ {
		if pass > len(p.Chunks)+1 {
			return nil, fmt.Errorf("chunks of one step write the same slots")
		}
		changed := false
		for i, c := range p.Chunks {
			prev := kvSeed
			if c.Start > 0 {
				prev = d.read(tables[i], c.Start-1)
			}
			for pos := c.Start; pos < c.End; pos++ {
				v := mix(prev, c.Seq.Tokens[pos])
				if b := d.kv[tables[i][pos/d.bs]]; b[pos%d.bs] != v {
					b[pos%d.bs], changed = v, true
				}
				prev = v
			}
		}
		if !changed {
			break
		}
	}
	var sampled []int32
	for i, c := range p.Chunks {
		from := kv.WindowStart(c.End-1, d.window)
		vals := make([]uint64, c.End)
		for pos := from; pos < c.End; pos++ {
			vals[pos] = d.read(tables[i], pos)
		}
		if err := d.verify(c.Seq.ID, c.Seq.Tokens[:c.End], vals, from, "chunk"); err != nil {
			return nil, err
		}
		if c.Logits {
			sampled = append(sampled, nextToken(vals[from:], d.vocab))
		}
	}
	return sampled, nil
}

// verify compares the K/V vals read for tokens, from position from on, with
// what they should be.
func (d *device) verify(id kv.SeqID, tokens []int32, vals []uint64, from int, what string) error {
	want := kvChain(tokens)
	for pos := from; pos < len(vals); pos++ {
		if vals[pos] != want[pos] {
			return fmt.Errorf("seq %d (%s): position %d of %d reads a wrong K/V", id, what, pos, len(tokens))
		}
	}
	return nil
}

// lose overwrites everything the last plan wrote, as a failed device may
// leave it.
func (d *device) lose() {
	for _, b := range d.dirtyKV {
		for i := range d.kv[b] {
			d.poison++
			d.kv[b][i] = d.poison
		}
	}
	for _, b := range d.dirtyHost {
		for i := range d.host[b] {
			d.poison++
			d.host[b][i] = d.poison
		}
	}
}
