package model

import (
	"errors"
	"fmt"
	"os"

	"github.com/troupe-llm/troupe/model/tokenizer"
)

// Open loads a model and its tokenizer from a GGUF file or a Hugging Face
// safetensors directory.
func Open(path string) (*Model, error) { return OpenWith(path, LoadOptions{}) }

// OpenWith is Open with load options.
func OpenWith(path string, o LoadOptions) (*Model, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if isDir(path) {
		m, st, err := LoadSafetensorsWith(path, o)
		if err != nil {
			return nil, err
		}
		tj, err := st.ReadFile("tokenizer.json")
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("model: %s: tokenizer.json: %w", path, err)
		}
		tc, err := st.ReadFile("tokenizer_config.json")
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			m.Close()
			return nil, fmt.Errorf("model: %s: %w", path, err)
		}
		v, err := tokenizer.FromHFFiles(tj, tc)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("model: %s: %w", path, err)
		}
		return m, m.attachTokenizer(v)
	}
	m, f, err := LoadGGUFWith(path, o)
	if err != nil {
		return nil, err
	}
	v, err := tokenizer.FromGGUF(f)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	return m, m.attachTokenizer(v)
}

func (m *Model) attachTokenizer(v *tokenizer.Vocab) error {
	tok, err := tokenizer.New(v)
	if err == nil && tok.VocabSize() > m.Config.VocabSize {
		err = fmt.Errorf("tokenizer has %d tokens, the model's output only %d", tok.VocabSize(), m.Config.VocabSize)
	}
	if err != nil {
		m.Close()
		return fmt.Errorf("model: %s: %w", m.Path, err)
	}
	m.Tokenizer = tok
	return nil
}
