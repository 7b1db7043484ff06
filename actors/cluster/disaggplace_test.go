package cluster

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/messages"
)

// TestPrefillTarget: a prompt goes to a prefill member only in a cluster
// with roles, past the token threshold, while its decode member is busy;
// then to the least loaded member that prefills (ties: the smaller
// address), never to the decode member itself.
func TestPrefillTarget(t *testing.T) {
	l := func(role string, running, waiting int) load {
		return load{Role: role, Running: running, Waiting: waiting}
	}
	for _, tc := range []struct {
		name   string
		decode string
		loads  map[string]load
		tokens int
		want   string
	}{
		{"no roles", "a", map[string]load{"a": l("", 4, 0), "b": l(RoleBoth, 0, 0)}, 1000, ""},
		{"short prompt", "a", map[string]load{"a": l(RoleDecode, 4, 0), "b": l(RolePrefill, 0, 0)}, 255, ""},
		{"at the threshold", "a", map[string]load{"a": l(RoleDecode, 4, 0), "b": l(RolePrefill, 0, 0)}, 256, "b"},
		{"idle decode member", "a", map[string]load{"a": l(RoleDecode, 0, 0), "b": l(RolePrefill, 0, 0)}, 1000, ""},
		{"waiting counts as busy", "a", map[string]load{"a": l(RoleDecode, 0, 1), "b": l(RolePrefill, 0, 0)}, 1000, "b"},
		{"decode load unknown", "a", map[string]load{"b": l(RolePrefill, 0, 0)}, 1000, ""},
		{"no prefill member", "a", map[string]load{"a": l(RoleDecode, 4, 0), "b": l(RoleDecode, 0, 0)}, 1000, ""},
		{"a both member prefills", "a", map[string]load{"a": l(RoleDecode, 4, 0), "b": l(RoleBoth, 1, 0)}, 1000, "b"},
		{"never the decode member", "a", map[string]load{"a": l(RoleBoth, 4, 0), "b": l(RoleDecode, 0, 0)}, 1000, ""},
		{"least loaded prefill member", "a", map[string]load{"a": l(RoleDecode, 4, 0), "b": l(RolePrefill, 3, 0), "c": l(RolePrefill, 1, 1)}, 1000, "c"},
		{"tie: smaller address", "a", map[string]load{"a": l(RoleDecode, 4, 0), "d": l(RolePrefill, 1, 0), "c": l(RolePrefill, 1, 0)}, 1000, "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := prefillTarget(tc.decode, tc.loads, tc.tokens, DefaultDisaggTokens); got != tc.want {
				t.Errorf("prefillTarget = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDecodeTarget: a request placed on a prefill-only member moves to the
// least loaded member that decodes; elsewhere it stays.
func TestDecodeTarget(t *testing.T) {
	l := func(role string, busy int) load { return load{Role: role, Running: busy} }
	for _, tc := range []struct {
		name, addr string
		loads      map[string]load
		want       string
	}{
		{"decodes", "a", map[string]load{"a": l(RoleDecode, 9), "b": l(RoleDecode, 0)}, "a"},
		{"both", "a", map[string]load{"a": l("", 9)}, "a"},
		{"load unknown", "a", map[string]load{"b": l(RoleDecode, 0)}, "a"},
		{"prefill member", "a", map[string]load{"a": l(RolePrefill, 0), "b": l(RoleDecode, 2), "c": l(RoleBoth, 1)}, "c"},
		{"prefill members only", "a", map[string]load{"a": l(RolePrefill, 0), "b": l(RolePrefill, 0)}, "a"},
		{"tie: smaller address", "a", map[string]load{"a": l(RolePrefill, 0), "c": l(RoleDecode, 1), "b": l(RoleDecode, 1)}, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decodeTarget(tc.addr, tc.loads); got != tc.want {
				t.Errorf("decodeTarget = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRoleFlag: a role other than prefill, decode or both is refused by
// name; so is a negative threshold.
func TestRoleFlag(t *testing.T) {
	cfg := Config{Name: "c", Provider: "automanaged", Advertise: "127.0.0.1:1", AutoManagedPort: 2, Seeds: []string{"127.0.0.1:2"}}
	for _, role := range []string{"", RoleBoth, RolePrefill, RoleDecode} {
		c := cfg
		c.Role = role
		if err := c.Validate(); err != nil {
			t.Errorf("role %q: %v", role, err)
		}
	}
	c := cfg
	c.Role = "encode"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--role") {
		t.Errorf("role encode: %v, want an error naming --role", err)
	}
	c = cfg
	c.DisaggTokens = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--disagg-tokens") {
		t.Errorf("disagg tokens -1: %v, want an error naming --disagg-tokens", err)
	}
}

// TestKVWireBounds: K/V envelopes round-trip, and malformed ones (cut, or
// declaring more than they hold) are errors, not panics or allocations.
func TestKVWireBounds(t *testing.T) {
	e := &kvEnvelope{Import: &kvImport{KV: messages.ImportKV{Tokens: []int32{1, 2, 3}, Shape: messages.KVShape{Type: "f16", Layers: 1, KVDim: 2, BlockSize: 1, RowBytes: 4},
		From: 0, Blocks: 1, Data: make([]byte, 8)}, From: identity{Model: "m", Device: "cpu"}}}
	b := wrapKV(e)
	got, err := unwrapKV(b)
	if err != nil || got.Import == nil || len(got.Import.KV.Data) != 8 || got.Import.From != e.Import.From {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	raw := b.GetValue()
	for cut := range len(raw) {
		b.Value = raw[:cut]
		if _, err := unwrapKV(b); err == nil {
			t.Errorf("cut at %d of %d: no error", cut, len(raw))
		}
	}
	b.Value = []byte{0x81, 0xa1, 'i', 0xc6, 0x7f, 0xff, 0xff, 0xff} // a 2 GiB binary in 8 bytes
	if _, err := unwrapKV(b); err == nil {
		t.Error("a binary declaring 2 GiB: no error")
	}
}
