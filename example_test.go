package troupe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/troupe-llm/troupe"
	"github.com/troupe-llm/troupe/internal/tinytest"
	"github.com/troupe-llm/troupe/troupetest"
)

// Open a model and chat with it. Here the model is a tiny random one
// written on the spot (its words are meaningless); a real program passes
// the path of a GGUF file such as Qwen2.5-0.5B-Instruct's.
func Example() {
	dir, _ := os.MkdirTemp("", "troupe")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.gguf")
	if err := troupetest.WriteTinyModel(path, 1); err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	m, err := troupe.Open(ctx, path, troupe.WithThreads(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	resp, err := m.Chat(ctx, &troupe.ChatRequest{
		Messages: []troupe.Message{
			{Role: troupe.RoleSystem, Content: "You are terse."},
			{Role: troupe.RoleUser, Content: "Name a colour."},
		},
		Sampling: troupe.Sampling{MaxTokens: troupe.Int(16), Temperature: troupe.Float(0.7), Seed: troupe.Int64(1)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("prompt tokens:", resp.Usage.PromptTokens)
	fmt.Println("at most 16 generated:", resp.Usage.CompletionTokens <= 16)
	// Output:
	// prompt tokens: 57
	// at most 16 generated: true
}

// ChatStream hands over the answer piece by piece. A Script stands in for
// the model here, so the output is known.
func ExampleModel_ChatStream() {
	m, script, cleanup, err := scriptedModel()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	script.PushText(m.Runtime(), "Blue, like the sky.")

	_, err = m.ChatStream(context.Background(), &troupe.ChatRequest{
		Messages: []troupe.Message{{Role: troupe.RoleUser, Content: "Name a colour."}},
		Sampling: troupe.Sampling{Stop: []string{","}},
	}, func(d troupe.Delta) error {
		fmt.Print(d.Content)
		return nil
	})
	fmt.Println()
	fmt.Println(err)
	// Output:
	// Blue
	// <nil>
}

// A model that calls a tool: the call comes back parsed, with its
// arguments as JSON text, and the tool's result goes back as a RoleTool
// message.
func ExampleModel_Chat_tools() {
	m, script, cleanup, err := scriptedModel()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	script.PushText(m.Runtime(), `<tool_call>
{"name": "weather", "arguments": {"city": "Oslo"}}
</tool_call>`)
	script.PushText(m.Runtime(), "It is snowing in Oslo.")

	ctx := context.Background()
	req := &troupe.ChatRequest{
		Messages: []troupe.Message{{Role: troupe.RoleUser, Content: "Weather in Oslo?"}},
		Tools: []troupe.Tool{{Name: "weather", Description: "Today's weather in a city",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}},
	}
	resp, err := m.Chat(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	call := resp.ToolCalls[0]
	fmt.Println(resp.Finish, call.Name, call.Arguments)

	req.Messages = append(req.Messages,
		troupe.Message{Role: troupe.RoleAssistant, ToolCalls: resp.ToolCalls},
		troupe.Message{Role: troupe.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: `{"sky": "snow"}`})
	resp, err = m.Chat(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Finish, resp.Content)
	// Output:
	// tool_calls weather {"city": "Oslo"}
	// stop It is snowing in Oslo.
}

// Embed returns unit-length vectors, one per text, as wide as the model.
func ExampleModel_Embed() {
	m, cleanup, err := tinyModelOpen()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	vecs, err := m.Embed(context.Background(), "a cat sat", "on the mat")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(vecs), "vectors of", len(vecs[0]))
	// Output:
	// 2 vectors of 64
}

// scriptedModel opens the tiny model on a Script; cleanup closes it and
// removes the file.
func scriptedModel() (*troupe.Model, *troupetest.Script, func(), error) {
	script := troupetest.NewScript(troupetest.TinyVocabSize, troupetest.TinyEOS)
	m, cleanup, err := tinyModelOpen(troupe.WithBackend(script))
	return m, script, cleanup, err
}

// tinyModelOpen writes the tiny model into a new folder and opens it with
// opts; cleanup closes it and removes the folder.
func tinyModelOpen(opts ...troupe.Option) (*troupe.Model, func(), error) {
	return tinytest.Open(func(path string) (*troupe.Model, error) { return troupe.Open(context.Background(), path, opts...) })
}
