package troupetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/troupe-llm/troupe"
	"github.com/troupe-llm/troupe/troupetest"
)

// A test of a program's own code against a model that says what the test
// wants: the reply goes through the chat template, the runtime and the
// pipeline's stop strings as a real model's would.
func ExampleScript() {
	dir, _ := os.MkdirTemp("", "troupetest")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.gguf")
	if err := troupetest.WriteTinyModel(path, 1); err != nil {
		fmt.Println(err)
		return
	}
	script := troupetest.NewScript(troupetest.TinyVocabSize, troupetest.TinyEOS)
	m, err := troupe.Open(context.Background(), path, troupe.WithBackend(script))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	script.PushText(m.Runtime(), "The answer is 42. Anything else?")
	resp, err := m.Chat(context.Background(), &troupe.ChatRequest{
		Messages: []troupe.Message{{Role: troupe.RoleUser, Content: "The answer?"}},
		Sampling: troupe.Sampling{Stop: []string{"."}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q %s\n", resp.Content, resp.Finish)
	// Output:
	// "The answer is 42" stop
}

// WriteTinyModel's file is a GGUF model like any other.
func ExampleWriteTinyModel() {
	dir, _ := os.MkdirTemp("", "troupetest")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.gguf")
	if err := troupetest.WriteTinyModel(path, 1); err != nil {
		fmt.Println(err)
		return
	}
	m, err := troupe.Open(context.Background(), path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	ids, _ := m.Tokenize("<|im_start|>hi")
	fmt.Println(ids)
	// Output:
	// [257 104 105]
}
