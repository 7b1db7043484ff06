package cluster

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/messages"
)

// Messages that cross nodes are msgpack inside a protobuf envelope
// (wrapperspb.BytesValue): protoactor's remote layer sends only protobuf
// messages, and troupe's messages are plain Go structs with msgpack tags.
// One envelope carries one of these.
type envelope struct {
	Generate *generate `msgpack:"g,omitempty"`
	Chunks   *chunks   `msgpack:"c,omitempty"`
	Cancel   *cancel   `msgpack:"x,omitempty"`

	// A pipeline's messages (stagewire.go).
	Step   *stageStep   `msgpack:"s,omitempty"`
	Done   *stageDone   `msgpack:"sd,omitempty"`
	Join   *stageJoin   `msgpack:"j,omitempty"`
	Joined *stageJoined `msgpack:"jd,omitempty"`
}

// generate asks a node to run a request and send its output to ReplyTo.
// From is the origin's identity: a node of another refuses the request.
// Origin -> worker.
type generate struct {
	ID      string                   `msgpack:"id"`
	ReplyTo pid                      `msgpack:"reply_to"`
	Req     messages.GenerateRequest `msgpack:"req"`
	From    identity                 `msgpack:"from"`
}

// identity is what the members of a cluster must share for a request to
// give the same tokens on any of them, so that a rerun can continue one:
// the model file's content (a SHA-256) and the kind of device that
// computes (CPU and CUDA logits differ).
type identity struct {
	Model  string `msgpack:"m"`
	Device string `msgpack:"d"`
}

func (id identity) String() string {
	return fmt.Sprintf("model sha256:%.12s on %s", id.Model, id.Device)
}

// chunks is a batch of a request's output, in order; Job (on the first
// batch) is the actor that runs it, to cancel it and to watch its node.
// Refused says the worker would not run the request (another identity):
// it goes to another node. Job (or worker) -> origin.
type chunks struct {
	ID      string                  `msgpack:"id"`
	Job     *pid                    `msgpack:"job,omitempty"`
	Chunks  []*messages.OutputChunk `msgpack:"chunks"`
	Refused bool                    `msgpack:"refused,omitempty"`
}

// cancel stops a job. Origin -> job.
type cancel struct {
	Reason string `msgpack:"reason,omitempty"`
}

// pid is an actor.PID in msgpack.
type pid struct {
	Address string `msgpack:"a"`
	ID      string `msgpack:"i"`
}

func toPID(p *actor.PID) pid    { return pid{Address: p.Address, ID: p.Id} }
func (p pid) actor() *actor.PID { return actor.NewPID(p.Address, p.ID) }

// wrap encodes e as the envelope a remote send carries.
func wrap(e *envelope) *wrapperspb.BytesValue { return wrapAs(e, "message") }

// unwrap decodes an envelope; a malformed one is an error, not a panic.
func unwrap(b *wrapperspb.BytesValue) (*envelope, error) { return unwrapAs[envelope](b, "message") }

// wrapAs encodes v, an envelope of the cluster's plain structs (so it cannot
// fail), as a BytesValue; what names it in the panic.
func wrapAs(v any, what string) *wrapperspb.BytesValue {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("cluster: encoding a %s: %v", what, err))
	}
	return wrapperspb.Bytes(b)
}

// unwrapAs decodes a T from b after the bounds check (decode); a malformed
// one is an error naming what, not a panic, and never an allocation past
// its own size.
func unwrapAs[T any](b *wrapperspb.BytesValue, what string) (*T, error) {
	var e T
	if err := decode(b.GetValue(), &e); err != nil {
		return nil, fmt.Errorf("cluster: a malformed %s (%d bytes): %w", what, len(b.GetValue()), err)
	}
	return &e, nil
}

// load is what each node gossips about itself (key loadKey).
type load struct {
	Running int      `msgpack:"r"`
	Waiting int      `msgpack:"w"`
	KVUsage float64  `msgpack:"kv"`
	Address string   `msgpack:"a"` // where its worker actor is
	ID      identity `msgpack:"id"`
	Role    string   `msgpack:"role,omitempty"` // Config.Role ("": both)
}

const loadKey = "troupe-load"
