package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/troupe-llm/troupe/model"
)

// repackVar defines --repack and --no-repack on fs, writing into r (see
// model.Repack); a bad value is a usage error from parse.
func repackVar(fs *flag.FlagSet, r *model.Repack) {
	fs.Func("repack", "which weights are repacked into the kernels' layouts at load: `mode` auto (all when the model fits in memory, "+
		"else all but the experts of a MoE, which are then read from the file as they are routed to), all, dense (all but the experts) or none (default auto)",
		func(s string) error {
			v, err := model.ParseRepack(s)
			*r = v
			return err
		})
	fs.BoolFunc("no-repack", "read every weight from the mapped file, repacking none (llama.cpp's --no-repack; --repack none)",
		func(string) error {
			*r = model.RepackNone
			return nil
		})
}

// repackFlag is repackVar into a new variable.
func repackFlag(fs *flag.FlagSet) *model.Repack {
	r := new(model.Repack)
	repackVar(fs, r)
	return r
}

// openModelWith opens a model with its tokenizer, repacking its weights as r
// says.
func openModelWith(path string, r model.Repack) (*model.Model, error) {
	return model.OpenWith(path, model.LoadOptions{Repack: r})
}

// noteRepack tells w when m's weights are not all repacked: some are read
// from the mapped file as they are used.
func noteRepack(w io.Writer, m *model.Model) {
	switch m.Weights.Repack {
	case model.RepackDense:
		fmt.Fprintln(w, "weights: experts read in place from the mapped file (--repack dense)")
	case model.RepackNone:
		fmt.Fprintln(w, "weights: all read in place from the mapped file (--repack none)")
	}
}
