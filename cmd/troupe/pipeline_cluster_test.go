package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/internal/freeport"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// pipelineCluster is the flags of a pipeline formed through the automanaged
// provider on 127.0.0.1: member i listens on adv[i] and auto[i], and every
// member's seeds are all the auto ports (spare ones included, for members
// started later).
type pipelineCluster struct {
	adv, auto []int
}

func newPipelineCluster(t *testing.T, members int) *pipelineCluster {
	ports := freeport.Ports(t, 2*members)
	return &pipelineCluster{adv: ports[:members], auto: ports[members:]}
}

// args are member i's flags: stage of stages, in the cluster.
func (pc *pipelineCluster) args(i, stage, stages int) []string {
	var seeds []string
	for _, p := range pc.auto {
		seeds = append(seeds, "127.0.0.1:"+strconv.Itoa(p))
	}
	return []string{"--pipeline-stages", strconv.Itoa(stages), "--pipeline-stage", strconv.Itoa(stage),
		"--cluster", "pipe", "--provider", "automanaged", "--automanaged-port", strconv.Itoa(pc.auto[i]),
		"--seeds", strings.Join(seeds, ","), "--advertise", "127.0.0.1:" + strconv.Itoa(pc.adv[i])}
}

// TestPipelineCluster forms a 3-stage pipeline of stories260K through the
// cluster (automanaged provider, three member processes on 127.0.0.1, no
// --pipeline-head): the stage members find the head in the gossip, and
// the soak mix's text equals one node's bit for bit. Then a fourth member
// announcing stage 1 is refused (the first kept), as is one with another
// model file, and the last stage's
// member is killed and started again: requests meanwhile end with the lost
// stage's error, and after it has found the head again they give the same
// text as before.
func TestPipelineCluster(t *testing.T) {
	bin := buildTroupe(t)
	path := testmodels.Path(t, "stories260K.gguf")
	reqs, want := soakAlone(t, bin, path, pipelineKV...)

	pc := newPipelineCluster(t, 4) // member 3: the duplicate stage 1, started later
	stages := []*stageProc{startStage(t, bin, path, pc.args(1, 1, 3)), startStage(t, bin, path, pc.args(2, 2, 3))}
	url, _, _ := serve(t, bin, nil, append(append([]string{"-m", path, "--shutdown-grace", "1s"}, pc.args(0, 0, 3)...), pipelineKV...)...)
	head := "127.0.0.1:" + strconv.Itoa(pc.adv[0])
	for i, sp := range stages {
		if l := waitJoined(t, sp, fmt.Sprintf("stage %d", i+1)); !strings.Contains(l, "at "+head) {
			t.Errorf("stage %d: %q, want the head %s found in the cluster", i+1, l, head)
		}
	}
	checkOneNodeText(t, runConcurrently(t, url, reqs), want)
	checkPipelineViews(t, url, 3)

	dup := startStage(t, bin, path, pc.args(3, 1, 3))
	waitRefused(t, dup, "stage 1 of 3 is already served by 127.0.0.1:"+strconv.Itoa(pc.adv[1]), "a second member for stage 1")

	// Another model file (the same weights, one byte more at the end):
	// refused as with --pipeline-head.
	other := filepath.Join(t.TempDir(), "other.gguf")
	b := readFile(t, path)
	if err := os.WriteFile(other, append(b, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := startStage(t, bin, other, pc.args(3, 1, 3))
	waitRefused(t, foreign, "it serves model sha256:", "a member of another model file")

	c := &soakClient{url: url, http: &http.Client{}}
	req := soakRequest{"/v1/completions", map[string]any{"prompt": "Once upon a time, Lily and Tom", "max_tokens": 24, "ignore_eos": true, "temperature": 0}}
	before, err := c.do(context.Background(), req, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := stages[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-stages[1].exited
	// The head sees the loss when its connection to the member ends: poll.
	for deadline := time.Now().Add(time.Minute); ; {
		_, err = c.do(context.Background(), soakRequest{"/v1/completions", map[string]any{"prompt": "Once", "max_tokens": 4}}, false)
		if err != nil {
			if !strings.Contains(err.Error(), "pipeline stage 2") {
				t.Fatalf("a request while stage 2 is gone: %v, want its error", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("requests still work a minute after stage 2's member was killed")
		}
	}
	again := startStage(t, bin, path, pc.args(2, 2, 3))
	waitJoined(t, again, "the restarted stage 2")
	checkAfterRejoin(t, c, req, before)
}

// TestPipelineClusterFlags: --pipeline-head and the disaggregation flags
// beside --cluster in a pipeline are usage errors (exit 2) naming them, and
// more stages than the model has layers is an error saying so.
func TestPipelineClusterFlags(t *testing.T) {
	bin := buildTroupe(t)
	path := testmodels.Path(t, "stories260K.gguf")
	pc := newPipelineCluster(t, 1)
	for _, extra := range [][]string{
		{"--pipeline-head", "127.0.0.1:1"},
		{"--role", "prefill"},
		{"--provider", "nope"},
	} {
		args := append(append([]string{"serve", "-m", path}, pc.args(0, 1, 2)...), extra...)
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), strings.TrimPrefix(extra[0], "--")) {
			t.Errorf("%v: %v, want exit 2 naming %s:\n%s", extra, err, extra[0], out)
		}
	}
	out, err := exec.Command(bin, append([]string{"serve", "-m", path, "--port", "0"}, pc.args(0, 0, 9)...)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "9 pipeline stages for a model of 5 layers") {
		t.Errorf("9 stages of 5 layers in a cluster: %v\n%s", err, out)
	}
}

// TestPipelineClusterEtcd forms a 3-stage pipeline through etcd (three
// member processes on 127.0.0.1, as on three machines with one etcd): the
// soak mix's text equals one node's.
func TestPipelineClusterEtcd(t *testing.T) {
	etcd := startEtcd(t)
	bin := buildTroupe(t)
	path := testmodels.Path(t, "stories260K.gguf")
	reqs, want := soakAlone(t, bin, path)
	ports := freeport.Ports(t, 3)
	args := func(i int) []string {
		return []string{"--pipeline-stages", "3", "--pipeline-stage", strconv.Itoa(i), "--cluster", "pipe", "--provider", "etcd",
			"--etcd", etcd, "--advertise", "127.0.0.1:" + strconv.Itoa(ports[i])}
	}
	stages := []*stageProc{startStage(t, bin, path, args(1)), startStage(t, bin, path, args(2))}
	url, _, _ := serve(t, bin, nil, append([]string{"-m", path, "--shutdown-grace", "1s"}, args(0)...)...)
	for i, sp := range stages {
		waitJoined(t, sp, fmt.Sprintf("stage %d", i+1))
	}
	checkOneNodeText(t, runConcurrently(t, url, reqs), want)
}
