// Package promtest reads samples from a server's Prometheus /metrics, for
// tests.
package promtest

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Sample returns the first sample of the metric name (with or without
// labels; a name with its labels written out picks one series) that
// client's GET baseURL/metrics shows.
func Sample(client *http.Client, baseURL, name string) (float64, error) {
	resp, err := client.Get(baseURL + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			return strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s/metrics has no %s", baseURL, name)
}

// Await returns the first sample of name at baseURL/metrics (Sample), failing
// t after two minutes without one. A scrape whose read of the runtime timed
// out (a loaded machine) lacks the runtime's gauges: that is "not yet".
func Await(t testing.TB, baseURL, name string) float64 {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		v, err := Sample(http.DefaultClient, baseURL, name)
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}
