package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/server"
)

// registerSamplingDefaults defines serve's sampling flags, run's names for
// them: each is the default of the request field it names, for requests
// that leave that field out.
func registerSamplingDefaults(fs *flag.FlagSet, d *server.SamplingDefaults) {
	fs.Var(optFloat{&d.Temperature}, "temp", "default `temperature` of requests that send none (default 1, OpenAI's)")
	fs.Var(optInt{&d.TopK}, "top-k", "default `top_k` of requests that send none (default off)")
	fs.Var(optFloat{&d.TopP}, "top-p", "default `top_p` of requests that send none (default 1: off)")
	fs.Var(optFloat{&d.MinP}, "min-p", "default `min_p` of requests that send none (default 0: off)")
	fs.Var(optFloat{&d.RepetitionPenalty}, "repeat-penalty", "default `repetition_penalty` of requests that send none (default 1: off)")
	fs.Var(optInt64{&d.Seed}, "seed", "default `seed` of requests that send none (default: random; -1: random)")
}

// checkSamplingDefaults checks the defaults against the ranges the API
// allows a request's own values; a negative --seed (random, as run's)
// becomes no default.
func checkSamplingDefaults(d *server.SamplingDefaults) error {
	in := func(flag string, v *float64, lo, hi float64, openLo bool) error {
		if v != nil && !((*v > lo || !openLo && *v == lo) && *v <= hi) {
			l := "["
			if openLo {
				l = "("
			}
			return fmt.Errorf("--%s %v: want a number in %s%v, %v]", flag, *v, l, lo, hi)
		}
		return nil
	}
	if d.Seed != nil && *d.Seed < 0 {
		d.Seed = nil // -1: random, as run's
	}
	if d.TopK != nil && *d.TopK < -1 {
		return fmt.Errorf("--top-k %d: want -1 or 0 (off), or a positive number", *d.TopK)
	}
	return errors.Join(in("temp", d.Temperature, 0, 2, false), in("top-p", d.TopP, 0, 1, true), in("min-p", d.MinP, 0, 1, false),
		in("repeat-penalty", d.RepetitionPenalty, 0, 10, true))
}

// optFloat, optInt and optInt64 are flags that stay nil unless given.
type (
	optFloat struct{ p **float64 }
	optInt   struct{ p **int }
	optInt64 struct{ p **int64 }
)

func (f optFloat) String() string { return optString(f.p) }
func (f optInt) String() string   { return optString(f.p) }
func (f optInt64) String() string { return optString(f.p) }

func optString[T any](p **T) string {
	if p == nil || *p == nil {
		return ""
	}
	return fmt.Sprint(**p)
}

func (f optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("want a number")
	}
	*f.p = &v
	return nil
}

func (f optInt) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want an integer")
	}
	*f.p = &v
	return nil
}

func (f optInt64) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("want an integer")
	}
	*f.p = &v
	return nil
}

// readChatTemplate resolves --chat-template: a built-in template's name, a
// Jinja file, or Jinja text itself as llama-server and vLLM take it (a
// value with "{{" or "{%"); "" stays "": the model's own.
func readChatTemplate(spec string) (string, error) {
	if spec == "" {
		return "", nil
	}
	if strings.Contains(spec, "{{") || strings.Contains(spec, "{%") {
		return spec, nil
	}
	if src, ok := server.BuiltinTemplate(spec); ok {
		return src, nil
	}
	b, err := os.ReadFile(spec)
	if errors.Is(err, fs.ErrNotExist) && !strings.ContainsAny(spec, `/\.`) {
		return "", usageError{fmt.Sprintf("--chat-template %q: no such file, and no built-in template of that name (%s)",
			spec, strings.Join(server.BuiltinTemplateNames(), ", "))}
	}
	if err != nil {
		return "", fmt.Errorf("--chat-template: %w", err)
	}
	return string(b), nil
}

// checkModel refuses settings the model cannot serve, as usage errors
// (exit 2) before any memory is given to the KV cache: a context beyond
// the model's, a KV pool that cannot hold one full context.
func (c *serveConfig) checkModel(mc *model.Config) error {
	rc := &c.Runtime
	if rc.MaxModelLen > 0 && mc.ContextLen > 0 && rc.MaxModelLen > mc.ContextLen {
		return usageError{fmt.Sprintf("-c %d is beyond the model's context of %d tokens", rc.MaxModelLen, mc.ContextLen)}
	}
	maxLen := rc.MaxModelLen
	if maxLen == 0 {
		maxLen = mc.ContextLen
	}
	if rc.NumBlocks > 0 && rc.NumBlocks*rc.BlockSize < maxLen {
		need := (maxLen + rc.BlockSize - 1) / rc.BlockSize
		return usageError{fmt.Sprintf("--num-kv-blocks %d holds %d tokens, less than one context of %d (-c): want at least %d blocks of %d, or a smaller -c",
			rc.NumBlocks, rc.NumBlocks*rc.BlockSize, maxLen, need, rc.BlockSize)}
	}
	if c.Preemption == "recompute" && rc.NumHostBlocks > 0 {
		return usageError{"--swap-blocks needs --preemption swap"}
	}
	return nil
}
