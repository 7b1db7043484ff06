package server

import (
	"strings"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// Fill-in-the-middle prompts, built as llama-server's format_prompt_infill
// (tools/server/server-common.cpp) builds them, in the repo-level pattern
// when the vocabulary has the repo and file-separator tokens:
//
//	[FIM_REP]myproject\n
//	[FIM_SEP]filename0\n extra chunk 0
//	...
//	[FIM_SEP]filename\n
//	[BOS][FIM_PRE]prefix prompt[FIM_SUF]suffix[FIM_MID]
//
// Without FIM_SEP, each extra chunk follows a "\n\n--- snippet ---\n\n"
// separator. The prefix keeps its last 3/4 of a 2048-token batch, the suffix
// its first quarter less the prompt, and the extra chunks what the context
// leaves after a batch (llama-server's defaults: n_batch 2048, n_predict -1).
const (
	fimBatch    = 2048
	fimPredict  = -1
	fimRepo     = "myproject\n"
	fimFile     = "filename\n"
	fimSnippet  = "\n\n--- snippet ---\n\n"
	fimNoFile   = "tmp"
	maxFIMExtra = 1024 // input_extra chunks per request
)

// infillChunk is one of input_extra's chunks: another file's text.
type infillChunk struct {
	Filename *string `json:"filename"`
	Text     *string `json:"text"`
}

// infillInput is what a FIM prompt is made of.
type infillInput struct {
	prefix, suffix string
	extra          []infillChunk
	prompt         string // text the completion continues, after the prefix
}

// fimEncoder tokenizes text without BOS; parseSpecial turns special-token
// text into those tokens (only the prompt's, as llama-server).
type fimEncoder func(text string, parseSpecial bool) ([]int32, error)

// fimPrompt builds the token sequence for in, given the vocabulary's FIM
// tokens, the BOS token to prepend (-1: none) and the context length.
func fimPrompt(fim actors.FIMTokens, bos int32, nCtx int, enc fimEncoder, in infillInput) ([]int32, error) {
	prefix, err := enc(in.prefix, false)
	if err != nil {
		return nil, err
	}
	suffix, err := enc(in.suffix, false)
	if err != nil {
		return nil, err
	}
	prompt, err := enc(in.prompt, true)
	if err != nil {
		return nil, err
	}
	extra, err := fimExtra(fim, enc, in.extra)
	if err != nil {
		return nil, err
	}
	nPrefix := min(len(prefix), 3*(fimBatch/4))
	nSuffix := min(len(suffix), max(0, fimBatch/4-(2+len(prompt))))
	nExtra := min(max(0, nCtx-fimBatch-2*fimPredict), len(extra))

	out := make([]int32, 0, nExtra+nPrefix+nSuffix+len(prompt)+4)
	out = append(out, extra[len(extra)-nExtra:]...)
	if bos >= 0 {
		out = append(out, bos)
	}
	out = append(out, fim.Pre)
	out = append(out, prefix[len(prefix)-nPrefix:]...)
	out = append(out, prompt...)
	out = append(out, fim.Suf)
	out = append(out, suffix[:nSuffix]...)
	return append(out, fim.Mid), nil
}

// fimExtra is the extra context: the repo header and each chunk under its
// file name when the vocabulary has FIM_REP and FIM_SEP, else each chunk
// after a snippet separator.
func fimExtra(fim actors.FIMTokens, enc fimEncoder, chunks []infillChunk) ([]int32, error) {
	var out []int32
	add := func(special int32, text string) error {
		if special >= 0 {
			out = append(out, special)
		}
		ids, err := enc(text, false)
		out = append(out, ids...)
		return err
	}
	if fim.Rep >= 0 {
		if err := add(fim.Rep, fimRepo); err != nil {
			return nil, err
		}
	}
	for _, c := range chunks {
		name := fimNoFile
		if c.Filename != nil {
			name = *c.Filename
		}
		var err error
		if fim.Sep >= 0 {
			err = add(fim.Sep, name+"\n")
		} else {
			err = add(-1, fimSnippet)
		}
		if err == nil {
			err = add(-1, *c.Text)
		}
		if err != nil {
			return nil, err
		}
	}
	if fim.Sep >= 0 {
		if err := add(fim.Sep, fimFile); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// infillUnsupported is llama-server's reason a model cannot fill in the
// middle ("" when it can).
func infillUnsupported(fim actors.FIMTokens) string {
	var missing []string
	for _, t := range []struct {
		id   int32
		what string
	}{{fim.Pre, "prefix"}, {fim.Suf, "suffix"}, {fim.Mid, "middle"}} {
		if !fim.Set || t.id < 0 {
			missing = append(missing, t.what+" token is missing")
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "infill is not supported by this model (its vocabulary has no fill-in-the-middle tokens): " + strings.Join(missing, ", ")
}

// infillPrompt builds the FIM prompt of in for the served model; field names
// the request field a model without FIM tokens is refused for.
func (s *Server) infillPrompt(field string, in infillInput) ([]int32, *apiError) {
	fim := s.rt.FIMTokens()
	if why := infillUnsupported(fim); why != "" {
		return nil, badRequest(field, "%s", why)
	}
	if len(in.extra) > maxFIMExtra {
		return nil, badRequest("input_extra", "%d input_extra chunks; at most %d", len(in.extra), maxFIMExtra)
	}
	for i, c := range in.extra {
		if c.Text == nil {
			return nil, badRequest("input_extra", "input_extra[%d] must have a \"text\" string", i)
		}
	}
	enc := func(text string, parseSpecial bool) ([]int32, error) {
		return s.rt.TokenizeText(text, false, parseSpecial)
	}
	ids, err := fimPrompt(fim, s.rt.PrependsBOS(), s.rt.MaxModelLen(), enc, in)
	if err != nil {
		return nil, badRequest(field, "tokenizing the infill prompt: %v", err)
	}
	return ids, nil
}

// suffixPrompts are the FIM prompts of /v1/completions' prompts with a
// suffix: each text prompt is the prefix.
func (s *Server) suffixPrompts(ps []pipeline.Prompt, suffix string) ([][]int32, []string, *apiError) {
	for _, p := range ps {
		if p.IDs != nil {
			return nil, nil, badRequest("suffix", "suffix needs text prompts, not token ids")
		}
	}
	if len(ps) > maxPromptsPerReq {
		return nil, nil, badRequest("prompt", "at most %d prompts per request", maxPromptsPerReq)
	}
	var out [][]int32
	var texts []string
	for _, p := range ps {
		ids, e := s.infillPrompt("suffix", infillInput{prefix: p.Text, suffix: suffix})
		if e != nil {
			return nil, nil, e
		}
		out, texts = append(out, ids), append(texts, p.Text)
	}
	return out, texts, nil
}
