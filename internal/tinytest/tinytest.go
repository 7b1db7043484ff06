// Package tinytest opens troupetest's tiny random model from a file of its
// own, for the examples and tests of troupe, actors and langchain.
package tinytest

import (
	"io"
	"os"
	"path/filepath"

	"github.com/troupe-llm/troupe/troupetest"
)

// Open writes troupetest's tiny model into a new folder and opens it with
// open; done closes it and removes the folder.
func Open[M io.Closer](open func(path string) (M, error)) (m M, done func(), err error) {
	dir, err := os.MkdirTemp("", "troupe-tiny")
	if err != nil {
		return m, nil, err
	}
	path := filepath.Join(dir, "tiny.gguf")
	if err = troupetest.WriteTinyModel(path, 1); err == nil {
		m, err = open(path)
	}
	if err != nil {
		os.RemoveAll(dir)
		var none M
		return none, nil, err
	}
	return m, func() { m.Close(); os.RemoveAll(dir) }, nil
}
