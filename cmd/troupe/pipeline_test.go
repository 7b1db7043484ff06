package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/internal/freeport"
	"github.com/troupe-llm/troupe/internal/syncbuf"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// stageProc is a pipeline stage member's process.
type stageProc struct {
	cmd    *exec.Cmd
	logs   *syncbuf.Buffer // the exec package's copying goroutine writes it
	joined chan string     // its "joined the pipeline" line
	exited chan error      // its exit
}

// startStageProc starts `troupe serve` as stage i of n, joining head.
func startStageProc(t *testing.T, bin, path string, i, n int, head, advertise string, extra ...string) *stageProc {
	t.Helper()
	return startStage(t, bin, path, append([]string{"--pipeline-stages", strconv.Itoa(n), "--pipeline-stage", strconv.Itoa(i),
		"--pipeline-head", head, "--advertise", advertise}, extra...))
}

// startStage starts `troupe serve -m path` with args, a stage member, and
// watches its stdout for the "joined the pipeline" line.
func startStage(t *testing.T, bin, path string, args []string) *stageProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "-m", path, "--log-format", "json"}, args...)...)
	sp := &stageProc{cmd: cmd, logs: &syncbuf.Buffer{}, joined: make(chan string, 1), exited: make(chan error, 1)}
	cmd.Stderr = sp.logs
	stdout := startProc(t, cmd)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "joined the pipeline") {
				sp.joined <- sc.Text()
			}
		}
		sp.exited <- cmd.Wait()
	}()
	return sp
}

