package cluster

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/messages"
)

// TestEnvelopeRoundTrip: a message survives msgpack, the protobuf envelope
// and protobuf's own encoding (what the remote layer does to it).
func TestEnvelopeRoundTrip(t *testing.T) {
	in := &envelope{Generate: &generate{ID: "r/1", ReplyTo: pid{Address: "127.0.0.1:9000", ID: "call-$1"},
		Req: messages.GenerateRequest{RequestID: "r", Prompt: []int32{1, 2, 3}, N: 2, MaxTokens: 9, Stop: []string{"\n"},
			Sampling: messages.SamplingParams{Temperature: 0.5, Seed: 7, HasSeed: true, LogitBias: map[int32]float32{4: -1}}}}}
	b, err := proto.Marshal(wrap(in))
	if err != nil {
		t.Fatal(err)
	}
	var bv wrapperspb.BytesValue
	if err := proto.Unmarshal(b, &bv); err != nil {
		t.Fatal(err)
	}
	out, err := unwrap(&bv)
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("%+v, %v; sent %+v", out.Generate, err, in.Generate)
	}
}

// FuzzEnvelope: any bytes from the network decode to an envelope or an
// error, never a panic.
func FuzzEnvelope(f *testing.F) {
	f.Add(wrap(&envelope{Cancel: &cancel{Reason: "x"}}).GetValue())
	f.Add(wrap(&envelope{Chunks: &chunks{ID: "a", Chunks: []*messages.OutputChunk{{Index: 1, Text: "hi", Tokens: []messages.Token{{ID: 3}}}}}}).GetValue())
	f.Add([]byte{0xde, 0xad, 0xbe, 0xef})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = unwrap(wrapperspb.Bytes(b))
	})
}
