package cluster

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/messages"
)

// SetKVHook has hook see (and maybe change, or block) each K/V message this
// node sends as a prefill member.
func (n *Node) SetKVHook(hook func(chunk int, imp *messages.ImportKV)) { n.disagg.hook = hook }

// KnownRoles is how many members this node knows the gossiped load (and so
// the role) of.
func (n *Node) KnownRoles() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.loads)
}

// SendRawKV sends b as a K/V envelope to to's K/V actor and returns its
// answer's error text.
func (n *Node) SendRawKV(to *Node, b []byte) (string, error) {
	res, err := n.system.Root.RequestFuture(actor.NewPID(to.self, kvName), wrapperspb.Bytes(b), 10*time.Second).Result()
	if err != nil {
		return "", err
	}
	e, err := unwrapKV(res.(*wrapperspb.BytesValue))
	if err != nil || e.Imported == nil {
		return "", err
	}
	return e.Imported.Err, nil
}
