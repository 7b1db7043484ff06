package actors_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/troupe-llm/troupe/grammar"
)

// schemaCase is one JSON Schema of the structured-output corpus.
type schemaCase struct {
	name   string
	source string
	draft  *jsonschema.Draft // the validator's draft for a schema without $schema
}

// suiteSample is how many schemas of the JSON Schema Test Suite the corpus
// takes, spread evenly over those the compiler accepts.
const suiteSample = 30

// schemaSuiteDir is where scripts/testdata-schemas.sh installs the JSON
// Schema Test Suite (Debian's json-schema-test-suite, MIT).
func schemaSuiteDir() string {
	if d := os.Getenv("TROUPE_SCHEMA_SUITE"); d != "" {
		return d
	}
	return "/usr/share/json-schema-test-suite"
}

// ownSchemas reads testdata/schemas: schemas written for these tests, each
// bounded (maxLength, maxItems, ranges) so that a tiny model finishes them.
func ownSchemas(t testing.TB) []schemaCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "schemas", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in testdata/schemas: %v", err)
	}
	var cases []schemaCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, schemaCase{strings.TrimSuffix(filepath.Base(f), ".json"), string(b), jsonschema.Draft2020})
	}
	return cases
}

// suiteReport counts what the compiler made of the suite's schemas.
type suiteReport struct {
	total, compiled, unsupported, tooComplex int
	other                                    map[string]string // other errors, by schema name
}

// suiteSchemas reads the draft 6 and draft 7 schemas of the JSON Schema Test
// Suite (its optional format tests included) and returns an even sample of
// those the compiler accepts, with counts of the ones it refused. Without
// the suite it ends the test under CI and returns nil elsewhere.
func suiteSchemas(t testing.TB) ([]schemaCase, suiteReport) {
	t.Helper()
	rep := suiteReport{other: map[string]string{}}
	dir := schemaSuiteDir()
	var files []string
	for _, pat := range []string{"draft6/*.json", "draft7/*.json", "draft7/optional/format/*.json"} {
		fs, _ := filepath.Glob(filepath.Join(dir, "tests", pat))
		files = append(files, fs...)
	}
	if len(files) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the JSON Schema Test Suite is not in %s (run scripts/testdata-schemas.sh)", dir)
		}
		t.Logf("the JSON Schema Test Suite is not in %s (run scripts/testdata-schemas.sh): own schemas only", dir)
		return nil, rep
	}
	var ok []schemaCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var groups []struct {
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(b, &groups); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		draft := jsonschema.Draft7
		if strings.Contains(f, "draft6") {
			draft = jsonschema.Draft6
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "tests"), f)
		for i, g := range groups {
			rep.total++
			name := fmt.Sprintf("suite/%s#%d", strings.TrimSuffix(rel, ".json"), i)
			_, err := grammar.FromJSONSchema(g.Schema)
			var ue *grammar.UnsupportedError
			switch {
			case err == nil:
				rep.compiled++
				ok = append(ok, schemaCase{name, string(g.Schema), draft})
			case errors.As(err, &ue):
				rep.unsupported++
			case errors.Is(err, grammar.ErrTooComplex):
				rep.tooComplex++
			default:
				rep.other[name] = err.Error()
			}
		}
	}
	if len(ok) <= suiteSample {
		return ok, rep
	}
	sample := make([]schemaCase, 0, suiteSample)
	for i := range suiteSample {
		sample = append(sample, ok[i*len(ok)/suiteSample])
	}
	return sample, rep
}

// schemaValidator compiles sc for santhosh-tekuri/jsonschema with format
// assertions on.
func schemaValidator(t testing.TB, sc schemaCase) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(sc.source))
	if err != nil {
		t.Fatalf("%s: %v", sc.name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(sc.draft)
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatalf("%s: %v", sc.name, err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("%s: the validator refuses it: %v", sc.name, err)
	}
	return s
}

// validate says why out is not a document of s, or "".
func validate(s *jsonschema.Schema, out string) string {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		return "does not parse: " + err.Error()
	}
	if !ratsOK(inst) {
		return "" // the validator cannot judge it (see ratsOK)
	}
	if err := s.Validate(inst); err != nil {
		return "does not validate: " + err.Error()
	}
	return ""
}

// ratsOK reports whether every number of a parsed document is one that
// math/big reads: santhosh-tekuri/jsonschema v6.0.3 dereferences a nil
// *big.Rat (a panic) on a number such as 987E3652172509, valid JSON whose
// exponent big.Rat.SetString refuses, and the number grammar allows 16
// exponent digits, as llama.cpp's does.
func ratsOK(v any) bool {
	switch x := v.(type) {
	case json.Number:
		_, ok := new(big.Rat).SetString(string(x))
		return ok
	case []any:
		for _, e := range x {
			if !ratsOK(e) {
				return false
			}
		}
	case map[string]any:
		for _, e := range x {
			if !ratsOK(e) {
				return false
			}
		}
	}
	return true
}

// median of ds (sorted in place).
func median[T int64 | float64](ds []T) T {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
