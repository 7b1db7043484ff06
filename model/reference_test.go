package model_test

import (
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// refCase is one ../shared/reference/<model>/caseN.json.
type refCase = testmodels.Case

func modelsDir(t testing.TB) string { return testmodels.Dir(t) }

func loadCases(t testing.TB, name string) []*refCase { return testmodels.Cases(t, name) }
