package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// biasedToken is what a biasedDevice's logits always pick.
const biasedToken = 100

// biasedDevice computes other logits than the CPU (as another CPU's
// arithmetic might): every row picks biasedToken.
type biasedDevice struct{ actors.Backend }

func (b biasedDevice) Forward(batch *model.Batch, logits []float32) error {
	if err := b.Backend.Forward(batch, logits); err != nil {
		return err
	}
	v := b.VocabSize()
	for r := 0; r+v <= len(logits); r += v {
		logits[r+biasedToken] += 1e4
	}
	return nil
}

// TestFailoverDiverged kills a node whose arithmetic differs from the
// others' while requests from another node run on it, after it has sent
// some of their tokens. The reruns elsewhere give other tokens: each such
// choice ends with an error after the tokens it had, never with the rerun's
// tokens spliced on; the requests that did not run there give one node's
// output.
func TestFailoverDiverged(t *testing.T) {
	m := stories(t)
	cfg := actors.Config{NumBlocks: 256}
	specs := []nodeSpec{
		{m: m, cfg: cfg, backend: func() actors.Backend { return slowCPU(t, m, 256) }},
		{m: m, cfg: cfg, backend: func() actors.Backend { return biasedDevice{slowCPU(t, m, 256)} }},
		{m: m, cfg: cfg, backend: func() actors.Backend { return slowCPU(t, m, 256) }},
	}
	nodes := startCluster(t, specs, cluster.Config{}, 3)
	runs := streamDogs(t, nodes[0], 200, false)
	// Some tokens are sent: node 1 has run steps (polled, not a fixed
	// sleep, which a loaded machine can outlast before the first token).
	for deadline := time.Now().Add(clusterWait); ; time.Sleep(time.Millisecond) {
		st, err := nodes[1].rt.Stats(clusterWait)
		if err != nil {
			t.Fatal(err)
		}
		if st.Steps >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 1 ran %d steps in %v", st.Steps, clusterWait)
		}
	}
	nodes[1].node.Kill()
	nodes[1].node = nil
	diverged := 0
	for i, r := range runs {
		got, _, finish := collect(t, r.ch, max(r.req.N, 1))
		want := streamIDs(t, nodes[0].rt, r.req)
		for c := range want {
			if finish[c] == messages.FinishError {
				diverged++
				// What the killed node sent, and nothing after it.
				if len(got[c]) == 0 || slices.ContainsFunc(got[c], func(id int32) bool { return id != biasedToken }) {
					t.Errorf("request %d choice %d ended with an error after %v; want only the killed node's tokens (%d)", i, c, got[c], biasedToken)
				}
				continue
			}
			if !slices.Equal(got[c], want[c]) || finish[c] != messages.FinishLength {
				t.Errorf("request %d choice %d (%s): %v\nalone: %v", i, c, finish[c], got[c], want[c])
			}
		}
	}
	st := nodes[0].node.Stats()
	t.Logf("%d choices diverged; %+v", diverged, st)
	if diverged == 0 || st.Diverged != int64(diverged) {
		t.Errorf("%d choices ended with an error, Stats.Diverged %d: want the same, not 0", diverged, st.Diverged)
	}
}

// kindDevice is a backend that says it computes on kind.
type kindDevice struct {
	actors.Backend
	kind string
}

func (k kindDevice) DeviceKind() string { return k.kind }

// TestRefuseMembers: a member that serves another model file (one byte of
// a weight differs) or computes on another kind of device is refused: the
// others drop it, no request goes there, and every request gives one
// node's output.
func TestRefuseMembers(t *testing.T) {
	path := testmodels.Path(t, "stories260K.gguf")
	m := openModel(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1 // the last weight
	other := filepath.Join(t.TempDir(), "stories260K-other.gguf")
	if err := os.WriteFile(other, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m2 := openModel(t, other)
	cpu := func(m *model.Model, kind string) func() actors.Backend {
		return func() actors.Backend { return kindDevice{slowCPU(t, m, 256), kind} }
	}
	cfg := actors.Config{NumBlocks: 256}
	nodes := startCluster(t, []nodeSpec{
		{m: m, cfg: cfg, backend: cpu(m, backend.DeviceCPU)},
		{m: m, cfg: cfg, backend: cpu(m, backend.DeviceCUDA)}, // says it is a GPU
		{m: m2, cfg: cfg, backend: cpu(m2, backend.DeviceCPU)},
		{m: m, cfg: cfg, backend: cpu(m, backend.DeviceCPU)},
	}, cluster.Config{}, 0)
	deadline := time.Now().Add(clusterWait)
	for st := nodes[0].node.Stats(); st.Refused < 2 || st.Members != 2; st = nodes[0].node.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("node 0: %+v; want 2 members refused and 2 left", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range 24 {
		prompt, err := nodes[0].rt.Tokenize(fmt.Sprintf("Once upon a time, %d little cats", i))
		if err != nil {
			t.Fatal(err)
		}
		req := &messages.GenerateRequest{Prompt: prompt, MaxTokens: 16}
		ch, err := nodes[0].node.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got, _, finish := collect(t, ch, 1)
		alone, err := nodes[0].rt.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		want, _, _ := collect(t, alone, 1)
		if !slices.Equal(got[0], want[0]) || finish[0] == messages.FinishError {
			t.Errorf("request %d (%s): %v; alone %v", i, finish[0], got[0], want[0])
		}
	}
	for i, tn := range nodes[1:3] {
		st, err := tn.rt.Stats(clusterWait)
		if err != nil {
			t.Fatal(err)
		}
		if st.Steps != 0 {
			t.Errorf("refused node %d ran %d steps", i+1, st.Steps)
		}
	}
	st := nodes[0].node.Stats()
	t.Logf("%+v", st)
	if st.PlacedRemote == 0 {
		t.Error("no request went to the member that matches")
	}
}
