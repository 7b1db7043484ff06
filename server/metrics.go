package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/cluster"
	"github.com/troupe-llm/troupe/messages"
)

// metrics are the server's Prometheus metrics, named after vLLM's with the
// troupe: prefix so dashboards carry over, all labelled by model_name. The
// scheduler's gauges and counters are read from the runtime at scrape time;
// latencies and token counts are observed by the handlers.
type metrics struct {
	reg    *prometheus.Registry
	rt     *actors.Runtime
	system *actor.ActorSystem
	model  string

	promptTokens, generationTokens prometheus.Counter
	preempted                      prometheus.Counter     // finished requests with a preempted choice
	success                        *prometheus.CounterVec // by finished_reason
	rejectedTotal                  *prometheus.CounterVec // by status code
	ttft, itl, e2e, queue          prometheus.Observer

	scraped    []scraped        // read at scrape time, the cluster's only with one
	specPerPos *prometheus.Desc // by position
	cluster    *cluster.Node    // nil: none
	placements *prometheus.Desc // by where
}

func newMetrics(model string, system *actor.ActorSystem, rt *actors.Runtime, cl *cluster.Node) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), rt: rt, system: system, model: model, cluster: cl}
	labels := prometheus.Labels{"model_name": model}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "troupe:" + name, Help: help, ConstLabels: labels})
		m.reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64) prometheus.Observer {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "troupe:" + name, Help: help, ConstLabels: labels, Buckets: buckets})
		m.reg.MustRegister(h)
		return h
	}
	m.promptTokens = counter("prompt_tokens_total", "Prefill tokens processed.")
	m.generationTokens = counter("generation_tokens_total", "Generation tokens processed.")
	m.preempted = counter("request_preempted_total", "Finished requests of which a choice was preempted at least once (usage.preemptions > 0).")
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "troupe:request_success_total",
		Help: "Finished requests, by finish reason.", ConstLabels: labels}, []string{"finished_reason"})
	m.rejectedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "troupe:request_rejected_total",
		Help: "Requests turned away before they ran, by HTTP status.", ConstLabels: labels}, []string{"status"})
	m.reg.MustRegister(m.success, m.rejectedTotal)
	latency := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	m.ttft = hist("time_to_first_token_seconds", "Time to first token.", latency)
	m.itl = hist("inter_token_latency_seconds", "Time between tokens of a choice.",
		[]float64{0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5})
	m.e2e = hist("e2e_request_latency_seconds", "End-to-end request latency.", latency)
	m.queue = hist("request_queue_time_seconds", "Time a sequence waited in the scheduler's queue before it first ran.", latency)

	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("troupe:"+name, help, nil, labels)
	}
	add := func(kind prometheus.ValueType) func(name, help string, read func(*scrape) float64) {
		return func(name, help string, read func(*scrape) float64) {
			m.scraped = append(m.scraped, scraped{desc(name, help), kind, read})
		}
	}
	gauge, count := add(prometheus.GaugeValue), add(prometheus.CounterValue)
	gauge("num_requests_running", "Sequences in the running set.", func(s *scrape) float64 { return float64(s.st.Running) })
	gauge("num_requests_waiting", "Sequences waiting to be scheduled.", func(s *scrape) float64 { return float64(s.st.Waiting) })
	gauge("num_requests_swapped", "Sequences swapped out to the host tier.", func(s *scrape) float64 { return float64(s.st.Swapped) })
	gauge("kv_cache_usage_perc", "Fraction of KV blocks held by sequences (1 = full).", func(s *scrape) float64 { return s.st.KVCacheUsage })
	gauge("kv_cache_free_blocks", "KV blocks no sequence holds (cached prefixes included).", func(s *scrape) float64 { return float64(s.st.NumFreeBlocks) })
	count("prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", func(s *scrape) float64 { return float64(s.st.PrefixQueries) })
	count("prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", func(s *scrape) float64 { return float64(s.st.PrefixHits) })
	count("num_preemptions_total", "Sequences preempted.", func(s *scrape) float64 { return float64(s.st.Preemptions) })
	count("spec_decode_num_drafts_total", "Speculative drafts verified (vLLM's spec_decode_num_drafts).", func(s *scrape) float64 { return float64(s.st.SpecDrafts) })
	count("spec_decode_num_draft_tokens_total", "Draft tokens verified.", func(s *scrape) float64 { return float64(s.st.SpecDraftTokens) })
	count("spec_decode_num_accepted_tokens_total", "Draft tokens accepted.", func(s *scrape) float64 { return float64(s.st.SpecAcceptedTokens) })
	m.specPerPos = prometheus.NewDesc("troupe:spec_decode_num_accepted_tokens_per_pos", "Drafts whose token at position was accepted.", []string{"position"}, labels)
	count("kv_window_freed_blocks_total", "KV blocks freed behind a sliding window every layer uses (0 unless all layers are windowed).",
		func(s *scrape) float64 { return float64(s.st.WindowFreedBlocks) })
	gauge("actor_processes", "Actors and futures registered in the actor system (back to its idle level when no request runs).",
		func(s *scrape) float64 { return float64(s.processes) })
	if cl != nil {
		gauge("cluster_members", "Nodes in the cluster, as this node sees it.", func(s *scrape) float64 { return float64(s.cs.Members) })
		gauge("cluster_members_reporting", "Nodes whose load this node has heard by gossip, itself included: placement weighs only these.",
			func(s *scrape) float64 { return float64(s.cs.Reporting) })
		m.placements = prometheus.NewDesc("troupe:cluster_placements_total", "Requests this node placed, by where they ran (local: this node).",
			[]string{"where"}, labels)
		count("cluster_overflows_total", "Requests placed away from their prefix's node because it was busier.", func(s *scrape) float64 { return float64(s.cs.Overflowed) })
		count("cluster_failovers_total", "Requests re-run on another node after theirs was lost.", func(s *scrape) float64 { return float64(s.cs.Failovers) })
		count("cluster_disaggregated_total", "Requests this node placed with their prompt computed on a prefill member.",
			func(s *scrape) float64 { return float64(s.ds.Disaggregated) })
		count("cluster_kv_transfer_failed_total", "Disaggregated requests whose K/V transfer failed (the decode member computed the rest).",
			func(s *scrape) float64 { return float64(s.ds.TransferFailed) })
		count("cluster_kv_bytes_sent_total", "Bytes of K/V blocks this node sent to decode members.", func(s *scrape) float64 { return float64(s.ds.BytesSent) })
	}
	m.reg.MustRegister(m)
	// The Go runtime's and the process's own (go_goroutines, go_memstats_*,
	// process_resident_memory_bytes, ...), as every Go exporter has.
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// scraped is a metric without labels of its own, read at scrape time.
type scraped struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	read func(*scrape) float64
}

