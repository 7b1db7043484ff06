package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The parts of Hugging Face's tokenizer.json and tokenizer_config.json that
// FromHFFiles reads.

type hfTokenizer struct {
	AddedTokens   []hfAddedToken `json:"added_tokens"`
	Normalizer    *hfComponent   `json:"normalizer"`
	PreTokenizer  *hfComponent   `json:"pre_tokenizer"`
	PostProcessor *hfComponent   `json:"post_processor"`
	Decoder       *hfComponent   `json:"decoder"`
	Model         struct {
		Type         string           `json:"type"`
		Vocab        map[string]int32 `json:"vocab"`
		Merges       json.RawMessage  `json:"merges"`
		ByteFallback bool             `json:"byte_fallback"`
		IgnoreMerges bool             `json:"ignore_merges"`
	} `json:"model"`
}

type hfAddedToken struct {
	ID      int32  `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
	LStrip  bool   `json:"lstrip"`
	RStrip  bool   `json:"rstrip"`
}

// hfComponent is any normalizer, pre-tokenizer, post-processor or decoder;
// Sequence types nest their parts in one of the lists.
type hfComponent struct {
	Type          string        `json:"type"`
	Normalizers   []hfComponent `json:"normalizers"`
	Pretokenizers []hfComponent `json:"pretokenizers"`
	Processors    []hfComponent `json:"processors"`
	Decoders      []hfComponent `json:"decoders"`
	Pattern       struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior         string            `json:"behavior"`
	Invert           bool              `json:"invert"`
	UseRegex         *bool             `json:"use_regex"`
	IndividualDigits bool              `json:"individual_digits"`
	Single           []hfTemplateEntry `json:"single"`
}

type hfTemplateEntry struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
}

// flatten lists c and the parts of its Sequences, depth first.
func (c *hfComponent) flatten() []*hfComponent {
	if c == nil {
		return nil
	}
	out := []*hfComponent{c}
	for _, list := range [][]hfComponent{c.Normalizers, c.Pretokenizers, c.Processors, c.Decoders} {
		for i := range list {
			out = append(out, list[i].flatten()...)
		}
	}
	return out
}

// has reports whether c or one of its parts is of type typ.
func (c *hfComponent) has(typ string) bool {
	for _, p := range c.flatten() {
		if p.Type == typ {
			return true
		}
	}
	return false
}

// hfConfig is tokenizer_config.json; token entries are strings or
// {"content": ...} objects, chat_template a string or a list of
// {"name", "template"}.
type hfConfig struct {
	AddBOS       *bool                      `json:"add_bos_token"`
	AddEOS       *bool                      `json:"add_eos_token"`
	ChatTemplate json.RawMessage            `json:"chat_template"`
	Additional   []json.RawMessage          `json:"additional_special_tokens"`
	Tokens       map[string]json.RawMessage `json:"-"`
}

func parseHFConfig(data []byte) (*hfConfig, error) {
	c := &hfConfig{}
	if data == nil {
		return c, nil
	}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	if err := json.Unmarshal(data, &c.Tokens); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	return c, nil
}

// token returns the text of the "<typ>_token" entry, "" when unset.
func (c *hfConfig) token(typ string) string {
	return hfTokenText(c.Tokens[typ+"_token"])
}

func hfTokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return ""
}

// chatTemplate returns the template, or the one named "default" of a list.
func (c *hfConfig) chatTemplate() string {
	var s string
	if json.Unmarshal(c.ChatTemplate, &s) == nil {
		return s
	}
	var list []struct{ Name, Template string }
	if json.Unmarshal(c.ChatTemplate, &list) == nil {
		for _, t := range list {
			if t.Name == "default" {
				return t.Template
			}
		}
	}
	return ""
}

// hfMerges turns merges in either format ("a b", or ["a", "b"] since
// transformers 4.45) into "a b" strings; a space inside a pair's half is
// written U+0120, as gguf-py does.
func hfMerges(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var out []string
	if json.Unmarshal(raw, &out) == nil {
		return out, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("tokenizer.json: merges are neither strings nor pairs of strings: %w", err)
	}
	out = make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = strings.ReplaceAll(p[0], " ", "\u0120") + " " + strings.ReplaceAll(p[1], " ", "\u0120")
	}
	return out, nil
}
