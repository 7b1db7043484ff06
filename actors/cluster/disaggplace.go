package cluster

import "fmt"

// The roles of members (Config.Role, gossiped in load.Role) and the rule
// that picks colocated or disaggregated prefill, in plain Go, table-tested
// in disaggplace_test.go.

const (
	// RoleBoth computes prompts and decodes: a replica, as before roles.
	RoleBoth = "both"
	// RolePrefill computes prompts for decode members; it decodes only a
	// request placed there while no decode member is known, or a rerun.
	RolePrefill = "prefill"
	// RoleDecode decodes; prompts long enough (Config.DisaggTokens) are
	// computed on a prefill member while it is busy.
	RoleDecode = "decode"
)

// DefaultDisaggTokens is the prompt length from which a request may be
// prefilled on another member (Config.DisaggTokens 0).
const DefaultDisaggTokens = 256

func checkRole(role string) error {
	switch role {
	case "", RoleBoth, RolePrefill, RoleDecode:
		return nil
	}
	return fmt.Errorf("cluster: --role %q: want prefill, decode or both", role)
}

func canDecode(l load) bool  { return l.Role != RolePrefill }
func canPrefill(l load) bool { return l.Role != RoleDecode }

// decodeTarget moves a request placed on a prefill member (by prefix
// affinity, or load) to the least loaded member that decodes; addr when
// it decodes, or when no member does. Ties: the smaller address.
func decodeTarget(addr string, loads map[string]load) string {
	if l, ok := loads[addr]; !ok || canDecode(l) {
		return addr
	}
	best := ""
	for a, l := range loads {
		if canDecode(l) && (best == "" || l.busy() < loads[best].busy() || l.busy() == loads[best].busy() && a < best) {
			best = a
		}
	}
	if best == "" {
		return addr
	}
	return best
}

// prefillTarget is the rule: the prompt of a request decoded on decode is
// computed on another member when
//   - some member has a role (an all-"both" cluster never disaggregates),
//   - the prompt has at least minTokens tokens not cached on decode, and
//   - decode is busy (a sequence running or waiting there): its running
//     sequences would wait on the long prefill's steps (chunked prefill
//     shares each step's token budget between them), while on an idle
//     member the transfer would only add its cost;
//
// then the least loaded member other than decode that computes prompts
// (role prefill or both) takes it; "" (colocated) otherwise, or when none
// does. A prefill member's load counts its prefills too, so prompts spread
// over prefill members.
func prefillTarget(decode string, loads map[string]load, promptTokens, minTokens int) string {
	roles := false
	for _, l := range loads {
		roles = roles || l.Role == RolePrefill || l.Role == RoleDecode
	}
	d, ok := loads[decode]
	if !roles || !ok || promptTokens < minTokens || d.busy() == 0 {
		return ""
	}
	best := ""
	for a, l := range loads {
		if a == decode || !canPrefill(l) {
			continue
		}
		if best == "" || l.busy() < loads[best].busy() || l.busy() == loads[best].busy() && a < best {
			best = a
		}
	}
	return best
}
