package main

import (
	"flag"

	"github.com/troupe-llm/troupe/model"
)

// poolingVar defines --pooling (llama.cpp's): how /v1/embeddings and
// /api/embed pool an input's token states; unset: the model file's own
// pooling, else mean.
func poolingVar(fs *flag.FlagSet, p *model.Pooling) {
	fs.Func("pooling", "embedding pooling: mean, cls or last (default: the model's own, else mean)", func(s string) error {
		v, err := model.ParsePooling(s)
		if err == nil {
			*p = v
		}
		return err
	})
}
