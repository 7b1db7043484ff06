package actors

import (
	"cmp"
	"fmt"

	"github.com/troupe-llm/troupe/actors/spec"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
)

// Speculative decoding's proposer types (Config.Speculative.Type), in
// llama-server's --spec-type words.
const (
	SpecNone  = "none"         // off (also "")
	SpecNGram = "ngram-simple" // prompt lookup: actors/spec.NGram ("ngram" too, vLLM's name)
	SpecDraft = "draft-simple" // a draft model's greedy drafts (SpecConfig.DraftModel; draftrunner.go)
)

// MaxDraftTokens bounds a draft (Config.Speculative.DraftMax, a request's
// speculative.n_max).
const MaxDraftTokens = 64

// SpecConfig sets speculative decoding (see ARCHITECTURE.md): each
// decoding sequence proposes up to DraftMax tokens to follow it, and the
// step verifies them all at once. The zero value is off.
type SpecConfig struct {
	// Type is the proposer: SpecNone (""), SpecNGram or SpecDraft.
	Type string
	// DraftMax is the most draft tokens per step (llama-server's
	// --draft-max); 0: 8. DraftMin is the fewest: a shorter proposal is not
	// made (--draft-min); 0: 1.
	DraftMax, DraftMin int
	// NGram sets the n-gram proposer's suffix lengths (zero: its defaults).
	NGram spec.NGram
	// MaxSeqs: drafts are verified only while at most this many sequences
	// run on a device, past which verification costs more than it saves;
	// 0: 4, -1: no bound.
	MaxSeqs int
	// DraftModel is SpecDraft's draft model (opened with model.Open; the
	// caller closes it after the runtime stops). Its vocabulary must be the
	// model's. NewDraftBackend makes its device (as Config.NewBackend, for
	// DraftModel: actors/backend.For(draft, kind)).
	DraftModel      *model.Model
	NewDraftBackend func(device int, c BackendConfig) (Backend, error)
	// DraftPMin: the draft model stops drafting at a token whose
	// probability is below it (llama-server's --draft-p-min); 0: never.
	DraftPMin float32
}

// On reports whether c turns speculative decoding on.
func (c SpecConfig) On() bool { return c.Type != "" && c.Type != SpecNone }

func (c SpecConfig) withDefaults() SpecConfig {
	if c.Type == "ngram" {
		c.Type = SpecNGram
	}
	c.DraftMax = cmp.Or(c.DraftMax, 8)
	c.DraftMin = cmp.Or(c.DraftMin, 1)
	c.MaxSeqs = cmp.Or(c.MaxSeqs, 4)
	c.NGram = c.NGram.WithDefaults()
	return c
}

// validate reports the first impossible value of a defaulted c, on a
// runtime whose context is maxLen tokens.
func (c SpecConfig) validate(maxLen int) error {
	switch {
	case c.Type != "" && c.Type != SpecNone && c.Type != SpecNGram && c.Type != SpecDraft:
		return fmt.Errorf("actors: speculative type %q is not supported (want %s, %s or %s)", c.Type, SpecNone, SpecNGram, SpecDraft)
	case c.Type != SpecDraft && (c.DraftModel != nil || c.DraftPMin != 0):
		return fmt.Errorf("actors: a draft model and its p-min need speculative type %s", SpecDraft)
	case c.DraftPMin < 0 || c.DraftPMin > 1 || c.DraftPMin != c.DraftPMin:
		return fmt.Errorf("actors: draft p-min %v is outside [0, 1]", c.DraftPMin)
	case c.DraftMax < 1 || c.DraftMax > MaxDraftTokens:
		return fmt.Errorf("actors: draft max %d is outside [1, %d]", c.DraftMax, MaxDraftTokens)
	case c.On() && maxLen > 0 && c.DraftMax >= maxLen:
		return fmt.Errorf("actors: draft max %d is not shorter than the context (%d tokens)", c.DraftMax, maxLen)
	case c.DraftMin < 1 || c.DraftMin > c.DraftMax:
		return fmt.Errorf("actors: draft min %d is outside [1, draft max %d]", c.DraftMin, c.DraftMax)
	case c.MaxSeqs < -1:
		return fmt.Errorf("actors: speculative max seqs %d < -1", c.MaxSeqs)
	}
	return nil
}

// schedSpecMaxSeqs is sched.Config.SpecMaxSeqs for c.
func (c SpecConfig) schedSpecMaxSeqs() int { return max(c.MaxSeqs, 0) }

// checkSpeculative checks a request's speculative fields (llama-server's
// speculative.n_max, n_min, p_min) against the runtime's settings.
func (r *Runtime) checkSpeculative(p *messages.SpeculativeParams) error {
	if p == nil || p.Off {
		return nil
	}
	bad := func(param, format string, args ...any) error {
		return &RequestError{Param: param, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case !r.cfg.Speculative.On():
		return bad("speculative", "speculative decoding is off on this server (start it with --spec-type %s)", SpecNGram)
	case p.NMax < 0 || p.NMax > MaxDraftTokens:
		return bad("speculative.n_max", "speculative.n_max %d is outside [0, %d]", p.NMax, MaxDraftTokens)
	case p.NMax >= r.cfg.MaxModelLen:
		return bad("speculative.n_max", "speculative.n_max %d is not shorter than the context (%d tokens)", p.NMax, r.cfg.MaxModelLen)
	case p.NMin < 0 || p.NMin > MaxDraftTokens:
		return bad("speculative.n_min", "speculative.n_min %d is outside [0, %d]", p.NMin, MaxDraftTokens)
	case p.NMax > 0 && p.NMin > p.NMax:
		return bad("speculative.n_min", "speculative.n_min %d is more than speculative.n_max %d", p.NMin, p.NMax)
	case p.PMin != 0 && r.cfg.Speculative.Type != SpecDraft:
		return bad("speculative.p_min", "speculative.p_min applies to a draft model's proposer, and this server runs the n-gram one (no draft model)")
	case p.PMin < 0 || p.PMin > 1 || p.PMin != p.PMin:
		return bad("speculative.p_min", "speculative.p_min %v is outside [0, 1]", p.PMin)
	}
	return nil
}

// draftLimits is how many draft tokens a request's sequences propose at
// most and at least; k 0: none.
func (r *Runtime) draftLimits(req *messages.GenerateRequest) (k, least int) {
	c := r.cfg.Speculative
	if !c.On() {
		return 0, 0
	}
	k, least = c.DraftMax, c.DraftMin
	if p := req.Speculative; p != nil {
		if p.Off {
			return 0, 0
		}
		if p.NMax > 0 {
			k = p.NMax
		}
		if p.NMin > 0 {
			least = p.NMin
		}
	}
	return k, min(least, k)
}
