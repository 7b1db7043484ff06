package pipeline

import "context"

// Embedding is one embeddings call, whatever API it came from.
type Embedding struct {
	// Inputs are texts (special tokens added and parsed, as
	// llama-embedding does) or token ids; each gets its vector.
	Inputs []Prompt
	// Param names the field the inputs came from, for errors.
	Param string
	// Dimensions, when set, is the vector size the client asks for; one
	// other than the model's is Invalid (vectors are not shortened).
	Dimensions *int
	// Truncate cuts an input longer than the context to fit it (Ollama's
	// truncate); without it such an input is Invalid.
	Truncate bool
	// Raw returns the vectors as the model gives them, not normalized
	// (Ollama's /api/embeddings).
	Raw bool
}

// Embedder is the embedding side of the pipeline (server.Server): it
// admits the call, tokenizes the inputs and has the runtime embed them
// within the request timeout.
type Embedder interface {
	Embed(ctx context.Context, req *Embedding) (vecs [][]float32, promptTokens int, e *Error)
}
