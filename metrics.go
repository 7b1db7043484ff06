package troupe

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// registerMetrics registers on reg a collector that reads troupe's metrics
// (the "troupe:" families) from g at each scrape, and returns the function
// that takes them off. The collector is unchecked (its families are known
// only when gathered), and a registry cannot unregister those: once taken
// off, it stays registered and collects nothing.
func registerMetrics(reg prometheus.Registerer, g prometheus.Gatherer) (func(), error) {
	c := &bridge{g: g}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("troupe: registering the metrics: %w", err)
	}
	return func() { c.off.Store(true) }, nil
}

// bridge is an unchecked collector (it describes nothing ahead) over a
// gatherer's troupe: families; off, it collects nothing.
type bridge struct {
	g   prometheus.Gatherer
	off atomic.Bool
}

// Describe sends nothing: the families are known only when gathered.
func (b *bridge) Describe(chan<- *prometheus.Desc) {}

// Collect gathers the troupe: families and sends each sample on.
func (b *bridge) Collect(ch chan<- prometheus.Metric) {
	if b.off.Load() {
		return
	}
	mfs, err := b.g.Gather()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("troupe:gather_error", "troupe's metrics could not be read.", nil, nil), err)
		return
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "troupe:") {
			continue
		}
		for _, m := range mf.Metric {
			names := make([]string, 0, len(m.Label))
			for _, l := range m.Label {
				names = append(names, l.GetName())
			}
			desc := prometheus.NewDesc(mf.GetName(), mf.GetHelp(), names, nil)
			ch <- &sample{desc: desc, m: m}
		}
	}
}

// sample is one gathered metric, passed on as it was read.
type sample struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

func (s *sample) Desc() *prometheus.Desc { return s.desc }

// Write copies the sample into out.
func (s *sample) Write(out *dto.Metric) error {
	out.Label = s.m.Label
	out.Counter, out.Gauge, out.Histogram = s.m.Counter, s.m.Gauge, s.m.Histogram
	out.Summary, out.Untyped, out.TimestampMs = s.m.Summary, s.m.Untyped, s.m.TimestampMs
	return nil
}
