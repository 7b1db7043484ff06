package actors_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
)

// grammarCorpus is the regex, choice and GBNF part of the acceptance: each
// with the Go regexp its outputs must match whole (for GBNF, one written by
// hand for the same language).
var grammarCorpus = []struct {
	name, kind, source, match string
}{
	{"regex/ipv4ish", messages.GrammarRegex, `(\d{1,3}\.){3}\d{1,3}`, ""},
	{"regex/email", messages.GrammarRegex, `[a-z]{1,8}@[a-z]{1,8}\.(com|org|net)`, ""},
	{"regex/date", messages.GrammarRegex, `\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])`, ""},
	{"regex/words", messages.GrammarRegex, `[A-Z][a-z]{1,6}( [a-z]{1,6}){0,3}\.`, ""},
	{"regex/case-insensitive", messages.GrammarRegex, `(?i)(yes|no|maybe)`, ""},
	{"regex/unicode-letters", messages.GrammarRegex, `\p{L}{2,4}`, ""},
	{"regex/decimal", messages.GrammarRegex, `-?\d{1,5}(\.\d{1,2})?`, ""},
	{"regex/negated-class", messages.GrammarRegex, `"[^"\\\n]{1,10}"`, ""},
	{"regex/alternation-prefixes", messages.GrammarRegex, `a|ab|abc|b{1,5}c{0,2}`, ""},
	{"regex/empty-or", messages.GrammarRegex, `(x{0,3}|y)z?`, ""},
	{"choice/yes-no", messages.GrammarChoice, `["yes", "no"]`, ""},
	{"choice/sentiment", messages.GrammarChoice, `["positive", "negative", "neutral"]`, ""},
	{"choice/prefixes", messages.GrammarChoice, `["a", "ab", "abc", "b"]`, ""},
	{"choice/specials", messages.GrammarChoice, `["say \"hi\"", "new\nline", "日本語", "😀", "back\\slash"]`, ""},
	{"choice/long", messages.GrammarChoice, `["Once upon a time there was a little girl", "The end."]`, ""},
	{"gbnf/arithmetic", messages.GrammarGBNF,
		"root ::= expr\nexpr ::= term ([-+*/] term){0,3}\nterm ::= [0-9]{1,3} | \"(\" [0-9]{1,3} \")\"\n",
		`([0-9]{1,3}|\([0-9]{1,3}\))([-+*/]([0-9]{1,3}|\([0-9]{1,3}\))){0,3}`},
	{"gbnf/list", messages.GrammarGBNF,
		"root ::= \"[\" item (\", \" item){0,2} \"]\"\nitem ::= [a-z]{1,5}\n",
		`\[[a-z]{1,5}(, [a-z]{1,5}){0,2}\]`},
	{"gbnf/kv-lines", messages.GrammarGBNF,
		"root ::= line{1,3}\nline ::= key \"=\" val \"\\n\"\nkey ::= [a-z]{1,4}\nval ::= [0-9]{1,3} | \"true\" | \"false\"\n",
		`([a-z]{1,4}=([0-9]{1,3}|true|false)\n){1,3}`},
}

// TestGrammarCorpus runs each regex, choice and GBNF grammar on each shared
// model at temperature 1.0 with n=4: every finished output matches
// (regex: Go's regexp on the whole output; choice: one of the choices).
func TestGrammarCorpus(t *testing.T) {
	var jobs []corpusJob
	for _, gc := range grammarCorpus {
		check := func(string) string { return "no check" }
		switch gc.kind {
		case messages.GrammarChoice:
			var choices []string
			if err := json.Unmarshal([]byte(gc.source), &choices); err != nil {
				t.Fatal(err)
			}
			check = func(out string) string {
				if !slices.Contains(choices, out) {
					return "is none of the choices"
				}
				return ""
			}
		default:
			pat := gc.match
			if pat == "" {
				pat = gc.source
			}
			re := regexp.MustCompile(`^(?:` + pat + `)$`)
			check = func(out string) string {
				if !re.MatchString(out) {
					return "does not match " + re.String()
				}
				return ""
			}
		}
		jobs = append(jobs, corpusJob{gc.name, &messages.Grammar{Kind: gc.kind, Source: gc.source}, check, false})
	}
	for _, rel := range corpusModels {
		t.Run(strings.TrimSuffix(rel, ".gguf"), func(t *testing.T) {
			rt := start(t, openModel(t, rel), actors.Config{})
			for _, j := range jobs {
				start := time.Now()
				if err := rt.CompileGrammar(j.g); err != nil {
					t.Fatalf("%s: %v", j.name, err)
				}
				t.Logf("compile %-28s %8.3f ms", j.name, float64(time.Since(start).Microseconds())/1000)
			}
			checkCounts(t, runCorpus(t, rt, jobs), len(jobs))
		})
	}
}
