package server

import (
	"net/http"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// The manager's GET /metrics: every loaded model's series (each labelled
// by its model_name, as one model's server labels them), merged into one
// exposition, beside the manager's own: the models loaded, each one's
// memory as the budget counts it, the budget, the requests queued, and the Go runtime's and
// the process's series once.

// managerMetrics is the manager's own registry and the gatherer that
// merges the loaded models' registries into it.
type managerMetrics struct {
	m   *Manager
	reg *prometheus.Registry

	loaded, memory, budget, freeing, queued *prometheus.Desc
}

func newManagerMetrics(m *Manager) *managerMetrics {
	mm := &managerMetrics{m: m, reg: prometheus.NewRegistry(),
		loaded: prometheus.NewDesc("troupe:models_loaded", "Models loaded (or loading) now.", nil, nil),
		memory: prometheus.NewDesc("troupe:model_memory_bytes", "A loaded model's memory as the budget counts it: its file, KV pool and adapters.",
			[]string{"model_name"}, nil),
		budget:  prometheus.NewDesc("troupe:models_memory_budget_bytes", "--models-memory (0: no bound in bytes).", nil, nil),
		freeing: prometheus.NewDesc("troupe:models_memory_freeing_bytes", "Memory of models being unloaded now.", nil, nil),
		queued: prometheus.NewDesc("troupe:models_queue_waiting", "Requests waiting now for their model to load while the models in its way are busy (--models-queue).",
			nil, nil),
	}
	mm.reg.MustRegister(mm, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return mm
}

func (mm *managerMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mm.loaded, mm.memory, mm.budget, mm.freeing, mm.queued} {
		ch <- d
	}
}

func (mm *managerMetrics) Collect(ch chan<- prometheus.Metric) {
	m := mm.m
	m.mu.Lock()
	defer m.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(mm.loaded, prometheus.GaugeValue, float64(len(m.loaded)))
	for name, in := range m.loaded {
		ch <- prometheus.MustNewConstMetric(mm.memory, prometheus.GaugeValue, float64(in.size.Total()), name)
	}
	ch <- prometheus.MustNewConstMetric(mm.budget, prometheus.GaugeValue, float64(m.cfg.MaxBytes))
	ch <- prometheus.MustNewConstMetric(mm.freeing, prometheus.GaugeValue, float64(m.freeing))
	ch <- prometheus.MustNewConstMetric(mm.queued, prometheus.GaugeValue, float64(len(m.queue)))
}

// Gather is the manager's families and every loaded model's troupe:
// families, merged by name (each model's series keep their model_name).
func (mm *managerMetrics) Gather() ([]*dto.MetricFamily, error) {
	out, err := mm.reg.Gather()
	if err != nil {
		return nil, err
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range out {
		byName[f.GetName()] = f
	}
	m := mm.m
	m.mu.Lock()
	var servers []*Server
	for _, name := range sortedKeys(m.loaded) {
		if in := m.loaded[name]; in.srv != nil {
			servers = append(servers, in.srv)
		}
	}
	m.mu.Unlock()
	for _, s := range servers {
		fams, err := s.metrics.reg.Gather()
		if err != nil {
			continue // a model unloading as it is read: its series are left out of this scrape
		}
		for _, f := range fams {
			if !strings.HasPrefix(f.GetName(), "troupe:") {
				continue // the Go runtime's and the process's: the manager's registry has them once
			}
			if have, ok := byName[f.GetName()]; ok {
				have.Metric = append(have.Metric, f.Metric...)
			} else {
				byName[f.GetName()] = f
			}
		}
	}
	out = out[:0]
	for _, f := range byName {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// handler serves the merged exposition.
func (mm *managerMetrics) handler() http.Handler {
	return promhttp.HandlerFor(mm, promhttp.HandlerOpts{})
}
