package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SLO is a service-level objective of goodput: a request meets it when its
// Metric ("ttft", "tpot" or "e2el") is at most Limit.
type SLO struct {
	Metric string
	Limit  time.Duration
}

func (s SLO) validate() error {
	switch {
	case s.Metric != "ttft" && s.Metric != "tpot" && s.Metric != "e2el":
		return fmt.Errorf("bench: goodput metric %q: want ttft, tpot or e2el", s.Metric)
	case s.Limit <= 0:
		return fmt.Errorf("bench: goodput %s limit %v: want a positive time", s.Metric, s.Limit)
	}
	return nil
}

// met reports whether r meets s.
func (s SLO) met(r *RequestResult) bool {
	switch s.Metric {
	case "ttft":
		return r.TTFT <= s.Limit
	case "tpot":
		return r.TPOT() <= s.Limit
	default:
		return r.Latency <= s.Limit
	}
}

// ParseGoodput parses objectives written as vllm bench serve's --goodput
// takes them, METRIC:MILLISECONDS, separated by commas or spaces:
// "ttft:300,tpot:50,e2el:2000".
func ParseGoodput(s string) ([]SLO, error) {
	var slos []SLO
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		name, ms, ok := strings.Cut(f, ":")
		v, err := strconv.ParseFloat(ms, 64)
		if !ok || err != nil || !(v > 0) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("bench: goodput %q: want METRIC:MS with a positive number of milliseconds", f)
		}
		slo := SLO{Metric: strings.ToLower(name), Limit: time.Duration(v * float64(time.Millisecond))}
		if err := slo.validate(); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(slos, func(o SLO) bool { return o.Metric == slo.Metric }) {
			return nil, fmt.Errorf("bench: goodput metric %q given twice", slo.Metric)
		}
		slos = append(slos, slo)
	}
	if len(slos) == 0 {
		return nil, fmt.Errorf("bench: goodput %q: no objective", s)
	}
	return slos, nil
}

// LatencyStats summarizes one latency over the successful requests, in
// milliseconds (0 when there was none).
type LatencyStats struct {
	N                      int // samples
	Mean, Std, Median, P99 float64
}

// latencyStats summarizes ds, with percentiles interpolated linearly
// between the closest ranks (numpy's default, which vLLM uses).
func latencyStats(ds []time.Duration) LatencyStats {
	if len(ds) == 0 {
		return LatencyStats{}
	}
	ms := make([]float64, len(ds))
	sum := 0.0
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
		sum += ms[i]
	}
	slices.Sort(ms)
	mean := sum / float64(len(ms))
	variance := 0.0
	for _, v := range ms {
		variance += float64((v - mean) * (v - mean)) // explicit conversion: no fused multiply-add, as amd64 computes it
	}
	return LatencyStats{N: len(ms), Mean: mean, Std: math.Sqrt(variance / float64(len(ms))),
		Median: percentile(ms, 50), P99: percentile(ms, 99)}
}

// percentile is the p-th percentile of sorted, interpolating linearly.
func percentile(sorted []float64, p float64) float64 {
	pos := float64(p / 100 * float64(len(sorted)-1))
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + float64((sorted[hi]-sorted[lo])*(pos-float64(lo))) // explicit conversion: no fused multiply-add, as amd64 computes it
}

// summarize makes the report of a run that took duration.
func summarize(results []RequestResult, duration time.Duration, slos []SLO) *ServeReport {
	r := &ServeReport{Duration: duration, Goodput: slos, Requests: results}
	var ttft, tpot, itl, e2el []time.Duration
	for i := range results {
		res := &results[i]
		switch {
		case !res.Sent || res.Cancelled:
			r.Unfinished++
			continue
		case res.Err != nil:
			if r.Failed == 0 {
				r.FirstError = fmt.Sprintf("request %d: %v", i, res.Err)
			}
			r.Failed++
			continue
		}
		r.Completed++
		r.TotalInputTokens += res.PromptTokens
		r.TotalOutputTokens += res.OutputTokens
		if !res.Usage {
			r.NoUsage++
		}
		if res.OutputTokens < res.MaxTokens {
			r.ShortOutputs++
		}
		if res.Chunks > 0 {
			ttft = append(ttft, res.TTFT)
		}
		if res.OutputTokens > 1 {
			tpot = append(tpot, res.TPOT())
		}
		itl = append(itl, res.ITL...)
		e2el = append(e2el, res.Latency)
		if len(slos) > 0 && !slices.ContainsFunc(slos, func(s SLO) bool { return !s.met(res) }) {
			r.GoodRequests++
		}
	}
	r.Interrupted = r.Unfinished > 0
	r.TTFT, r.TPOT, r.ITL, r.E2EL = latencyStats(ttft), latencyStats(tpot), latencyStats(itl), latencyStats(e2el)
	if s := duration.Seconds(); s > 0 {
		r.RequestThroughput = float64(r.Completed) / s
		r.RequestGoodput = float64(r.GoodRequests) / s
		r.OutputThroughput = float64(r.TotalOutputTokens) / s
		r.TotalTokenThroughput = float64(r.TotalInputTokens+r.TotalOutputTokens) / s
	}
	return r
}
