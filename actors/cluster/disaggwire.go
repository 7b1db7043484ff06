package cluster

import (
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/messages"
)

// The messages of disaggregated prefill and decode, msgpack in the
// cluster's BytesValue envelope, decoded after checkBounds. Each member's
// kv actor (kvName) takes kvPrefill, kvHave and kvImport; the origin's
// transfer actor takes kvPrefilled.
//
//	origin   -> prefill's kv actor:  kvPrefill
//	prefill  -> decode's kv actor:   kvHave (answered kvHad), kvImport (answered kvImported), stop and wait
//	prefill  -> origin's transfer:   kvPrefilled
type kvEnvelope struct {
	Prefill   *kvPrefill   `msgpack:"p,omitempty"`
	Prefilled *kvPrefilled `msgpack:"pd,omitempty"`
	Have      *kvHave      `msgpack:"h,omitempty"`
	Had       *kvHad       `msgpack:"hd,omitempty"`
	Import    *kvImport    `msgpack:"i,omitempty"`
	Imported  *kvImported  `msgpack:"id,omitempty"`
}

// kvPrefill asks a prefill member to compute Prompt and send the K/V of
// its full blocks to the decode member's kv actor Decode, then to tell
// ReplyTo. From is the origin's identity: a member of another refuses.
type kvPrefill struct {
	ID      string   `msgpack:"id"`
	Prompt  []int32  `msgpack:"prompt"`
	Decode  pid      `msgpack:"decode"`
	ReplyTo pid      `msgpack:"reply_to"`
	From    identity `msgpack:"from"`
}

// kvPrefilled ends a transfer: Blocks blocks (Bytes bytes of K/V) reached
// the decode member, which had Cached prompt tokens before; Err, when set,
// says why the transfer stopped short (the decode member computes the
// rest).
type kvPrefilled struct {
	ID     string `msgpack:"id"`
	Cached int    `msgpack:"cached"`
	Blocks int    `msgpack:"blocks"`
	Bytes  int64  `msgpack:"bytes"`
	Err    string `msgpack:"err,omitempty"`
}

// kvHave asks the decode member how much of Tokens it caches.
type kvHave struct {
	Tokens []int32  `msgpack:"tokens"`
	From   identity `msgpack:"from"`
}

// kvHad answers kvHave (Err: refused, or the runtime failed).
type kvHad struct {
	Cached int    `msgpack:"cached"`
	Err    string `msgpack:"err,omitempty"`
}

// kvImport is one message of blocks for the decode member's prefix cache.
type kvImport struct {
	KV   messages.ImportKV `msgpack:"kv"`
	From identity          `msgpack:"from"`
}

// kvImported answers kvImport.
type kvImported struct {
	Imported int    `msgpack:"imported"`
	Cached   int    `msgpack:"cached"`
	Err      string `msgpack:"err,omitempty"`
}

// kvChunkBytes bounds the K/V in one kvImport (gRPC's limit is raised far
// above it; a smaller message keeps the stop-and-wait pipe moving).
const kvChunkBytes = 4 << 20

func wrapKV(e *kvEnvelope) *wrapperspb.BytesValue { return wrapAs(e, "K/V message") }

func unwrapKV(b *wrapperspb.BytesValue) (*kvEnvelope, error) {
	return unwrapAs[kvEnvelope](b, "K/V message")
}
