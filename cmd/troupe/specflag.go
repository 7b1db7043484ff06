package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/model"
)

// errNoHead is the answer to llama.cpp's speculative types that need a
// head troupe does not read.
var errNoHead = errors.New("EAGLE-3, MTP and DFlash heads are not supported (troupe has ngram-simple and draft-simple)")

// specVar defines the speculative-decoding flags on fs (llama-server's
// names, and vLLM's --speculative-config), writing into c. What troupe
// cannot do (EAGLE-3, MTP) is a usage error naming the flag. The draft
// model's file goes to draftPath (opened by openDraft).
func specVar(fs *flag.FlagSet, c *actors.SpecConfig, draftPath *string) {
	fs.Func("spec-type", "speculative decoding: `type` none, ngram-simple (prompt lookup) or draft-simple (a draft model's greedy drafts, with --model-draft; llama-server's --spec-type) (default none; draft-simple with --model-draft)",
		func(s string) error {
			t, err := parseSpecType(s)
			c.Type = t
			return err
		})
	fs.IntVar(&c.DraftMax, "draft-max", 0, fmt.Sprintf("most draft tokens verified per step, with --spec-type (0: 8; at most %d)", actors.MaxDraftTokens))
	fs.IntVar(&c.DraftMin, "draft-min", 0, "fewest draft tokens a proposal has, else none is made, with --spec-type (0: 1)")
	fs.IntVar(&c.MaxSeqs, "spec-max-seqs", 0, "drafts are verified only while at most this many sequences run on a device (0: 4; -1: at any batch size)")
	fs.Func("draft-p-min", "the draft model stops drafting at a token whose probability is below `P` (llama-server's; with --model-draft) (default 0: never)",
		func(s string) error {
			v, err := strconv.ParseFloat(s, 32)
			if err != nil || v < 0 || v > 1 {
				return errors.New("want a probability in [0, 1]")
			}
			c.DraftPMin = float32(v)
			return nil
		})
	fs.StringVar(draftPath, "model-draft", "", "draft model `FILE` (GGUF, the model's vocabulary; llama-server's --model-draft/-md): --spec-type draft-simple")
	fs.StringVar(draftPath, "md", "", "draft model `FILE`: --model-draft")
	fs.Func("speculative-config", `vLLM's speculative decoding `+"`JSON`"+`: {"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_min": N, "prompt_lookup_max": N}`,
		func(s string) error { return parseSpeculativeConfig(s, c) })
}

// parseSpecType maps a --spec-type to the runtime's proposer.
func parseSpecType(s string) (string, error) {
	switch s {
	case "none", "":
		return actors.SpecNone, nil
	case "ngram-simple", "ngram":
		return actors.SpecNGram, nil
	case "draft-simple", "draft":
		return actors.SpecDraft, nil
	case "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark":
		return "", errNoHead
	case "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache":
		return "", fmt.Errorf("llama.cpp's %s is not supported (troupe has ngram-simple)", s)
	}
	return "", errors.New("want none, ngram-simple or draft-simple")
}

// parseSpeculativeConfig reads vLLM's --speculative-config JSON into c; a
// method other than ngram, or a key troupe does not know, is an error
// naming it.
func parseSpeculativeConfig(s string, c *actors.SpecConfig) error {
	var v struct {
		Method    string `json:"method"`
		K         *int   `json:"num_speculative_tokens"`
		LookupMin *int   `json:"prompt_lookup_min"`
		LookupMax *int   `json:"prompt_lookup_max"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not a speculative config troupe reads: %v", err)
	}
	if v.Method != "ngram" {
		return fmt.Errorf("method %q is not supported (troupe has ngram)", v.Method)
	}
	c.Type = actors.SpecNGram
	for _, f := range []struct {
		p    *int
		dst  *int
		name string
	}{{v.K, &c.DraftMax, "num_speculative_tokens"}, {v.LookupMin, &c.NGram.MinN, "prompt_lookup_min"}, {v.LookupMax, &c.NGram.MaxN, "prompt_lookup_max"}} {
		if f.p == nil {
			continue
		}
		if *f.p < 1 || *f.p > actors.MaxDraftTokens {
			return fmt.Errorf("%s %d is outside [1, %d]", f.name, *f.p, actors.MaxDraftTokens)
		}
		*f.dst = *f.p
	}
	if c.NGram.MinN > 0 && c.NGram.MaxN > 0 && c.NGram.MinN > c.NGram.MaxN {
		return fmt.Errorf("prompt_lookup_min %d is more than prompt_lookup_max %d", c.NGram.MinN, c.NGram.MaxN)
	}
	return nil
}

// checkSpec reports the first speculative setting that cannot work, in
// the flags' words. A draft model without --spec-type sets draft-simple,
// as llama-server's -md does.
func checkSpec(c *actors.SpecConfig, draftPath string) error {
	if draftPath != "" && !c.On() {
		c.Type = actors.SpecDraft
	}
	on, most := c.On(), c.DraftMax
	if most == 0 {
		most = 8 // the runtime's default
	}
	switch {
	case c.DraftMax < 0 || c.DraftMax > actors.MaxDraftTokens:
		return fmt.Errorf("--draft-max %d is outside [0, %d]", c.DraftMax, actors.MaxDraftTokens)
	case c.DraftMin < 0 || c.DraftMin > actors.MaxDraftTokens:
		return fmt.Errorf("--draft-min %d is outside [0, %d]", c.DraftMin, actors.MaxDraftTokens)
	case c.DraftMin > most:
		return fmt.Errorf("--draft-min %d is more than --draft-max %d", c.DraftMin, most)
	case c.MaxSeqs < -1:
		return fmt.Errorf("--spec-max-seqs %d: want -1 or more", c.MaxSeqs)
	case !on && (c.DraftMax != 0 || c.DraftMin != 0 || c.MaxSeqs != 0):
		return errors.New("--draft-max, --draft-min and --spec-max-seqs need --spec-type ngram-simple or --model-draft")
	case c.Type == actors.SpecDraft && draftPath == "":
		return errors.New("--spec-type draft-simple needs --model-draft FILE")
	case c.Type != actors.SpecDraft && draftPath != "":
		return fmt.Errorf("--model-draft: a draft model needs --spec-type draft-simple (not %s)", c.Type)
	case c.Type != actors.SpecDraft && c.DraftPMin != 0:
		return errors.New("--draft-p-min needs a draft model (--model-draft)")
	}
	return nil
}

// openDraft opens the draft model at path, if any, for a runtime on
// device kind (auto, cpu or cuda; as the model's), and sets it in c. The
// returned function closes it, after the runtime stops.
func openDraft(c *actors.SpecConfig, path, kind string, r model.Repack) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	d, err := openModelWith(path, r)
	if err != nil {
		return nil, fmt.Errorf("--model-draft: %w", err)
	}
	c.DraftModel, c.NewDraftBackend = d, backend.For(d, kind)
	return func() { d.Close() }, nil
}