// waitJoined waits for sp's "joined the pipeline" line (2 minutes: a hang,
// not a slow machine) and returns it.
func waitJoined(t *testing.T, sp *stageProc, what string) string {
	t.Helper()
	select {
	case l := <-sp.joined:
		return l
	case err := <-sp.exited:
		t.Fatalf("%s exited (%v):\n%s", what, err, sp.logs.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not join in 2 minutes:\n%s", what, sp.logs.String())
	}
	return ""
}

// waitRefused waits for sp, which the pipeline must refuse, to exit with
// want in its logs (2 minutes: a hang, not a slow machine).
func waitRefused(t *testing.T, sp *stageProc, want, what string) {
	t.Helper()
	select {
	case err := <-sp.exited:
		if err == nil || !strings.Contains(sp.logs.String(), want) {
			t.Errorf("%s exited with %v:\n%s", what, err, sp.logs.String())
		}
	case <-sp.joined:
		t.Errorf("%s joined", what)
	case <-time.After(2 * time.Minute):
		t.Errorf("%s neither joined nor exited in 2 minutes:\n%s", what, sp.logs.String())
	}
}

// startPipelineProcs starts a pipeline of n member processes over the
// model at path on 127.0.0.1: the stage members first (they announce
// themselves until the head answers), then the head, which serves once
// every stage has joined. extra goes to the head.
func startPipelineProcs(t *testing.T, bin, path string, n int, extra ...string) (url string, head *exec.Cmd, stages []*stageProc, headAddr string) {
	t.Helper()
	ports := freeport.Ports(t, n)
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	for i := 1; i < n; i++ {
		stages = append(stages, startStageProc(t, bin, path, i, n, addr(0), addr(i)))
	}
	url, head, _ = serve(t, bin, nil, append([]string{"-m", path, "--pipeline-stages", strconv.Itoa(n), "--advertise", addr(0), "--shutdown-grace", "1s"}, extra...)...)
	for i, sp := range stages {
		waitJoined(t, sp, fmt.Sprintf("stage %d", i+1))
	}
	return url, head, stages, addr(0)
}

// rssOf reads a process's resident memory (Rss of /proc/PID/smaps_rollup).
func rssOf(pid int) int64 {
	return smapsRss(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
}

// runConcurrently sends every request at once, streaming every other one,
// and returns each one's choices.
func runConcurrently(t *testing.T, url string, reqs []soakRequest) []*choices {
	c := &soakClient{url: url, http: &http.Client{}}
	out := make([]*choices, len(reqs))
	errs := make([]error, len(reqs))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang, not a slow machine
	defer cancel()
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { out[i], errs[i] = c.do(ctx, r, i%2 == 0) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	return out
}

// pipelineKV is the pipeline tests' KV cache: small enough to preempt.
var pipelineKV = []string{"-c", "512", "--num-kv-blocks", "40", "--max-num-seqs", "16"}

// soakAlone serves the model at path on one node with flags and returns
// the soak mix and its answers there, sent all at once.
func soakAlone(t *testing.T, bin, path string, flags ...string) (reqs []soakRequest, want []*choices) {
	t.Helper()
	alone, cmd, _ := serve(t, bin, nil, append([]string{"-m", path}, flags...)...)
	reqs = soakRequests()
	want = runConcurrently(t, alone, reqs)
	t.Logf("one node: resident %d KiB", rssOf(cmd.Process.Pid)>>10)
	return reqs, want
}

// checkOneNodeText checks that each request's choices have the text and
// finish reasons one node gives.
func checkOneNodeText(t *testing.T, got, want []*choices) {
	t.Helper()
	for i := range want {
		if fmt.Sprint(got[i].text) != fmt.Sprint(want[i].text) || fmt.Sprint(got[i].finish) != fmt.Sprint(want[i].finish) {
			t.Errorf("request %d:\n  pipeline %q %q\n  one node %q %q", i, got[i].text, got[i].finish, want[i].text, want[i].finish)
		}
	}
}

// TestPipelineServe runs stories260K split into 2 and 3 stages over member
// processes on 127.0.0.1 and sends the soak mix (18 concurrent requests:
// greedy and seeded sampling, several choices, long shared prompts) with a
// KV cache small enough to preempt: every choice's text equals one node's.
// Each member's resident memory is logged beside one node's.
func TestPipelineServe(t *testing.T) {
	bin := buildTroupe(t)
	path := testmodels.Path(t, "stories260K.gguf")
	reqs, want := soakAlone(t, bin, path, pipelineKV...)
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("stages%d", n), func(t *testing.T) {
			url, head, stages, _ := startPipelineProcs(t, bin, path, n, pipelineKV...)
			checkOneNodeText(t, runConcurrently(t, url, reqs), want)
			checkPipelineViews(t, url, n)
			pre, err := scrape(url, `troupe:num_preemptions_total{model_name="stories260K"}`)
			t.Logf("%d stages: %v preemptions (%v); resident: head %d KiB", n, pre, err, rssOf(head.Process.Pid)>>10)
			for i, sp := range stages {
				t.Logf("  stage %d: resident %d KiB", i+1, rssOf(sp.cmd.Process.Pid)>>10)
			}
		})
	}
}

// checkPipelineViews checks a pipeline head's /metrics (bytes on every
// hop, each stage's compute and bubble time) and its live view (every
// stage, with its member's address), after requests ran.
func checkPipelineViews(t *testing.T, url string, n int) {
	t.Helper()
	for i := range n {
		hop := fmt.Sprintf(`troupe:pipeline_wire_bytes_total{from_stage="%d",model_name="stories260K",to_stage="%d"}`, (i+n-1)%n, i)
		if v, err := scrape(url, hop); err != nil || v <= 0 {
			t.Errorf("%s: %v (%v)", hop, v, err)
		}
		for _, name := range []string{"stage_compute_seconds_total", "bubble_seconds_total"} {
			m := fmt.Sprintf(`troupe:pipeline_%s{model_name="stories260K",stage="%d"}`, name, i)
			if v, err := scrape(url, m); err != nil || v <= 0 {
				t.Errorf("%s: %v (%v)", m, v, err)
			}
		}
	}
	steps, err1 := scrape(url, `troupe:pipeline_steps_total{model_name="stories260K"}`)
	micro, err2 := scrape(url, `troupe:pipeline_micro_batches_total{model_name="stories260K"}`)
	if err1 != nil || err2 != nil || micro <= steps {
		t.Errorf("%v steps in %v micro-batches (%v, %v): want steps cut", steps, micro, err1, err2)
	}
	t.Logf("%d stages: %v steps in %v micro-batches", n, steps, micro)
	resp, err := http.Get(url + "/v1/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Pipeline *struct {
				Stages []struct {
					Stage           int
					Address, Layers string
				}
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("a live event: %v\n%s", err, data)
		}
		if ev.Pipeline == nil || len(ev.Pipeline.Stages) != n {
			t.Fatalf("the live view's pipeline: %s", data)
		}
		for i, st := range ev.Pipeline.Stages {
			if st.Stage != i || st.Address == "" || !strings.HasPrefix(st.Layers, "layers [") {
				t.Errorf("the live view's stage %d: %+v", i, st)
			}
		}
		return
	}
	t.Errorf("the live view ended without an event: %v", sc.Err())
}

