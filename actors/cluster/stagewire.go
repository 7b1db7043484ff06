package cluster

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/troupe-llm/troupe/model"
)

// A pipeline's messages: a model split into stages (model.Stage) over
// members, the head (stage 0, which runs the runtime and the first layers)
// and one stage member per further stage. Hidden rows and logits travel as
// little-endian float32 bytes (msgpack bin), checked against the batch's
// shape before use.

// stageStep is one micro-batch on its way through the pipeline: the batch,
// the hidden rows the stage before computed ((n_tokens, dim) float32), the
// stages still to run it after the receiver (Route, in order) and where the
// last one sends the logits. Head -> stage 1 -> stage 2 -> ...
// Micro is the micro-batch's index in its step (model.SplitBatch); Costs
// what each stage after the head spent on it, appended as it goes.
type stageStep struct {
	Step      uint64      `msgpack:"n"`
	Micro     int         `msgpack:"m"`
	Tokens    []int32     `msgpack:"t"`
	Positions []int32     `msgpack:"p"`
	Seq       []int32     `msgpack:"q"`
	Tables    [][]int32   `msgpack:"b"`
	Logits    []bool      `msgpack:"l"`
	AttendTo  []int32     `msgpack:"at,omitempty"`
	Hidden    []byte      `msgpack:"h"`
	Route     []pid       `msgpack:"r"`
	ReplyTo   pid         `msgpack:"to"`
	Costs     []stageCost `msgpack:"c,omitempty"`
}

// stageCost is one stage's share of a micro-batch: the time its layers
// took and the bytes of the message it received.
type stageCost struct {
	Nanos   int64 `msgpack:"ns"`
	InBytes int64 `msgpack:"in"`
}

// stageDone is a micro-batch's end: the logits of its rows with Logits set
// ((NumLogits, VocabSize) float32) and the stages' costs, or the error of
// the stage that failed it. Last stage (or a failing one) -> head.
type stageDone struct {
	Step   uint64      `msgpack:"n"`
	Micro  int         `msgpack:"m"`
	Logits []byte      `msgpack:"l,omitempty"`
	Stage  int         `msgpack:"s"`
	Err    string      `msgpack:"e,omitempty"`
	Costs  []stageCost `msgpack:"c,omitempty"`
	size   int         // the bytes of its message (set by the head on receipt)
}

// stageJoin is a stage member announcing itself: which stage of how many it
// serves, the layers it loaded, its identity (model file, device) and its
// stage actor. Stage member -> head.
type stageJoin struct {
	Stage  int      `msgpack:"s"`
	Stages int      `msgpack:"n"`
	Lo     int      `msgpack:"lo"`
	Hi     int      `msgpack:"hi"`
	ID     identity `msgpack:"id"`
	Actor  pid      `msgpack:"a"`
}

// stageJoined answers a stageJoin: the KV cache shape the stage must hold
// (the head's), or why it is refused. Head -> stage member.
type stageJoined struct {
	NumBlocks int    `msgpack:"nb"`
	BlockSize int    `msgpack:"bs"`
	KVType    uint8  `msgpack:"kt"`
	Err       string `msgpack:"e,omitempty"`
}

// f32Bytes encodes v as little-endian float32s.
func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// bytesF32 decodes exactly len(dst) little-endian float32s from b.
func bytesF32(dst []float32, b []byte, what string) error {
	if len(b) != 4*len(dst) {
		return fmt.Errorf("cluster: %s of %d bytes, want %d float32s", what, len(b), len(dst))
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

// toBatch is the model.Batch a step carries (its shape checked by
// ForwardStage, its ids and tables by Batch.Validate).
func (s *stageStep) toBatch() *model.Batch {
	return &model.Batch{Tokens: s.Tokens, Positions: s.Positions, Seq: s.Seq, BlockTables: s.Tables, Logits: s.Logits, AttendTo: s.AttendTo}
}
