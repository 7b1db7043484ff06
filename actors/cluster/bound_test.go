package cluster

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/messages"
)

// TestCheckBounds: troupe's own messages pass; messages whose headers
// declare more than they hold, nest too deep, or are not msgpack are
// refused before msgpack allocates for them (the fuzzer found a 16-byte
// message that made msgpack allocate 32 GiB).
func TestCheckBounds(t *testing.T) {
	req := messages.GenerateRequest{Prompt: []int32{1, 2, 3}, MaxTokens: 9, Stop: []string{"a"},
		Sampling: messages.SamplingParams{LogitBias: map[int32]float32{4: -1}}}
	good := []*envelope{
		{Generate: &generate{ID: "r", ReplyTo: pid{"a:1", "x"}, Req: req}},
		{Chunks: &chunks{ID: "a", Job: &pid{"b:2", "y"}, Chunks: []*messages.OutputChunk{{Index: 1, Text: "hi", Tokens: []messages.Token{{ID: 3, Logprob: -0.5}}}}}},
		{Cancel: &cancel{Reason: "x"}},
		{},
	}
	for i, e := range good {
		if err := checkBounds(wrap(e).GetValue()); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	if b, _ := msgpack.Marshal(load{Running: 3, KVUsage: 0.5, Address: "x"}); checkBounds(b) != nil {
		t.Error("a load record is refused")
	}
	huge := []byte{0x7f, 0xff, 0xff, 0xff}
	bad := map[string][]byte{
		"array32 of 2^31 chunks":       append([]byte("\x81\xa1c\x81\xa6chunks\xdd"), huge...),
		"array16 longer than the rest": []byte("\x81\xa1c\x81\xa6chunks\xdc\xff\xff\x01"),
		"map32 of 2^31 pairs":          append([]byte("\x81\xa1g\x81\xa3req\xdf"), huge...),
		"str32 of 2 GiB":               append([]byte("\x81\xa1x\x81\xa6reason\xdb"), huge...),
		"bin32 of 2 GiB":               append([]byte("\x81\xa1x\x81\xa6reason\xc6"), huge...),
		"ext32 of 2 GiB":               append([]byte("\x81\xa1x\x81\xa6reason\xc9"), huge...),
		"nested 10000 deep":            append(append([]byte("\x81\xa1z"), bytes.Repeat([]byte{0x91}, 10000)...), 0xc0),
		"reserved byte 0xc1":           {0xc1},
		"truncated length":             {0xdb, 0x00},
		"truncated value":              {0x92, 0x01},
		"a byte after the value":       {0x80, 0x00},
		"empty":                        {},
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for name, b := range bad {
		if _, err := unwrap(wrapperspb.Bytes(b)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("refusing %d malformed messages allocated %d bytes", len(bad), d)
	}
}
