package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ServeOptions are vllm bench serve's knobs. The zero value of each field
// but URL, NumPrompts and the lengths is a usable default.
type ServeOptions struct {
	URL      string // the server's base URL, such as http://127.0.0.1:8080 (a trailing /v1 is allowed)
	Model    string // the model field of every request; "": the first id GET /v1/models lists
	Endpoint string // "completions" (/v1/completions) or "chat" (/v1/chat/completions); "": completions
	APIKey   string // sent as "Authorization: Bearer KEY" when set

	NumPrompts     int     // requests to send
	RequestRate    float64 // mean arrivals per second, a Poisson process; 0 or +Inf: all at once
	MaxConcurrency int     // requests in flight at most; 0: no limit

	// InputLen is the words of each random prompt, drawn from a fixed list
	// of common English words that most tokenizers (stories260K's 512
	// included) encode as one token each, so it is about the prompt's
	// tokens on any server. Unused when Prompts is set.
	InputLen   int
	OutputLen  int      // max_tokens of each request
	RangeRatio float64  // in [0, 1]: lengths are uniform in [len*(1-r), len*(1+r)]
	Prompts    []string // when set, the prompts to send, in order and cycled, instead of random words
	Seed       uint64   // of the random prompts, lengths and arrival times

	// IgnoreEOS sends "ignore_eos": true so that every request generates
	// OutputLen tokens. vLLM, troupe and llama-server read it; a server
	// that holds to OpenAI's schema may reject it.
	IgnoreEOS bool
	Goodput   []SLO // the objectives a request must meet to count toward goodput

	Client *http.Client // nil: a client with a connection per concurrent request
}

// Validate reports the first impossible option.
func (o ServeOptions) Validate() error {
	u, err := url.Parse(o.URL)
	switch {
	case o.URL == "":
		return errors.New("bench: no server URL")
	case err != nil:
		return fmt.Errorf("bench: server URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("bench: server URL %q: want http://HOST[:PORT] or https://...", o.URL)
	case o.Endpoint != "" && o.Endpoint != "completions" && o.Endpoint != "chat":
		return fmt.Errorf("bench: endpoint %q: want completions or chat", o.Endpoint)
	case o.NumPrompts < 1:
		return fmt.Errorf("bench: %d prompts: want at least 1", o.NumPrompts)
	case math.IsNaN(o.RequestRate) || o.RequestRate < 0:
		return fmt.Errorf("bench: request rate %v: want a positive number of requests per second, or +Inf", o.RequestRate)
	case o.MaxConcurrency < 0:
		return fmt.Errorf("bench: max concurrency %d < 0", o.MaxConcurrency)
	case len(o.Prompts) == 0 && o.InputLen < 1:
		return fmt.Errorf("bench: input length %d: want at least 1 word", o.InputLen)
	case o.OutputLen < 1:
		return fmt.Errorf("bench: output length %d: want at least 1 token", o.OutputLen)
	case !(o.RangeRatio >= 0 && o.RangeRatio <= 1):
		return fmt.Errorf("bench: range ratio %v is outside [0, 1]", o.RangeRatio)
	}
	for _, p := range o.Prompts {
		if strings.TrimSpace(p) == "" {
			return errors.New("bench: an empty prompt")
		}
	}
	for _, s := range o.Goodput {
		if err := s.validate(); err != nil {
			return err
		}
	}
	return nil
}

// baseURL is the server's URL without a trailing slash or /v1.
func (o ServeOptions) baseURL() string {
	return strings.TrimSuffix(strings.TrimRight(o.URL, "/"), "/v1")
}

// Serve measures an OpenAI-compatible server as vllm bench serve does. It
// sends o.NumPrompts streaming requests (stream_options.include_usage,
// temperature 0, max_tokens the output length), each at its arrival time
// (all at once, or a Poisson process of o.RequestRate per second) and once
// fewer than o.MaxConcurrency are in flight, and times each one as its
// client sees it: the first content (TTFT), the gaps between content
// chunks (ITL) and the end of the stream (E2EL). The clock of a request
// starts when it is sent, not when it arrives, as in vLLM.
//
// A request that gets an HTTP error, an error event, a broken stream or a
// stream without "data: [DONE]" fails; failures are counted, not returned.
// When ctx ends, Serve stops sending, cancels the requests in flight and
// reports what finished before (Interrupted). The error is for options and
// for a model that could not be looked up.
//
// Serve may be called concurrently, but overlapping runs load the same
// server and disturb each other's timings.
func Serve(ctx context.Context, o ServeOptions) (*ServeReport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	client := o.Client
	if client == nil {
		conns := o.MaxConcurrency
		if conns == 0 {
			conns = o.NumPrompts
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 0, min(conns, 1024)
		defer t.CloseIdleConnections()
		client = &http.Client{Transport: t}
	}
	c := &serveClient{http: client, base: o.baseURL(), model: o.Model, apiKey: o.APIKey, chat: o.Endpoint == "chat", ignoreEOS: o.IgnoreEOS}
	if c.model == "" {
		m, err := c.firstModel(ctx)
		if err != nil {
			return nil, fmt.Errorf("bench: no model given, and GET %s/v1/models: %w", c.base, err)
		}
		c.model = m
	}
	reqs := o.requests()
	results := make([]RequestResult, len(reqs))
	start := time.Now()
	sendAll(ctx, o, reqs, func(i int) { results[i] = c.do(ctx, reqs[i]) })
	r := summarize(results, time.Since(start), o.Goodput)
	r.URL, r.Endpoint, r.Model = c.endpointURL(), c.endpoint(), c.model
	r.NumPrompts, r.RequestRate, r.MaxConcurrency, r.OutputLen = o.NumPrompts, o.RequestRate, o.MaxConcurrency, o.OutputLen
	if r.RequestRate == 0 {
		r.RequestRate = math.Inf(1)
	}
	return r, nil
}

// sendAll calls send(i) in a goroutine of its own for each request, at its
// arrival time and within the concurrency limit, and waits for them all.
// When ctx ends it sends no more.
func sendAll(ctx context.Context, o ServeOptions, reqs []serveRequest, send func(i int)) {
	arrivals := rand.New(rand.NewPCG(o.Seed, 2)) // a stream apart from the prompts'
	var slots chan struct{}
	if o.MaxConcurrency > 0 {
		slots = make(chan struct{}, o.MaxConcurrency)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	next := time.Now()
	for i := range reqs {
		if i > 0 && o.RequestRate > 0 && !math.IsInf(o.RequestRate, 1) {
			// Poisson arrivals: exponential gaps of mean 1/rate, on a
			// schedule that a full concurrency limit does not shift.
			next = next.Add(time.Duration(arrivals.ExpFloat64() / o.RequestRate * float64(time.Second)))
			if !sleepUntil(ctx, next) {
				return
			}
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if slots != nil {
				defer func() { <-slots }()
			}
			send(i)
		}()
	}
}

// sleepUntil waits for t, and reports false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// firstModel returns the first model id the server lists.
func (c *serveClient) firstModel(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/models", nil)
	if err != nil {
		return "", err
	}
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", httpError(resp)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return "", fmt.Errorf("decoding the list: %w", err)
	}
	if len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", errors.New("the server lists no model")
	}
	return list.Data[0].ID, nil
}
