package cluster

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/messages"
)

// transfer is the origin's side of one disaggregated prefill: it asks the
// prefill member's kv actor to compute the prompt and move its blocks to
// the decode member, watches that actor, and reports once on result: the
// prefill member's kvPrefilled, or its loss (Terminated: the member died
// or the connection was cut). Either way the request then runs on the
// decode member, which computes whatever did not arrive.
type transfer struct {
	n       *Node
	msg     *kvPrefill
	prefill *actor.PID
	result  chan<- *kvPrefilled
	ended   bool
}

// transferStop is Node.Stream giving up on the transfer (its client went).
type transferStop struct{}

func (t *transfer) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		t.onStarted(ctx)
	case *wrapperspb.BytesValue:
		t.onEnvelope(ctx, msg)
	case *actor.Terminated:
		t.end(ctx, &kvPrefilled{ID: t.msg.ID, Err: fmt.Sprintf("cluster: the prefill member %s was lost mid-transfer", msg.Who.Address)})
	case *transferStop:
		t.end(ctx, &kvPrefilled{ID: t.msg.ID, Err: "cluster: the client went away"})
	}
}

func (t *transfer) onStarted(ctx actor.Context) {
	ctx.Watch(t.prefill)
	t.msg.ReplyTo = toPID(ctx.Self())
	ctx.Send(t.prefill, wrapKV(&kvEnvelope{Prefill: t.msg}))
}

func (t *transfer) onEnvelope(ctx actor.Context, msg *wrapperspb.BytesValue) {
	e, err := unwrapKV(msg)
	switch {
	case err != nil:
		t.end(ctx, &kvPrefilled{ID: t.msg.ID, Err: err.Error()})
	case e.Prefilled != nil && e.Prefilled.ID == t.msg.ID:
		t.end(ctx, e.Prefilled)
	}
}

func (t *transfer) end(ctx actor.Context, r *kvPrefilled) {
	if t.ended {
		return
	}
	t.ended = true
	t.result <- r // buffered: one result
	ctx.Unwatch(t.prefill)
	ctx.Stop(ctx.Self())
}

// streamDisagg runs req with its prompt computed on the member prefill and
// decoded on decode: it waits for the transfer (or its failure: then the
// decode member computes the prompt itself), then streams from decode as
// Stream does. The client sees the stream of a colocated request.
func (n *Node) streamDisagg(ctx context.Context, req *messages.GenerateRequest, prefill, decode string) (<-chan *messages.OutputChunk, error) {
	n.disagg.disaggregated.Add(1)
	result := make(chan *kvPrefilled, 1)
	msg := &kvPrefill{ID: req.RequestID, Prompt: req.Prompt, Decode: pid{Address: decode, ID: kvName}, From: n.id}
	t := n.system.Root.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return &transfer{n: n, msg: msg, prefill: actor.NewPID(prefill, kvName), result: result}
	}), "kvtransfer-")
	var r *kvPrefilled
	select {
	case r = <-result:
	case <-ctx.Done():
		n.system.Root.Send(t, &transferStop{})
		return nil, context.Cause(ctx)
	}
	if r.Err != "" {
		n.disagg.transferFailed.Add(1)
		n.disagg.lastErr.Store(r.Err)
		n.system.Logger().Warn("disaggregated prefill fell back to the decode member", "request", req.RequestID,
			"prefill", prefill, "decode", decode, "blocks", r.Blocks, "err", r.Err)
	}
	if decode == n.self {
		n.placedLocal.Add(1)
		return n.rt.Stream(ctx, req)
	}
	return n.streamOn(ctx, req, actor.NewPID(decode, workerName), ""), nil
}

// DisaggStats are a node's figures of disaggregated prefill: requests this
// node (as origin) sent through a prefill member, those whose transfer
// failed (the decode member computed the rest), and the blocks and bytes
// of K/V it sent (as a prefill member) and received (as a decode member).
type DisaggStats struct {
	Disaggregated, TransferFailed         int64
	BlocksSent, BytesSent, BlocksReceived int64
	LastTransferErr                       string // why the last failed transfer failed
}

// DisaggStats returns the node's figures of disaggregated prefill.
func (n *Node) DisaggStats() DisaggStats {
	d := &n.disagg
	st := DisaggStats{Disaggregated: d.disaggregated.Load(), TransferFailed: d.transferFailed.Load(),
		BlocksSent: d.blocksSent.Load(), BytesSent: d.bytesSent.Load(), BlocksReceived: d.blocksReceived.Load()}
	st.LastTransferErr, _ = d.lastErr.Load().(string)
	return st
}

// planDisagg applies the roles to a placement: the member that decodes
// (target's, moved off a prefill-only member) and the member that computes
// the prompt first ("": colocated). Requests with LoRA adapters or images
// stay colocated: only the base model's text blocks move.
func (n *Node) planDisagg(req *messages.GenerateRequest, target string) (decode, prefill string) {
	n.mu.Lock()
	loads := map[string]load{}
	for _, m := range n.members {
		if l, ok := n.loads[m]; ok {
			if _, refused := n.refused[m]; !refused {
				loads[m] = l
			}
		}
	}
	n.mu.Unlock()
	decode = decodeTarget(target, loads)
	if len(req.LoRA) > 0 || len(req.Images) > 0 {
		return decode, ""
	}
	if l, ok := loads[decode]; ok && n.cfg.DisaggAlways && l.busy() == 0 {
		l.Running = 1
		loads[decode] = l
	}
	return decode, prefillTarget(decode, loads, len(req.Prompt), n.cfg.DisaggTokens)
}