// scrape is what one scrape reads: the runtime's stats, the actor
// system's processes, and the cluster's figures (zero without one).
type scrape struct {
	st        *messages.Stats
	processes int
	cs        cluster.Stats
	ds        cluster.DisaggStats
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range m.scraped {
		ch <- s.desc
	}
	ch <- m.specPerPos
	if m.cluster != nil {
		ch <- m.placements
	}
}

// Collect reads the scheduler's state from the runtime.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st, err := m.rt.Stats(2 * time.Second)
	if err != nil {
		return
	}
	s := &scrape{st: st}
	for _, pids := range m.system.ProcessRegistry.LocalPIDs.LocalPIDs {
		s.processes += pids.Count()
	}
	if m.cluster != nil {
		s.cs, s.ds = m.cluster.Stats(), m.cluster.DisaggStats()
		ch <- prometheus.MustNewConstMetric(m.placements, prometheus.CounterValue, float64(s.cs.PlacedLocal), "local")
		ch <- prometheus.MustNewConstMetric(m.placements, prometheus.CounterValue, float64(s.cs.PlacedRemote), "remote")
	}
	for _, sc := range m.scraped {
		ch <- prometheus.MustNewConstMetric(sc.desc, sc.kind, sc.read(s))
	}
	for i, n := range st.SpecAcceptedPerPos {
		ch <- prometheus.MustNewConstMetric(m.specPerPos, prometheus.CounterValue, float64(n), strconv.Itoa(i))
	}
}

func (m *metrics) handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

func (m *metrics) rejected(status int) { m.rejectedTotal.WithLabelValues(strconv.Itoa(status)).Inc() }
