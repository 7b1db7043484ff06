package cluster

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/messages"
)

// kvPeer is each member's side of disaggregated prefill and decode (actor
// name kvName). As a prefill member it computes a prompt (kvPrefill) and
// sends the K/V blocks the decode member lacks, one bounded message at a
// time, each answered before the next goes (stop and wait: the decode
// member never holds more than one message of blocks, and a gap stops the
// transfer early). As a decode member it answers what it caches (kvHave)
// and imports blocks into its runtime's prefix cache (kvImport). The work
// that waits on a runtime runs on a goroutine per message, never in
// Receive.
type kvPeer struct {
	n *Node
}

const kvName = "troupe-kv"

// kvTimeout bounds one answer from the decode member (a message of at most
// kvChunkBytes, or a cache lookup): far above a loaded machine's time, so
// it catches only a member that stopped answering.
var kvTimeout = 60 * time.Second

// disaggCounters are a node's figures of disaggregated requests.
type disaggCounters struct {
	disaggregated, transferFailed, blocksSent, bytesSent, blocksReceived atomic.Int64
	// hook, set by tests, sees each kvImport before it is sent (its chunk
	// number from 0) and may change it or block.
	hook    func(chunk int, imp *messages.ImportKV)
	lastErr atomic.Value // string: the last failed transfer's error
}

func (p *kvPeer) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *wrapperspb.BytesValue:
		p.onEnvelope(ctx, msg)
	}
}

func (p *kvPeer) onEnvelope(ctx actor.Context, msg *wrapperspb.BytesValue) {
	e, err := unwrapKV(msg)
	sender := ctx.Sender()
	root := ctx.ActorSystem().Root
	switch {
	case err != nil:
		if sender != nil { // a request: say what was wrong with it
			ctx.Respond(wrapKV(&kvEnvelope{Imported: &kvImported{Err: err.Error()}}))
		}
	case e.Prefill != nil:
		go p.prefill(root, e.Prefill)
	case e.Have != nil:
		go func() {
			had := &kvHad{}
			if e.Have.From != p.n.id {
				had.Err = fmt.Sprintf("cluster: member %s serves %s, the prefill member %s", p.n.self, p.n.id, e.Have.From)
			} else if had.Cached, err = p.n.rt.CachedTokens(e.Have.Tokens, kvTimeout); err != nil {
				had.Err = err.Error()
			}
			root.Send(sender, wrapKV(&kvEnvelope{Had: had}))
		}()
	case e.Import != nil:
		go func() {
			out := &kvImported{}
			if e.Import.From != p.n.id {
				out.Err = fmt.Sprintf("cluster: member %s serves %s, the prefill member %s", p.n.self, p.n.id, e.Import.From)
			} else if got, err := p.n.rt.ImportKV(&e.Import.KV, kvTimeout); err != nil {
				out.Err = fmt.Sprintf("cluster: K/V from token %d refused by %s: %v", e.Import.KV.From, p.n.self, err)
			} else {
				out.Imported, out.Cached = got.Imported, got.NumCachedTokens
				p.n.disagg.blocksReceived.Add(int64(got.Imported))
			}
			root.Send(sender, wrapKV(&kvEnvelope{Imported: out}))
		}()
	}
}

// prefill computes req's prompt here, sends its blocks to the decode
// member and tells the origin how it went. The prompt runs as a request of
// one greedy token (discarded): its full blocks are in the prefix cache
// once it ends, held by nothing, so an export finds them unless evicted
// meanwhile (then fewer move and the decode member computes the rest).
func (p *kvPeer) prefill(root *actor.RootContext, req *kvPrefill) {
	done := &kvPrefilled{ID: req.ID}
	if err := p.transfer(root, req, done); err != nil {
		done.Err = err.Error()
	}
	root.Send(req.ReplyTo.actor(), wrapKV(&kvEnvelope{Prefilled: done}))
}

func (p *kvPeer) transfer(root *actor.RootContext, req *kvPrefill, done *kvPrefilled) error {
	n := p.n
	if req.From != n.id {
		return fmt.Errorf("cluster: member %s serves %s, the origin %s", n.self, n.id, req.From)
	}
	var failed string
	if _, err := n.rt.Generate(context.Background(), &messages.GenerateRequest{Prompt: req.Prompt, MaxTokens: 1}, func(c *messages.OutputChunk) error {
		if c.Err != "" && failed == "" {
			failed = c.Err
		}
		return nil
	}); err != nil {
		return fmt.Errorf("cluster: prefill on %s: %w", n.self, err)
	} else if failed != "" { // a device failed: nothing of it is exported
		return fmt.Errorf("cluster: prefill on %s: %s", n.self, failed)
	}
	decode := req.Decode.actor()
	var had kvEnvelope
	if err := ask(root, decode, &kvEnvelope{Have: &kvHave{Tokens: req.Prompt, From: n.id}}, &had); err != nil {
		return err
	}
	if had.Had == nil || had.Had.Err != "" {
		return fmt.Errorf("cluster: the decode member %s: %v", decode.Address, had.Had)
	}
	done.Cached = had.Had.Cached
	from, perMsg := done.Cached, 1 // the first message learns the block size
	for chunk := 0; ; chunk++ {
		exp, err := n.rt.ExportKV(&messages.ExportKV{Tokens: req.Prompt, From: from, MaxBlocks: perMsg}, kvTimeout)
		if err != nil {
			return fmt.Errorf("cluster: exporting K/V on %s: %w", n.self, err)
		}
		if exp.Blocks == 0 {
			return nil
		}
		imp := &messages.ImportKV{Tokens: req.Prompt, Shape: exp.Shape, From: exp.From, Blocks: exp.Blocks, Data: exp.Data}
		if h := n.disagg.hook; h != nil {
			h(chunk, imp)
		}
		var ack kvEnvelope
		if err := ask(root, decode, &kvEnvelope{Import: &kvImport{KV: *imp, From: n.id}}, &ack); err != nil {
			return err
		}
		if ack.Imported == nil {
			return fmt.Errorf("cluster: the decode member %s answered no import", decode.Address)
		}
		if ack.Imported.Err != "" {
			return fmt.Errorf("cluster: the decode member %s: %s", decode.Address, ack.Imported.Err)
		}
		done.Blocks += exp.Blocks
		done.Bytes += int64(len(exp.Data))
		n.disagg.blocksSent.Add(int64(exp.Blocks))
		n.disagg.bytesSent.Add(int64(len(exp.Data)))
		if ack.Imported.Cached < exp.From {
			return nil // a gap on the decode member: nothing after it would be found
		}
		from = exp.From + exp.Blocks*exp.Shape.BlockSize
		perMsg = max(1, kvChunkBytes/max(len(exp.Data)/exp.Blocks, 1))
	}
}

// ask sends e to pid and decodes its answer into out, within kvTimeout.
func ask(root *actor.RootContext, pid *actor.PID, e *kvEnvelope, out *kvEnvelope) error {
	res, err := root.RequestFuture(pid, wrapKV(e), kvTimeout).Result()
	if err != nil {
		return fmt.Errorf("cluster: no answer from %s: %w", pid.Address, err)
	}
	b, ok := res.(*wrapperspb.BytesValue)
	if !ok {
		return fmt.Errorf("cluster: %s answered a %T", pid.Address, res)
	}
	got, err := unwrapKV(b)
	if err != nil {
		return err
	}
	*out = *got
	return nil
}
