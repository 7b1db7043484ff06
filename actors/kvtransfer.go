package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/messages"
)

// KVTransferBackend is a Backend whose K/V blocks can be copied out and in
// (disaggregated prefill and decode, actors/cluster): ExportBlocks appends
// the blocks' K/V to dst, KVShape() of them each; ImportBlocks writes such
// data into blocks. Both run on the device actor, between steps.
type KVTransferBackend interface {
	Backend
	KVShape() messages.KVShape
	ExportBlocks(dst []byte, blocks []int32) ([]byte, error)
	ImportBlocks(blocks []int32, data []byte) error
}

// kvTransfers is the batcher's state for K/V moving in and out: exports
// waiting for their device's copy, and the ids of their holds (a range of
// their own, above every sequence id).
type kvTransfers struct {
	next    uint64
	pending map[uint64]*kvPending
}

type kvPending struct {
	replyTo *actor.PID
	dev     *deviceSlot
	shape   messages.KVShape
	from    int
}

const kvHoldIDs = uint64(1) << 62

// kvRead asks a device for the K/V of blocks held by hold id. Batcher ->
// device; answered with kvReadDone.
type kvRead struct {
	id     uint64
	blocks []int32
}

type kvReadDone struct {
	id   uint64
	data []byte
	err  error
}

// kvWrite writes imported K/V into blocks. Batcher -> device, ahead of any
// step that reads them.
type kvWrite struct {
	blocks []int32
	data   []byte
}

// kvBackend returns d's backend as a KVTransferBackend, or an error.
func (b *batcher) kvBackend(d *deviceSlot) (KVTransferBackend, error) {
	if d == nil {
		return nil, fmt.Errorf("actors: no live device")
	}
	be, ok := b.backends[d.index].(KVTransferBackend)
	if !ok {
		return nil, fmt.Errorf("actors: device %d cannot move K/V blocks", d.index)
	}
	return be, nil
}

func (b *batcher) onCachedTokens(ctx actor.Context, msg *messages.CachedTokens) {
	d := b.place(0, msg.Tokens)
	if d == nil {
		ctx.Respond(&messages.KVCached{Err: "actors: no live device"})
		return
	}
	ctx.Respond(&messages.KVCached{NumCachedTokens: d.sched.NumCachedTokens(0, msg.Tokens)})
}

// onExportKV holds the cached blocks asked for and has their device copy
// them out; the answer goes out on kvReadDone.
func (b *batcher) onExportKV(ctx actor.Context, msg *messages.ExportKV) {
	d := b.place(0, msg.Tokens)
	be, err := b.kvBackend(d)
	if err != nil {
		ctx.Respond(&messages.KVExported{Err: err.Error()})
		return
	}
	b.kv.next++
	id := kvHoldIDs + b.kv.next
	blocks, err := d.sched.HoldPrefix(kv.SeqID(id), msg.Tokens, msg.From, msg.MaxBlocks)
	if err != nil {
		ctx.Respond(&messages.KVExported{Err: err.Error()})
		return
	}
	if len(blocks) == 0 {
		ctx.Respond(&messages.KVExported{Shape: be.KVShape(), From: msg.From})
		return
	}
	if b.kv.pending == nil {
		b.kv.pending = map[uint64]*kvPending{}
	}
	b.kv.pending[id] = &kvPending{replyTo: ctx.Sender(), dev: d, shape: be.KVShape(), from: msg.From}
	ctx.Send(d.pid, &kvRead{id: id, blocks: append([]int32(nil), blocks...)})
}

func (b *batcher) onKVReadDone(ctx actor.Context, msg *kvReadDone) {
	p, ok := b.kv.pending[msg.id]
	if !ok {
		return
	}
	delete(b.kv.pending, msg.id)
	_ = p.dev.sched.Release(kv.SeqID(msg.id))
	out := &messages.KVExported{Shape: p.shape, From: p.from}
	if msg.err != nil {
		out.Err = msg.err.Error()
	} else {
		out.Data, out.Blocks = msg.data, len(msg.data)/max(kvBlockBytes(p.shape), 1)
	}
	if p.replyTo != nil {
		ctx.Send(p.replyTo, out)
	}
}

func kvBlockBytes(s messages.KVShape) int { return s.Layers * 2 * s.BlockSize * s.RowBytes }

