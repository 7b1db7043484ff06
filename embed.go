package troupe

import (
	"context"
	"errors"
	"fmt"

	"github.com/troupe-llm/troupe/actors"
)

// Embed returns one embedding per text: the model's final hidden states
// pooled (the model file's pooling, else mean) and scaled to unit length,
// as troupe serve's /v1/embeddings and llama.cpp's llama-embedding compute
// them. The texts run batched, as prefill-only sequences.
func (t *Model) Embed(ctx context.Context, texts ...string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, &Error{Kind: ErrInvalid, Field: "texts", Message: "at least one text is required"}
	}
	inputs := make([][]int32, len(texts))
	for i, s := range texts {
		if s == "" {
			return nil, &Error{Kind: ErrInvalid, Field: "texts", Message: fmt.Sprintf("text %d is empty", i)}
		}
		ids, err := t.rt.TokenizeText(s, true, true)
		if err != nil {
			return nil, &Error{Kind: ErrInvalid, Field: "texts", Message: fmt.Sprintf("tokenizing text %d: %v", i, err)}
		}
		inputs[i] = ids
	}
	vecs, _, err := t.rt.Embed(ctx, inputs, actors.EmbedOptions{})
	switch {
	case err == nil:
		return vecs, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("troupe: %w", context.Cause(ctx))
	case errors.Is(err, actors.ErrNoEmbeddings):
		return nil, &Error{Kind: ErrInvalid, Message: err.Error()}
	}
	return nil, fmt.Errorf("troupe: embed: %w", err)
}

// Tokenize returns text's token ids as a prompt gets them: BOS added as
// the vocabulary asks, special tokens (<|im_start|>, ...) parsed.
func (t *Model) Tokenize(text string) ([]int32, error) {
	ids, err := t.rt.Tokenize(text)
	if err != nil {
		return nil, fmt.Errorf("troupe: tokenize: %w", err)
	}
	return ids, nil
}

// Detokenize returns the text of ids.
func (t *Model) Detokenize(ids []int32) (string, error) {
	s, err := t.rt.Detokenize(ids)
	if err != nil {
		return "", fmt.Errorf("troupe: detokenize: %w", err)
	}
	return s, nil
}
