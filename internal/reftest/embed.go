package reftest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// EmbedInput is one input of an embedding reference (model/testdata/embed,
// made by scripts/embed-ref.sh): its text, llama.cpp's tokens and
// llama-embedding's embedding.
type EmbedInput struct {
	Text      string    `json:"text"`
	Tokens    []int32   `json:"tokens"`
	Embedding []float32 `json:"embedding"`
}

// EmbedInputs reads the inputs of the embedding reference name
// (model/testdata/embed/name.json), for the tests of a package one folder
// below the module's root (actors, server).
func EmbedInputs(t testing.TB, name string) []EmbedInput {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "model", "testdata", "embed", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Inputs []EmbedInput `json:"inputs"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	return ref.Inputs
}
