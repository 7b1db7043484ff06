package model

import (
	"fmt"
	"github.com/troupe-llm/troupe/model/lora"
	"io"
	"os"

	"github.com/troupe-llm/troupe/model/gguf"
	"github.com/troupe-llm/troupe/model/tokenizer"
)

// Model is a loaded model: hyperparameters and weights. It is immutable and
// safe for concurrent use; each caller of Forward brings its own State.
type Model struct {
	Config Config
	// Features is Config's feature set, derived once at load
	// (Config.Features); each backend checks it against what it implements.
	Features Features
	Weights  *Weights
	Path     string
	// Tokenizer is set by Open; LoadGGUF and LoadSafetensors leave it nil.
	Tokenizer *tokenizer.Tokenizer

	bert *bertWeights // an encoder's weights (bert.go); nil for a decoder
	rank *rankHead    // a reranker's classification head (rank.go); nil for others

	closer io.Closer // the mapped file(s) the weights point into
	// adapters apply to every sequence of a batch that names none
	// (SetAdapters, lora.go); nil: none.
	adapters []lora.Scaled
}

// Close releases the mapped files. The model must not be used after.
func (m *Model) Close() error {
	if m.closer == nil {
		return nil
	}
	return m.closer.Close()
}

// LoadGGUF opens a GGUF model file.
func LoadGGUF(path string) (*Model, *gguf.File, error) { return LoadGGUFWith(path, LoadOptions{}) }

// LoadGGUFWith is LoadGGUF with load options.
func LoadGGUFWith(path string, o LoadOptions) (*Model, *gguf.File, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	m, err := fromGGUF(f, o)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return m, f, nil
}

func fromGGUF(f *gguf.File, o LoadOptions) (*Model, error) {
	c, err := configFromGGUF(f)
	if err != nil {
		return nil, err
	}
	var m *Model
	if c.Encoder {
		m, err = encoderFromGGUF(f, c, f.Path, f)
	} else if w, werr := loadWeights(f, c, o); werr != nil {
		err = fmt.Errorf("model: %s: %w", f.Path, werr)
	} else {
		m = &Model{Config: *c, Weights: w, Path: f.Path, closer: f}
	}
	if err == nil {
		err = m.loadRankHead(f)
	}
	if err == nil {
		err = m.deriveFeatures()
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