// TestPipelineStageKilled kills (SIGKILL) the last stage's member of three
// while streams run: every request ends, with an error naming the lost
// stage, never a hang; later requests fail with the same error.
func TestPipelineStageKilled(t *testing.T) {
	bin := buildTroupe(t)
	path := testmodels.Path(t, "stories260K.gguf")
	url, _, stages, _ := startPipelineProcs(t, bin, path, 3)
	c := &soakClient{url: url, http: &http.Client{}}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	started := make(chan struct{}, len(errs))
	for i := range errs {
		wg.Go(func() {
			r := soakRequest{"/v1/completions", map[string]any{"prompt": fmt.Sprintf("Once upon a time %d", i), "max_tokens": 2000, "ignore_eos": true, "temperature": 0}}
			started <- struct{}{}
			_, errs[i] = c.do(context.Background(), r, i%2 == 0)
		})
	}
	for range errs {
		<-started
	}
	// Kill once a stream of its own has had 10 events (the others run
	// beside it by then: they were sent first).
	body := `{"prompt": "Lily and Tom", "max_tokens": 2000, "ignore_eos": true, "stream": true}`
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for events := 0; events < 10 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data:") {
			events++
		}
	}
	if err := stages[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	if !strings.Contains(rest.String(), "pipeline stage 2") {
		t.Errorf("the probe stream ended without the lost stage's error:\n%s", rest.String())
	}
	wg.Wait() // a hang here is the failure (the test's own timeout names it)
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "pipeline stage 2") {
			t.Errorf("request %d: %v, want an error naming the lost stage 2", i, err)
		}
	}
	_, err = c.do(context.Background(), soakRequest{"/v1/completions", map[string]any{"prompt": "Once", "max_tokens": 4}}, false)
	if err == nil || !strings.Contains(err.Error(), "was lost") {
		t.Errorf("a request after the loss: %v, want the lost stage's error", err)
	}
}

// TestPipelineStageRejoin kills (SIGKILL) the last stage's member of three
// and starts another process at its address: a request while it is gone
// ends with the lost stage's error; once the new member has joined,
// requests work again (polled with a deadline: a request whose prompt hit
// a prefix cached before the loss is refused once), with the text they
// gave before the loss.
func TestPipelineStageRejoin(t *testing.T) {
	bin := buildTroupe(t)
	path := testmodels.Path(t, "stories260K.gguf")
	url, _, stages, headAddr := startPipelineProcs(t, bin, path, 3)
	c := &soakClient{url: url, http: &http.Client{}}
	req := soakRequest{"/v1/completions", map[string]any{"prompt": "Once upon a time, Lily and Tom", "max_tokens": 24, "ignore_eos": true, "temperature": 0}}
	want, err := c.do(context.Background(), req, false)
	if err != nil {
		t.Fatal(err)
	}
	addr := stages[1].cmd.Args[slices.Index(stages[1].cmd.Args, "--advertise")+1]
	if err := stages[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-stages[1].exited
	_, err = c.do(context.Background(), soakRequest{"/v1/completions", map[string]any{"prompt": "Once", "max_tokens": 4}}, false)
	if err == nil || !strings.Contains(err.Error(), "pipeline stage 2") {
		t.Fatalf("a request while stage 2 is gone: %v, want its error", err)
	}
	waitJoined(t, startStageProc(t, bin, path, 2, 3, headAddr, addr), "the restarted stage 2")
	checkAfterRejoin(t, c, req, want)
	m, err := scrape(url, `troupe:pipeline_rejoins_total{model_name="stories260K",stage="2"}`)
	if err != nil || m != 1 {
		t.Errorf("troupe:pipeline_rejoins_total of stage 2: %v (%v), want 1", m, err)
	}
}

// checkAfterRejoin sends req until it works again after a lost stage has
// rejoined (a minute and five tries: a request whose prompt hit a prefix
// cached before the loss is refused once), then checks it gives the text
// it gave before the loss.
func checkAfterRejoin(t *testing.T, c *soakClient, req soakRequest, before *choices) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for attempt := 1; ; attempt++ {
		got, err := c.do(context.Background(), req, attempt%2 == 0)
		if err == nil {
			if fmt.Sprint(got.text) != fmt.Sprint(before.text) {
				t.Errorf("after the rejoin: %q, before the loss: %q", got.text, before.text)
			}
			t.Logf("the request worked again at attempt %d", attempt)
			return
		}
		if time.Now().After(deadline) || attempt > 5 {
			t.Fatalf("requests after the rejoin still fail (attempt %d): %v", attempt, err)
		}
	}
}

