package cluster_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/actors/internal/actortest"
	"github.com/troupe-llm/troupe/internal/freeport"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// pipelineSet is a head and its stage members, in process.
type pipelineSet struct {
	rt      *actors.Runtime
	sys     *actor.ActorSystem
	head    *cluster.Pipeline
	members []*cluster.StageMember
	addrs   []string // by stage
}

// startOne starts a runtime of rcfg on m's CPU device, in an actor system
// of its own, outside any cluster; stop stops both.
func startOne(t testing.TB, m *model.Model, rcfg actors.Config) (rt *actors.Runtime, stop func()) {
	t.Helper()
	sys := actortest.QuietSystem()
	rcfg.NewBackend = backend.For(m, backend.DeviceCPU)
	rt, err := actors.Start(sys, m, rcfg)
	if err != nil {
		sys.Shutdown()
		t.Fatal(err)
	}
	return rt, func() {
		rt.Stop(5 * time.Second)
		sys.Shutdown()
	}
}

// startPipeline splits the model at path into n stages: a head running
// the runtime with stage 0, and a stage member per further stage, each in
// an actor system of its own on 127.0.0.1. Under -race it skips, as
// startCluster does.
func startPipeline(t testing.TB, path string, n int, rcfg actors.Config) *pipelineSet {
	t.Helper()
	if raceEnabled && os.Getenv("TROUPE_CLUSTER_RACE") != "1" {
		t.Skip("several members in one process race inside protoactor-go (ARCHITECTURE.md); TROUPE_CLUSTER_RACE=1 runs them anyway")
	}
	plan, err := model.PlanStages(path, n)
	if err != nil {
		t.Fatal(err)
	}
	ports := freeport.Ports(t, n)
	ps := &pipelineSet{sys: actortest.QuietSystem()}
	for i := range n {
		ps.addrs = append(ps.addrs, "127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	hm := openModelWith(t, path, model.LoadOptions{Stage: plan[0]})
	cfg := rcfg
	cfg.NewBackend = func(i int, bc actors.BackendConfig) (actors.Backend, error) {
		p, err := cluster.NewPipeline(hm, n, bc)
		if err == nil {
			p.CutEveryStep()
		}
		ps.head = p
		return p, err
	}
	if ps.rt, err = actors.Start(ps.sys, hm, cfg); err != nil {
		t.Fatal(err)
	}
	if err := ps.head.Start(ps.sys, ps.rt, ps.addrs[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ps.rt.Stop(5 * time.Second)
		ps.head.Stop()
		ps.sys.Shutdown()
	})
	for i := 1; i < n; i++ {
		sm, err := startStage(t, path, plan[i], cluster.StageConfig{Stage: i, Stages: n, Head: ps.addrs[0], Advertise: ps.addrs[i], Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		ps.members = append(ps.members, sm)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterWait)
	defer cancel()
	if err := ps.head.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return ps
}

// startStage loads stage st of the model at path and starts its member,
// waiting for the head's answer.
func startStage(t testing.TB, path string, st model.Stage, cfg cluster.StageConfig) (*cluster.StageMember, error) {
	m := openModelWith(t, path, model.LoadOptions{Stage: st})
	sm, err := cluster.StartStage(actortest.QuietSystem(), m, cfg)
	if err != nil {
		return nil, err
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			sm.Stop()
		}
	})
	select {
	case err := <-sm.Joined():
		if err != nil {
			sm.Stop()
			stopped = true
		}
		return sm, err
	case <-time.After(clusterWait):
		t.Fatalf("the head did not answer the stage's join in %v", clusterWait)
	}
	return nil, nil
}

// pipelineRequests are concurrent requests, greedy and seeded, some with
// several choices, on prompts sharing prefixes.
func pipelineRequests(t *testing.T, rt *actors.Runtime, n int) []*messages.GenerateRequest {
	var reqs []*messages.GenerateRequest
	for i := range n {
		prompt, err := rt.Tokenize(fmt.Sprintf("Once upon a time, %d little cats went to the park", i))
		if err != nil {
			t.Fatal(err)
		}
		req := &messages.GenerateRequest{Prompt: prompt, MaxTokens: 40, N: 1 + i%2, IgnoreEOS: true}
		if i%2 == 1 {
			req.Sampling = messages.SamplingParams{Temperature: 0.8, Seed: uint64(i), HasSeed: true}
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// runAll runs reqs at once on rt and returns each one's choices' ids.
func runAll(t testing.TB, rt *actors.Runtime, reqs []*messages.GenerateRequest) [][][]int32 {
	out := make([][][]int32, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		ch, err := rt.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { out[i], _, _ = collect(t, ch, max(req.N, 1)) })
	}
	wg.Wait()
	return out
}

// TestPipeline runs stories260K split into 2 and 3 stages over members
// (in process, on 127.0.0.1), with 12 concurrent requests (greedy and
// seeded sampling, one and two choices) and a KV cache small enough that
// sequences are preempted, and requires exactly the tokens one node gives.
func TestPipeline(t *testing.T) {
	path := testmodels.Path(t, "stories260K.gguf")
	m := openModel(t, path)
	rcfg := actors.Config{NumBlocks: 24, MaxNumSeqs: 8} // preemption: 18 choices of ~56 positions in 24 blocks of 16
	one, stop := startOne(t, m, rcfg)
	defer stop()
	want := runAll(t, one, pipelineRequests(t, one, 12))
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("stages%d", n), func(t *testing.T) {
			ps := startPipeline(t, path, n, rcfg)
			got := runAll(t, ps.rt, pipelineRequests(t, ps.rt, 12))
			for i := range want {
				for c := range want[i] {
					if fmt.Sprint(got[i][c]) != fmt.Sprint(want[i][c]) {
						t.Errorf("request %d choice %d:\n  pipeline %v\n  one node %v", i, c, got[i][c], want[i][c])
					}
				}
			}
			st, err := ps.rt.Stats(clusterWait)
			if err != nil {
				t.Fatal(err)
			}
			hs := ps.head.Stats()
			if hs.MicroBatches <= hs.Steps {
				t.Errorf("%d steps in %d micro-batches: no step was cut", hs.Steps, hs.MicroBatches)
			}
			t.Logf("%d stages %v: %d preemptions; %d steps in %d micro-batches", n, ps.head.Plan(), st.Preemptions, hs.Steps, hs.MicroBatches)
		})
	}
}

// TestPipelineBadMembers: a member announcing a stage already served, or
// a stage the head does not have, is refused with an error that says so;
// more stages than layers is an error at the start.
func TestPipelineBadMembers(t *testing.T) {
	path := testmodels.Path(t, "stories260K.gguf")
	ps := startPipeline(t, path, 2, actors.Config{})
	plan := ps.head.Plan()
	port := freeport.Ports(t, 1)[0]
	_, err := startStage(t, path, plan[1], cluster.StageConfig{Stage: 1, Stages: 2, Head: ps.addrs[0], Advertise: "127.0.0.1:" + strconv.Itoa(port), Workers: 1})
	if err == nil || !strings.Contains(err.Error(), "stage 1 of 2 is already served by "+ps.addrs[1]) {
		t.Errorf("a second member for stage 1: %v", err)
	}
	plan3, err := model.PlanStages(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	port = freeport.Ports(t, 1)[0]
	_, err = startStage(t, path, plan3[2], cluster.StageConfig{Stage: 2, Stages: 3, Head: ps.addrs[0], Advertise: "127.0.0.1:" + strconv.Itoa(port), Workers: 1})
	if err == nil || !strings.Contains(err.Error(), "it serves 2 pipeline stages") {
		t.Errorf("a member of a 3-stage split: %v", err)
	}
	if _, err := model.PlanStages(path, 6); err == nil || !strings.Contains(err.Error(), "6 pipeline stages for a model of 5 layers") {
		t.Errorf("6 stages of 5 layers: %v", err)
	}
	if err := (cluster.StageConfig{Stage: 0, Stages: 2, Head: "127.0.0.1:1", Advertise: "127.0.0.1:2"}).Validate(); err == nil {
		t.Error("a stage member for stage 0: no error")
	}
}

// TestPipelineStageLost stops a stage member while requests run: each one
// ends, with the tokens it had and an error naming the lost stage, and
// none hangs; later requests fail at once with the same error.
func TestPipelineStageLost(t *testing.T) {
	path := testmodels.Path(t, "stories260K.gguf")
	ps := startPipeline(t, path, 3, actors.Config{})
	reqs := pipelineRequests(t, ps.rt, 6)
	for _, r := range reqs {
		r.MaxTokens = 100000
		r.N = 1
	}
	var chans []<-chan *messages.OutputChunk
	for _, req := range reqs {
		ch, err := ps.rt.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	// Stop stage 2 once every request has tokens.
	first := make([]*messages.OutputChunk, len(chans))
	for i, ch := range chans {
		first[i] = <-ch
	}
	ps.members[1].Stop()
	for i, ch := range chans {
		var errText string
		for c := range ch {
			if c.Err != "" {
				errText = c.Err
			}
			if c.Done {
				break
			}
		}
		if !strings.Contains(errText, "pipeline stage 2") || !strings.Contains(errText, "was lost") {
			t.Errorf("request %d ended with error %q, want the lost stage named", i, errText)
		}
	}
	ch, err := ps.rt.Stream(context.Background(), &messages.GenerateRequest{Prompt: reqs[0].Prompt, MaxTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, _, finish := collect(t, ch, 1)
	if finish[0] != messages.FinishError {
		t.Errorf("a request after the loss finished %q, want an error", finish[0])
	}
}

// TestPipelineMoE runs gpt-oss-tiny (experts, sinks, a sliding window of 16
// on every other layer; troupe synth) split into 2 stages against one node,
// past the window: the tokens are one node's.
func TestPipelineMoE(t *testing.T) {
	path := synthtest.Write(t, "gpt-oss-tiny", "Q8_0", "stories260K.gguf", 1)
	m := openModel(t, path)
	rcfg := actors.Config{NumBlocks: 48, MaxNumSeqs: 8}
	one, stop := startOne(t, m, rcfg)
	defer stop()
	reqs := func(rt *actors.Runtime) []*messages.GenerateRequest {
		rs := pipelineRequests(t, rt, 6)
		for _, r := range rs {
			r.MaxTokens = 64 // past the window
		}
		return rs
	}
	want := runAll(t, one, reqs(one))
	ps := startPipeline(t, path, 2, rcfg)
	got := runAll(t, ps.rt, reqs(ps.rt))
	for i := range want {
		for c := range want[i] {
			if fmt.Sprint(got[i][c]) != fmt.Sprint(want[i][c]) {
				t.Errorf("request %d choice %d:\n  pipeline %v\n  one node %v", i, c, got[i][c], want[i][c])
			}
		}
	}
}

// TestPipelineRejoin stops the last stage's member of three and starts
// another at its address: a request while it is gone ends with the lost
// stage's error; once the new member joined, a request whose prompt hits
// the prefix cached before the loss is refused rather than read stale KV
// (kvFresh), and later requests give the tokens they gave before the loss.
func TestPipelineRejoin(t *testing.T) {
	path := testmodels.Path(t, "stories260K.gguf")
	ps := startPipeline(t, path, 3, actors.Config{})
	prompt, err := ps.rt.Tokenize("Once upon a time, there was a little cat who liked to play in the park with her friends")
	if err != nil {
		t.Fatal(err)
	}
	run := func(p []int32) ([]int32, string, string) {
		ch, err := ps.rt.Stream(context.Background(), &messages.GenerateRequest{Prompt: p, MaxTokens: 24, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		var errText string
		var ids []int32
		for c := range ch {
			for _, tok := range c.Tokens {
				ids = append(ids, tok.ID)
			}
			if c.Err != "" {
				errText = c.Err
			}
			if c.FinishReason != "" {
				return ids, c.FinishReason, errText
			}
		}
		t.Fatal("the stream closed without a finish")
		return nil, "", ""
	}
	want, finish, _ := run(prompt)
	if finish != messages.FinishLength {
		t.Fatalf("before the loss: finish %q", finish)
	}
	plan := ps.head.Plan()
	ps.members[1].Stop()
	// Wait for the head to see the loss: a condition polled, with a deadline.
	deadline := time.Now().Add(clusterWait)
	for ps.head.Stats().Stages[2].Address != "" {
		if time.Now().After(deadline) {
			t.Fatalf("the head did not see stage 2's member go in %v", clusterWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, finish, errText := run(prompt[:5]); finish != messages.FinishError || !strings.Contains(errText, "pipeline stage 2") || !strings.Contains(errText, "was lost") {
		t.Errorf("a request while stage 2 is gone: finish %q, error %q", finish, errText)
	}
	// The in-between request's failed step dropped the runtime's cached
	// prefixes; cache the prompt's again, then lose the stage with no
	// request in between, so that the prefix is stale after the rejoin.
	if _, finish, _ := run(prompt[:5]); finish != messages.FinishError {
		t.Fatalf("a second request while stage 2 is gone: finish %q", finish)
	}
	sm, err := startStage(t, path, plan[2], cluster.StageConfig{Stage: 2, Stages: 3, Head: ps.addrs[0], Advertise: ps.addrs[2], Workers: 2})
	if err != nil {
		t.Fatalf("a member restarted at the lost one's address: %v", err)
	}
	if got, finish, errText := run(prompt); finish != messages.FinishLength || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the rejoin: finish %q (%s)\n  got  %v\n  want %v", finish, errText, got, want)
	}
	// Lose it again with the prompt's blocks cached, and rejoin.
	sm.Stop()
	for deadline := time.Now().Add(clusterWait); ps.head.Stats().Stages[2].Address != ""; {
		if time.Now().After(deadline) {
			t.Fatal("the head did not see stage 2's second member go")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := startStage(t, path, plan[2], cluster.StageConfig{Stage: 2, Stages: 3, Head: ps.addrs[0], Advertise: ps.addrs[2], Workers: 2}); err != nil {
		t.Fatalf("the third member: %v", err)
	}
	if _, finish, errText := run(prompt); finish != messages.FinishError || !strings.Contains(errText, "run the request again") {
		t.Errorf("a request on a prefix cached before the loss: finish %q, error %q; want the stale KV refused", finish, errText)
	}
	if got, finish, errText := run(prompt); finish != messages.FinishLength || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the request again: finish %q (%s)\n  got  %v\n  want %v", finish, errText, got, want)
	}
	if st := ps.head.Stats(); st.Stages[2].Rejoins != 2 {
		t.Errorf("%d rejoins counted, want 2", st.Stages[2].Rejoins)
	}
}
