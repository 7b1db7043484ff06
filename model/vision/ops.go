package vision

import (
	"math"
	"sync/atomic"

	"github.com/troupe-llm/troupe/compute"
)

// layerNorm is ggml_norm then ggml_mul by w and ggml_add of b (b may be
// nil), as ggml's CPU backend computes them on x86-64 with AVX2: the mean
// summed in float64 (ggml_vec_sum_f32), the variance by ggml_vec_cvar_f32,
// whose squares are added eight at a time in float32 in the order of its
// AVX2 horizontal sum and the eights summed in float64.
func layerNorm(dst, x, w, b []float32, eps float32) {
	n := len(x)
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	mean := float32(s) / float32(n)
	var sum float64
	i := 0
	for ; i+7 < n; i += 8 {
		var sq [8]float32
		for j := range 8 {
			d := x[i+j] - mean
			dst[i+j] = d
			sq[j] = d * d
		}
		l0, l1, l2, l3 := sq[0]+sq[4], sq[1]+sq[5], sq[2]+sq[6], sq[3]+sq[7]
		sum += float64((l0 + l2) + (l1 + l3))
	}
	for ; i < n; i++ {
		d := x[i] - mean
		dst[i] = d
		sum += float64(d * d)
	}
	variance := float32(sum / float64(n))
	scale := 1 / float32(math.Sqrt(float64(variance+eps)))
	for i := range dst[:n] {
		v := float32(float32(dst[i]*scale) * w[i]) // explicit conversions: no fused multiply-add
		if b != nil {
			v += b[i]
		}
		dst[i] = v
	}
}

// gelu is ggml_vec_gelu_f32 with GGML_GELU_FP16 (0 at or below −10, the
// identity at or above 10, else ggml's half table at x rounded to half):
// compute.Gelu (compute.GeGLU's gelu of the gate, times ones, bit for bit).
func gelu(x []float32) { compute.Gelu(x) }

// softmax is ggml_soft_max_ext without a mask: compute.SoftMax (x·scale,
// e^(x−max) by ggml_v_expf's AVX2 form and summed as ggml_vec_soft_max_f32
// does on x86-64 with AVX2 and FMA, each scaled by float32(1/sum); on other
// CPUs the exps are glibc's expf).
func softmax(x []float32, scale float32) { compute.SoftMax(x, scale) }

// parallelRows runs f over rows [0, n) on mm's crew
// (compute.MatMuler.Parallel): the work between products uses every thread
// the products do. The workers claim the rows a chunk at a time (about
// rowChunks chunks a worker), as linear's claim its panels, so that a
// worker the system stops for a while (a shared machine) leaves its rows to
// the others instead of making them wait at the end of the call. f must
// not call mm's methods. Each row's result does not depend on the split.
func parallelRows(mm *compute.MatMuler, n int, f func(lo, hi int)) {
	w := min(mm.Workers(), n)
	if w <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	per := max(1, n/(w*rowChunks))
	chunks := int32((n + per - 1) / per)
	var next atomic.Int32
	mm.Parallel(w, func(int) {
		for c := next.Add(1) - 1; c < chunks; c = next.Add(1) - 1 {
			lo := int(c) * per
			f(lo, min(n, lo+per))
		}
	})
}

// rowChunks is how many chunks of rows parallelRows makes a worker: enough
// that the last chunk in flight is short, few enough that claiming them
// costs nothing measurable.
const rowChunks = 8

// shareBlocks runs blocks blocks of each of units units on workers of mm's
// crew: a worker claims the next unit, calls load (its scratch for the
// unit: packed weights, a head's keys) and claims the unit's blocks one at
// a time (run); with every unit claimed, it loads a unit still running (at
// least two blocks left) and takes blocks of it too, counting it in joins,
// so that the last units do not leave one worker waiting for another (a
// worker the system stops for a while leaves its blocks to the others).
// load returning false ends its worker. The result must not depend on
// which worker runs a block.
func shareBlocks(mm *compute.MatMuler, workers, units, blocks int, joins *atomic.Int64, load func(wi, u int) bool, run func(wi, u, b int)) {
	left := make([]atomic.Int32, units) // each unit's next block
	var next atomic.Int32
	mm.Parallel(workers, func(wi int) {
		unit := func(u int) bool {
			if !load(wi, u) {
				return false
			}
			for b := int(left[u].Add(1) - 1); b < blocks; b = int(left[u].Add(1) - 1) {
				run(wi, u, b)
			}
			return true
		}
		for u := int(next.Add(1) - 1); u < units; u = int(next.Add(1) - 1) {
			if !unit(u) {
				return
			}
		}
		for u := units - 1; u >= 0; u-- {
			if blocks-int(left[u].Load()) >= 2 {
				joins.Add(1)
				if !unit(u) {
					return
				}
			}
		}
	})
}