// TestPipelineBadSetup: more stages than the model has layers, and a second
// member for a stage already served, end with errors that say so; bad
// flag combinations are usage errors (exit 2).
func TestPipelineBadSetup(t *testing.T) {
	bin := buildTroupe(t)
	path := testmodels.Path(t, "stories260K.gguf")
	port := freeport.Ports(t, 1)[0]
	out, err := exec.Command(bin, "serve", "-m", path, "--port", "0", "--pipeline-stages", "9", "--advertise", "127.0.0.1:"+strconv.Itoa(port)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "9 pipeline stages for a model of 5 layers") {
		t.Errorf("9 stages of 5 layers: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"--pipeline-stages", "1", "--advertise", "127.0.0.1:1"},
		{"--pipeline-stages", "2"},
		{"--pipeline-stages", "2", "--pipeline-stage", "1", "--advertise", "127.0.0.1:1"},
		{"--pipeline-stages", "2", "--pipeline-stage", "2", "--pipeline-head", "127.0.0.1:1", "--advertise", "127.0.0.1:2"},
		{"--pipeline-stage", "1"},
		{"--pipeline-stages", "2", "--advertise", "127.0.0.1:1", "--preemption", "swap"},
		{"--pipeline-micro-batches", "2"},
		{"--pipeline-stages", "2", "--advertise", "127.0.0.1:1", "--pipeline-micro-batches", "33"},
		{"--pipeline-stages", "2", "--pipeline-stage", "1", "--pipeline-head", "127.0.0.1:1", "--advertise", "127.0.0.1:2", "--pipeline-micro-batches", "2"},
	} {
		cmd := exec.Command(bin, append([]string{"serve", "-m", path}, args...)...)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "pipeline") {
			t.Errorf("%v: %v, want exit 2 naming the flag:\n%s", args, err, out)
		}
	}
	_, _, _, headAddr := startPipelineProcs(t, bin, path, 2)
	dup := startStageProc(t, bin, path, 1, 2, headAddr, "127.0.0.1:"+strconv.Itoa(freeport.Ports(t, 1)[0]))
	waitRefused(t, dup, "stage 1 of 2 is already served by", "a second member for stage 1")
}

// TestPipelineResident measures each member's resident memory with a
// model large enough to see it (smollm2-135m's shape, Q8_0, 113 MB;
// written by troupe synth): one node against the two members of a 2-stage
// pipeline, after a request has run through every layer. Each member must
// hold at least a quarter of the file less than one node (half, less the
// embedding and the head, is what a split by bytes gives).
func TestPipelineResident(t *testing.T) {
	bin := buildTroupe(t)
	path := filepath.Join(t.TempDir(), "smollm2-135m-Q8_0.gguf")
	out, err := exec.Command(bin, "synth", "--shape", "smollm2-135m", "--type", "Q8_0", "--vocab", testmodels.Path(t, "stories260K.gguf"), "-o", path, "-t", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("troupe synth: %v\n%s", err, out)
	}
	fi := stat(t, path)
	req := []soakRequest{{"/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}}}
	url, alone, _ := serve(t, bin, nil, "-m", path)
	runConcurrently(t, url, req)
	one := rssOf(alone.Process.Pid)
	url, head, stages, _ := startPipelineProcs(t, bin, path, 2)
	runConcurrently(t, url, req)
	members := []int64{rssOf(head.Process.Pid), rssOf(stages[0].cmd.Process.Pid)}
	t.Logf("file %d MiB; resident: one node %d MiB, head (stage 0) %d MiB, stage 1 %d MiB", fi.Size()>>20, one>>20, members[0]>>20, members[1]>>20)
	for i, rss := range members {
		if rss == 0 || one == 0 {
			t.Skip("no /proc/PID/smaps_rollup here")
		}
		if rss > one-fi.Size()/4 {
			t.Errorf("stage %d holds %d MiB, one node %d MiB: want at least a quarter of the file (%d MiB) less", i, rss>>20, one>>20, fi.Size()>>22)
		}
	}
}
