package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// startRoles starts one in-process member per role (automanaged provider,
// 127.0.0.1, real gRPC between them) and waits until each knows every
// member's gossiped load, and so its role.
func startRoles(t *testing.T, m *model.Model, roles ...string) []*testNode {
	t.Helper()
	n := len(roles)
	specs := make([]nodeSpec, n)
	for i, role := range roles {
		specs[i] = nodeSpec{m: m, role: role}
	}
	nodes := startCluster(t, specs, cluster.Config{Name: "disagg", DisaggTokens: 32, DisaggAlways: true}, 0)
	waitNodes(t, nodes, func(tn *testNode) string {
		if tn.node.Stats().Members < n || tn.node.KnownRoles() < n {
			return fmt.Sprintf("a node sees %d members, %d loads, of %d", tn.node.Stats().Members, tn.node.KnownRoles(), n)
		}
		return ""
	})
	return nodes
}

// disaggRequests are long prompts (past DisaggTokens), greedy and seeded,
// one and two choices.
func disaggRequests(t *testing.T, rt *actors.Runtime, n int) []*messages.GenerateRequest {
	t.Helper()
	var reqs []*messages.GenerateRequest
	for i := range n {
		prompt, err := rt.Tokenize(strings.Repeat(fmt.Sprintf("Lily and Tom %d went to the park to play with a ball. ", i), 3+i%3))
		if err != nil {
			t.Fatal(err)
		}
		req := &messages.GenerateRequest{Prompt: prompt, MaxTokens: 24, N: 1 + i%2}
		if i%2 == 1 {
			req.Sampling = messages.SamplingParams{Temperature: 0.8, Seed: uint64(100 + i), HasSeed: true}
		} else {
			req.Sampling = messages.SamplingParams{Seed: 1, HasSeed: true} // greedy
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// aloneIDs runs each request on a runtime of its own, outside any cluster.
func aloneIDs(t *testing.T, m *model.Model, reqs []*messages.GenerateRequest) [][][]int32 {
	t.Helper()
	rt, stop := startOne(t, m, actors.Config{})
	defer stop()
	var want [][][]int32
	for _, req := range reqs {
		want = append(want, streamIDs(t, rt, req))
	}
	return want
}

// runConcurrently sends every request to node at once and checks each
// against want; it returns the errors the streams ended with.
func runConcurrently(t *testing.T, node *cluster.Node, reqs []*messages.GenerateRequest, want [][][]int32) {
	t.Helper()
	var wg sync.WaitGroup
	got := make([][][]int32, len(reqs))
	finish := make([][]string, len(reqs))
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch, err := node.Stream(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			got[i], _, finish[i] = collect(t, ch, max(req.N, 1))
		}()
	}
	wg.Wait()
	for i := range reqs {
		for c := range want[i] {
			if !slices.Equal(got[i][c], want[i][c]) || finish[i][c] == messages.FinishError {
				t.Errorf("request %d choice %d: %v (%s), alone %v", i, c, got[i][c], finish[i][c], want[i][c])
			}
		}
	}
}

// TestDisagg: three members (decode, prefill, decode); requests sent to
// the first at once, with long prompts, are prefilled on the prefill
// member, their blocks moved to the decode member, and decoded there: the
// tokens are those of one runtime alone, greedy and seeded.
func TestDisagg(t *testing.T) {
	m := stories(t)
	nodes := startRoles(t, m, cluster.RoleDecode, cluster.RolePrefill, cluster.RoleDecode)
	origin := nodes[0].node
	reqs := disaggRequests(t, nodes[0].rt, 8)
	want := aloneIDs(t, m, reqs)
	runConcurrently(t, origin, reqs, want)

	st, pre := origin.DisaggStats(), nodes[1].node.DisaggStats()
	received := st.BlocksReceived + nodes[2].node.DisaggStats().BlocksReceived
	t.Logf("origin %+v; prefill member %+v; blocks received by decode members %d", st, pre, received)
	if st.Disaggregated != int64(len(reqs)) || st.TransferFailed != 0 {
		t.Errorf("origin: %+v; want %d disaggregated, none failed", st, len(reqs))
	}
	if pre.BlocksSent == 0 || received != pre.BlocksSent {
		t.Errorf("the prefill member sent %d blocks, the decode members received %d", pre.BlocksSent, received)
	}
	if s, _ := nodes[1].rt.Stats(clusterWait); s == nil || s.PrefixQueries == 0 {
		t.Errorf("the prefill member computed no prompt: %+v", s)
	}
}

// TestDisaggCut: a transfer cut mid-way (the prefill member dies after its
// first K/V message) and a transfer whose K/V message is malformed both end
// with the decode member computing the rest of the prompt: every request
// gives the tokens of one runtime alone, nothing hangs, and the failure is
// counted with a clear reason. A malformed envelope sent to a member's K/V
// actor is answered with an error, and the member keeps serving.
func TestDisaggCut(t *testing.T) {
	m := stories(t)

	t.Run("malformed", func(t *testing.T) {
		nodes := startRoles(t, m, cluster.RoleDecode, cluster.RolePrefill)
		origin := nodes[0].node
		nodes[1].node.SetKVHook(func(chunk int, imp *messages.ImportKV) {
			if chunk == 1 {
				imp.Data = imp.Data[:len(imp.Data)-1]
			}
		})
		reqs := disaggRequests(t, nodes[0].rt, 4)
		runConcurrently(t, origin, reqs, aloneIDs(t, m, reqs))
		st := origin.DisaggStats()
		t.Logf("%+v", st)
		if st.TransferFailed == 0 || !strings.Contains(st.LastTransferErr, "bytes of K/V") {
			t.Errorf("%+v: want failed transfers saying the K/V bytes were wrong", st)
		}
		msg, err := origin.SendRawKV(nodes[0].node, []byte{0x81, 0xa1, 'i', 0xdd, 0xff, 0xff, 0xff, 0xff})
		if err != nil || !strings.Contains(msg, "malformed") {
			t.Errorf("a malformed envelope: %q, %v; want an answer saying malformed", msg, err)
		}
	})

	t.Run("cut", func(t *testing.T) {
		nodes := startRoles(t, m, cluster.RoleDecode, cluster.RolePrefill)
		origin := nodes[0].node
		cut, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		nodes[1].node.SetKVHook(func(chunk int, imp *messages.ImportKV) {
			if chunk == 1 {
				once.Do(func() { close(cut) })
				<-release // the member dies meanwhile
			}
		})
		t.Cleanup(func() { close(release) })
		reqs := disaggRequests(t, nodes[0].rt, 4)
		want := aloneIDs(t, m, reqs)
		killed := make(chan struct{})
		go func() {
			defer close(killed)
			<-cut
			nodes[1].node.Kill()
		}()
		start := time.Now()
		runConcurrently(t, origin, reqs, want)
		t.Logf("the cut requests took %v", time.Since(start))
		<-killed
		nodes[1].node = nil // killed: its runtime stops with the test
		t.Cleanup(func() { nodes[1].rt.Stop(5 * time.Second) })
		st := origin.DisaggStats()
		t.Logf("%+v", st)
		if st.TransferFailed == 0 {
			t.Errorf("%+v: want the cut transfers counted", st)
		}
		// The cluster serves on without its prefill member, once it has
		// seen it leave (until then a request may wait on the cluster's
		// lookup of a grain there, as any request does after a member dies).
		for deadline := time.Now().Add(2 * time.Minute); origin.Stats().Members > 1; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the origin still sees the killed member after 2 minutes")
			}
		}
		start = time.Now()
		runConcurrently(t, origin, reqs[:2], want[:2])
		t.Logf("then %v for 2 more", time.Since(start))
	})
}
