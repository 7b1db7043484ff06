package langchain_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/prompts"

	"github.com/troupe-llm/troupe/langchain"
	"github.com/troupe-llm/troupe/troupetest"
)

// A langchaingo chain on a model in process. A scripted model stands in
// for a real one (troupe.Open on a GGUF file), so the output is known.
func Example() {
	script := troupetest.NewScript(troupetest.TinyVocabSize, troupetest.TinyEOS)
	m, done, err := openTiny(script)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	script.PushText(m.Runtime(), "Bonjour le monde")

	chain := chains.NewLLMChain(langchain.New(m), prompts.NewPromptTemplate("Translate to French: {{.text}}", []string{"text"}))
	out, err := chains.Run(context.Background(), chain, "Hello world")
	fmt.Println(out, err)
	// Output:
	// Bonjour le monde <nil>
}

// Embeddings for langchaingo's vector stores.
func ExampleNewEmbedder() {
	m, done, err := openTiny(nil) // a *troupe.Model, as troupe.Open of a GGUF file returns
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	vecs, err := langchain.NewEmbedder(m).EmbedDocuments(context.Background(), []string{"one", "two", "three"})
	fmt.Println(len(vecs), len(vecs[0]), err)
	// Output:
	// 3 64 <nil>
}
