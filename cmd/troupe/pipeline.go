package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/model"
)

// pipelineConfig is serve's --pipeline-* flags: the model split into
// Stages pipeline stages over members; this one serves Stage (0: the head,
// which serves HTTP and runs the runtime; others join Head).
type pipelineConfig struct {
	Stages, Stage int
	Head          string
	MicroBatches  int // a step cut into at most this many; 0: Stages
}

func pipelineVar(fs *flag.FlagSet, p *pipelineConfig) {
	fs.IntVar(&p.Stages, "pipeline-stages", 0, "split the model's layers into this many pipeline stages, one per member (with --advertise); 0: no pipeline")
	fs.IntVar(&p.Stage, "pipeline-stage", 0, "the stage this member serves: 0 is the head (HTTP, the runtime, the first layers), 1 to N-1 join the head (--pipeline-head, or found by gossip in --cluster)")
	fs.StringVar(&p.Head, "pipeline-head", "", "the head's --advertise HOST:PORT (stage members without --cluster)")
	fs.IntVar(&p.MicroBatches, "pipeline-micro-batches", 0, "the head cuts a step into at most this many micro-batches of whole sequences, which overlap on the stages (1: no overlap); 0: the stage count")
}

// checkPipeline is Validate's part for the pipeline flags: "" when fine.
func (c *serveConfig) checkPipeline() string {
	p := c.Pipeline
	switch {
	case p.Stages == 0 && (p.Stage != 0 || p.Head != "" || p.MicroBatches != 0):
		return "--pipeline-stage, --pipeline-head and --pipeline-micro-batches need --pipeline-stages"
	case p.MicroBatches < 0 || p.MicroBatches > 32:
		return fmt.Sprintf("--pipeline-micro-batches %d: want 1 to 32 (0: the stage count)", p.MicroBatches)
	case p.MicroBatches != 0 && p.Stage != 0:
		return "--pipeline-micro-batches is the head's (stage 0)"
	case p.Stages == 0:
		return ""
	case p.Stages < 2:
		return fmt.Sprintf("--pipeline-stages %d: want at least 2", p.Stages)
	case p.Stage < 0 || p.Stage >= p.Stages:
		return fmt.Sprintf("--pipeline-stage %d: want 0 (the head) to %d", p.Stage, p.Stages-1)
	case c.Cluster.Advertise == "":
		return "--pipeline-stages needs --advertise HOST:PORT (where the other stages reach this member)"
	case c.Cluster.Name != "" && p.Head != "":
		return "--pipeline-head with --cluster: the members find the head in the cluster (leave --pipeline-head out)"
	case c.Cluster.Name != "" && (c.Cluster.Role != "" || c.Cluster.DisaggTokens != 0 || c.Cluster.DisaggAlways):
		return "--pipeline-stages with --role, --disagg-tokens or --disagg-always: a pipeline's members are its stages, not replicas"
	case p.Stage > 0 && p.Head == "" && c.Cluster.Name == "":
		return "--pipeline-stage " + strconv.Itoa(p.Stage) + " needs --pipeline-head (the head's --advertise) or --cluster (the head found in the cluster)"
	case p.Stage == 0 && p.Head != "":
		return "--pipeline-head is for stage members (--pipeline-stage 1 and up); the head is stage 0"
	case c.Runtime.Devices > 1:
		return "--pipeline-stages with --devices > 1: a pipeline is one device"
	case c.Preemption == "swap":
		return "--pipeline-stages with --preemption swap: a pipeline's KV blocks are on its members (use recompute)"
	case c.Device == backend.DeviceCUDA:
		return "--pipeline-stages runs on the CPU (--device cpu or auto)"
	case len(c.LoRA) > 0 || c.DraftModel != "":
		return "--pipeline-stages with --lora or --model-draft is not supported"
	}
	head := orDefault(p.Head, c.Cluster.Advertise)
	if c.Cluster.Name != "" {
		head = ""
	}
	if err := (cluster.StageConfig{Stage: max(p.Stage, 1), Stages: p.Stages, Head: head, Advertise: c.Cluster.Advertise, Cluster: c.Cluster}).Validate(); err != nil {
		return strings.TrimPrefix(err.Error(), "cluster: ")
	}
	return ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// pipelineHead is the head's part of serve: the model loaded as stage 0
// and the runtime's backend, the pipeline.
type pipelineHead struct {
	plan []model.Stage
	p    *cluster.Pipeline
}

// newPipelineHead plans the stages of the model at path; load options get
// stage 0.
func newPipelineHead(path string, stages int, o *model.LoadOptions) (*pipelineHead, error) {
	plan, err := model.PlanStages(path, stages)
	if err != nil {
		return nil, err
	}
	o.Stage = plan[0]
	return &pipelineHead{plan: plan}, nil
}

// backend is the runtime's NewBackend: the pipeline over m, a step cut
// into at most micro micro-batches (0: one per stage).
func (h *pipelineHead) backend(m *model.Model, stages, micro int) func(int, actors.BackendConfig) (actors.Backend, error) {
	return func(_ int, bc actors.BackendConfig) (actors.Backend, error) {
		p, err := cluster.NewPipeline(m, stages, bc)
		if err == nil && micro > 0 {
			err = p.SetMicroBatches(micro)
		}
		h.p = p
		return p, err
	}
}

// start makes the pipeline reachable at cc.Advertise (in the cluster
// cc.Name when set: the stage members find the head there) and waits for
// every stage's member (or ctx's end).
func (h *pipelineHead) start(ctx context.Context, log zerolog.Logger, system *actor.ActorSystem, rt *actors.Runtime, cc cluster.Config) error {
	var err error
	if cc.Name != "" {
		err = h.p.StartCluster(system, rt, cc, func(s string) { log.Warn().Msg(s) })
	} else {
		err = h.p.Start(system, rt, cc.Advertise)
	}
	if err != nil {
		return err
	}
	log.Info().Int("stages", len(h.plan)).Str("head", cc.Advertise).Str("cluster", cc.Name).Str("plan", fmt.Sprint(h.plan)).Msg("waiting for the pipeline's stage members")
	if err := h.p.WaitReady(ctx); err != nil {
		return err
	}
	log.Info().Int64("rss_bytes", residentBytes()).Msg("the pipeline is complete")
	return nil
}

// serveStage runs a stage member: stage c.Pipeline.Stage of the model,
// joined to the head, until ctx ends. It serves no HTTP.
func (c *serveConfig) serveStage(ctx context.Context, stdout, stderr io.Writer) error {
	log, _ := newLogger(stderr, c.LogFormat)
	spec, err := hubModelURI(ctx, c.Model, c.CacheDir, stderr) // hubmmproj.go
	if err != nil {
		return err
	}
	local, err := resolveModel(ctx, spec, c.CacheDir, stderr)
	if err != nil {
		return err
	}
	p := c.Pipeline
	plan, err := model.PlanStages(local, p.Stages)
	if err != nil {
		return err
	}
	st := plan[p.Stage]
	m, err := model.OpenWith(local, model.LoadOptions{Repack: c.Repack, Stage: st})
	if err != nil {
		return err
	}
	defer m.Close()
	system := newActorSystem()
	sm, err := cluster.StartStage(system, m, cluster.StageConfig{Stage: p.Stage, Stages: p.Stages, Head: p.Head,
		Advertise: c.Cluster.Advertise, Workers: c.Runtime.Workers, Cluster: c.Cluster, Log: func(s string) { log.Warn().Msg(s) }})
	if err != nil {
		system.Shutdown()
		return err
	}
	defer sm.Stop()
	log.Info().Int("stage", p.Stage).Str("layers", st.String()).Str("head", p.Head).Str("cluster", c.Cluster.Name).Msg("announcing this stage to the head")
	select {
	case err := <-sm.Joined():
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return nil
	}
	log.Info().Int64("rss_bytes", residentBytes()).Msg("joined the pipeline")
	fmt.Fprintf(stdout, "troupe stage %d of %d (%v) joined the pipeline at %s\n", p.Stage, p.Stages, st, sm.Head())
	<-ctx.Done()
	log.Info().Msg("stopped")
	return nil
}

// residentBytes is this process's resident memory (Rss of
// /proc/self/smaps_rollup); 0 where that cannot be read.
func residentBytes() int64 {
	return smapsRss("/proc/self/smaps_rollup")
}

// smapsRss is the Rss line of an smaps_rollup file, in bytes; 0 where it
// cannot be read.
func smapsRss(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Rss:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