// onImportKV checks the blocks against the device's shape, registers the
// ones its prefix cache lacks and has the device write them.
func (b *batcher) onImportKV(ctx actor.Context, msg *messages.ImportKV) {
	d := b.place(0, msg.Tokens)
	be, err := b.kvBackend(d)
	if err != nil {
		ctx.Respond(&messages.KVImported{Err: err.Error()})
		return
	}
	shape := be.KVShape()
	n := kvBlockBytes(shape)
	end := msg.From + msg.Blocks*shape.BlockSize
	switch {
	case msg.Shape != shape:
		err = fmt.Errorf("actors: K/V blocks of shape %+v, this device's are %+v", msg.Shape, shape)
	case msg.Blocks < 0 || msg.From < 0 || msg.From%shape.BlockSize != 0:
		err = fmt.Errorf("actors: K/V blocks from token %d, %d blocks: not whole blocks", msg.From, msg.Blocks)
	case len(msg.Data) != msg.Blocks*n:
		err = fmt.Errorf("actors: %d bytes of K/V for %d blocks of %d", len(msg.Data), msg.Blocks, n)
	case end >= len(msg.Tokens): // the last token's block is never a cache hit
		err = fmt.Errorf("actors: K/V blocks up to token %d of a %d-token prompt", end, len(msg.Tokens))
	}
	if err != nil {
		ctx.Respond(&messages.KVImported{Err: err.Error()})
		return
	}
	b.kv.next++
	id := kv.SeqID(kvHoldIDs + b.kv.next)
	cached, blocks, err := d.sched.ImportPrefix(id, msg.Tokens, msg.From, end)
	if err != nil {
		ctx.Respond(&messages.KVImported{NumCachedTokens: cached, Err: err.Error()})
		return
	}
	if len(blocks) > 0 {
		skip := (cached - msg.From) / shape.BlockSize
		ctx.Send(d.pid, &kvWrite{blocks: append([]int32(nil), blocks...), data: msg.Data[skip*n:]})
		_ = d.sched.Release(id) // the device writes them before any later step
	}
	ctx.Respond(&messages.KVImported{NumCachedTokens: cached, Imported: len(blocks)})
}

func (d *device) onKVRead(ctx actor.Context, msg *kvRead) {
	be, ok := d.backend.(KVTransferBackend)
	if !ok {
		ctx.Send(ctx.Parent(), &kvReadDone{id: msg.id, err: fmt.Errorf("device %d cannot move K/V blocks", d.index)})
		return
	}
	data, err := be.ExportBlocks(nil, msg.blocks)
	ctx.Send(ctx.Parent(), &kvReadDone{id: msg.id, data: data, err: err})
}

// onKVWrite writes imported blocks; the batcher checked their shape, so a
// failure is a broken invariant and the supervisor steps in (a restarted
// device's prefix cache is reset).
func (d *device) onKVWrite(msg *kvWrite) {
	if err := d.backend.(KVTransferBackend).ImportBlocks(msg.blocks, msg.data); err != nil {
		panic(fmt.Sprintf("device %d: %v", d.index, err))
	}
}

// CachedTokens returns how many leading tokens of tokens this runtime's
// prefix cache holds now (on the device a prompt would be placed on).
func (r *Runtime) CachedTokens(tokens []int32, timeout time.Duration) (int, error) {
	c, err := askKV(r, &messages.CachedTokens{Tokens: tokens}, timeout, "cached tokens", func(c *messages.KVCached) string { return c.Err })
	if err != nil {
		return 0, err
	}
	return c.NumCachedTokens, nil
}

// ExportKV returns the K/V of the cached full blocks of req.Tokens from
// req.From on (fewer, or none, where the cache lacks them).
func (r *Runtime) ExportKV(req *messages.ExportKV, timeout time.Duration) (*messages.KVExported, error) {
	e, err := askKV(r, req, timeout, "export K/V", func(e *messages.KVExported) string { return e.Err })
	if err != nil {
		return nil, err
	}
	return e, nil
}

// ImportKV gives exported K/V blocks to the prefix cache (see
// messages.ImportKV); a request over the same tokens then finds them. A
// refused import returns its answer with the error.
func (r *Runtime) ImportKV(req *messages.ImportKV, timeout time.Duration) (*messages.KVImported, error) {
	return askKV(r, req, timeout, "import K/V", func(i *messages.KVImported) string { return i.Err })
}

// askKV is askBatcher for an answer that carries the batcher's refusal
// (errOf of it, "" when none): that refusal is then the error.
func askKV[T any](r *Runtime, msg any, timeout time.Duration, what string, errOf func(T) string) (T, error) {
	res, err := askBatcher[T](r, msg, timeout, what)
	if err == nil && errOf(res) != "" {
		err = errors.New(errOf(res))
	}
	return res, err
}
