package gpu

import (
	"errors"
	"runtime"

	"github.com/troupe-llm/troupe/gpu/cuda"
)

// Decode steps are short and many: at batch 1 a step of a 1B model is a few
// hundred kernel launches of a few microseconds each, which would dominate
// the step. So the first step of each shape is captured as a CUDA graph and
// later steps of that shape replay it with one launch. A shape fixes every
// kernel parameter: the token count, the rows with logits and the number of
// sequences fix the grid sizes and where each index array is staged (see
// stage); positions and block tables are read from device memory, so they
// may change between replays.

// graphKey is a step's shape: tokens, rows with logits, sequences.
type graphKey struct{ n, nOut, seqs int }

const (
	maxGraphTokens = 64  // larger steps (prefill) launch directly: their kernels are long
	maxGraphs      = 256 // shapes kept; past that, new shapes launch directly
)

// graph returns the graph of the step shape k, capturing it the first time,
// or nil when the step should launch its kernels directly. A capture that
// fails turns graphs off for this Model: the direct path still works.
func (g *Model) graph(k graphKey) *cuda.GraphExec {
	if g.cache.NoGraphs || k.n > maxGraphTokens {
		return nil
	}
	if ge, ok := g.graphs[k]; ok {
		return ge
	}
	if len(g.graphs) >= maxGraphs {
		return nil
	}
	ge, err := g.capture(k)
	if err != nil {
		g.cache.NoGraphs = true
		g.captureErr = err
		return nil
	}
	g.graphs[k] = ge
	return ge
}

// capture records the kernels of a step of shape k on the stream as a graph.
func (g *Model) capture(k graphKey) (*cuda.GraphExec, error) {
	runtime.LockOSThread() // one thread from BeginCapture to EndCapture
	defer runtime.UnlockOSThread()
	if err := g.stream.BeginCapture(); err != nil {
		return nil, err
	}
	l := launcher{g: g}
	g.queue(&l, k.n, k.nOut, nil)
	graph, err := g.stream.EndCapture()
	if err = errors.Join(l.err, err); err != nil {
		if graph != nil {
			graph.Destroy()
		}
		return nil, err
	}
	ge, err := graph.Instantiate()
	return ge, errors.Join(err, graph.Destroy())
}

// dropGraphs destroys the captured graphs (before the scratch they name is
// freed).
func (g *Model) dropGraphs() error {
	var errs []error
	for k, ge := range g.graphs {
		errs = append(errs, ge.Destroy())
		delete(g.graphs, k)
	}
	return errors.Join(errs...)
}

// GraphError is why graph capture was turned off, if it was.
func (g *Model) GraphError() error { return g.captureErr }
