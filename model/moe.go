package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/troupe-llm/troupe/compute"
)

// Mixture-of-experts feed-forward blocks (qwen3moe, qwen2moe), as
// llama.cpp's build_moe_ffn computes them: a router gives each token a
// softmax over all experts; the token goes through its ExpertsUsed most
// probable experts (SwiGLU FFNs), whose outputs are weighted by those
// probabilities (divided by their sum under NormTopK) and added up in the
// top-k order. qwen2moe adds a shared expert that every token goes
// through, scaled by a sigmoid gate of its own.
//
// A step groups its tokens by expert: each expert that some token routes to
// multiplies the gathered rows of its tokens at once, so its weights are
// read once per step, and an expert that no token routes to is not read.
// The products are per row (compute.MatMuler), the softmax, top-k and the
// weighted sum are per token in a fixed order, so a token's output does not
// depend on the other tokens of the step.

// MoEWeights are one layer's experts. The expert matrices are views of the
// file's 3-D tensors, one slice per expert.
type MoEWeights struct {
	Router *compute.Tensor   // (experts, dim) ffn_gate_inp
	Gate   []*compute.Tensor // (experts) each (expert_ffn, dim)
	Up     []*compute.Tensor // (experts) each (expert_ffn, dim)
	Down   []*compute.Tensor // (experts) each (dim, expert_ffn)

	// The shared expert (qwen2moe); nil without one.
	SharedRouter *compute.Tensor // (1, dim) ffn_gate_inp_shexp: the logit of its sigmoid gate
	SharedGate   *compute.Tensor // (shared_ffn, dim)
	SharedUp     *compute.Tensor // (shared_ffn, dim)
	SharedDown   *compute.Tensor // (dim, shared_ffn)

	// Biases (gpt-oss, Config.ExpertOAI; gptoss.go); nil elsewhere.
	RouterBias       []float32 // (experts)
	GateBias, UpBias []float32 // (experts, expert_ffn)
	DownBias         []float32 // (experts, dim)
}

// moeScratch holds a step's routing and the experts' activations.
type moeScratch struct {
	probs   []float32 // (tokens, experts) router logits, then probabilities
	sel     []int32   // (tokens, used) each token's experts, most probable first
	weights []float32 // (tokens, used) their weights
	order   []int32   // (tokens·used) token·used+slot entries grouped by expert, tokens in order
	start   []int     // (experts+1) each expert's run in order
	next    []int     // (experts) where each expert's next entry goes
	main    expertBuf // buffers of the experts run on State.mm, and of the shared expert

	small   []int32        // the step's experts run by the workers (moe_run.go)
	workers []expertWorker // (State workers)
	share   func(wi int)   // worker wi's body (runWorker), built once
	job     expertJob      // the layer the workers run
	ys      []float32      // (tokens, used, dim) each token's expert outputs in top-k order
	shared  []float32      // (tokens) the shared expert's gate logits

	// expertRuns counts the expert FFNs run (one per expert per layer per
	// step that routes a token to it), for tests.
	expertRuns int
	// onRoute, when set (tests), sees each layer's routing: the experts of
	// every token, (tokens, used).
	onRoute func(layer int, sel []int32)
}

// isMoE reports whether arch is a mixture-of-experts architecture.
func isMoE(arch string) bool { return arch == "qwen2moe" || arch == "qwen3moe" || arch == "gpt-oss" }

// moeConfig reads the experts' hyperparameters (llama.cpp's defaults: an
// expert's width n_ff/n_expert_used, the shared expert's n_ff).
func moeConfig(r *ggufKeys, c *Config) {
	c.Experts = r.int("expert_count", -1)
	c.ExpertsUsed = r.int("expert_used_count", -1)
	def := 0
	if c.ExpertsUsed > 0 {
		def = c.FFNDim / c.ExpertsUsed
	}
	c.ExpertFFNDim = r.int("expert_feed_forward_length", def)
	if c.Arch == "qwen2moe" {
		c.SharedFFNDim = r.int("expert_shared_feed_forward_length", c.FFNDim)
	}
	// llama.cpp renormalizes the top-k weights of qwen3moe and not those of
	// qwen2moe, whatever expert_weights_norm says.
	c.NormTopK = c.Arch == "qwen3moe"
}

// validateMoE checks the experts' hyperparameters.
func (c *Config) validateMoE() error {
	if !isMoE(c.Arch) {
		if c.Experts != 0 {
			return fmt.Errorf("model: %s has no experts (got %d)", c.Arch, c.Experts)
		}
		return nil
	}
	switch {
	case c.Experts <= 0 || c.Experts > 4096:
		return fmt.Errorf("model: %d experts outside 1..4096", c.Experts)
	case c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts:
		return fmt.Errorf("model: %d experts used of %d", c.ExpertsUsed, c.Experts)
	case c.ExpertFFNDim <= 0 || c.ExpertFFNDim > maxWidth || c.SharedFFNDim < 0 || c.SharedFFNDim > maxWidth:
		return fmt.Errorf("model: expert width %d, shared expert width %d", c.ExpertFFNDim, c.SharedFFNDim)
	}
	return nil
}

// moe loads layer p's experts.
func (l *loader) moe(p string, c *Config) *MoEWeights {
	w := &MoEWeights{
		Router: l.matrix(p+"ffn_gate_inp.weight", c.Dim, c.Experts),
		Gate:   l.experts(p+"ffn_gate_exps.weight", c.Dim, c.ExpertFFNDim, c.Experts),
		Up:     l.experts(p+"ffn_up_exps.weight", c.Dim, c.ExpertFFNDim, c.Experts),
		Down:   l.experts(p+"ffn_down_exps.weight", c.ExpertFFNDim, c.Dim, c.Experts),
	}
	if c.ExpertOAI {
		l.expertBiases(w, p, c)
	}
	if c.SharedFFNDim > 0 {
		if t := l.tensor(p + "ffn_gate_inp_shexp.weight"); t != nil {
			if t.Elems() != c.Dim {
				l.err = fmt.Errorf("model: tensor %q has shape %v, want %d values", t.Name, t.Shape, c.Dim)
			}
			w.SharedRouter = &compute.Tensor{Name: t.Name, Type: t.Type, Shape: []int{c.Dim, 1}, Data: t.Data}
		}
		w.SharedGate = l.matrix(p+"ffn_gate_shexp.weight", c.Dim, c.SharedFFNDim)
		w.SharedUp = l.matrix(p+"ffn_up_shexp.weight", c.Dim, c.SharedFFNDim)
		w.SharedDown = l.matrix(p+"ffn_down_shexp.weight", c.SharedFFNDim, c.Dim)
	}
	return w
}

// experts splits a 3-D tensor of n matrices of rows×cols into n matrix
// views.
func (l *loader) experts(name string, cols, rows, n int) []*compute.Tensor {
	t := l.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Shape) != 3 || t.Shape[0] != cols || t.Shape[1] != rows || t.Shape[2] != n {
		l.err = fmt.Errorf("model: tensor %q has shape %v, want [%d %d %d]", name, t.Shape, cols, rows, n)
		return nil
	}
	size := rows * t.RowBytes()
	views := make([]*compute.Tensor, n)
	for e := range views {
		views[e] = &compute.Tensor{Name: fmt.Sprintf("%s[%d]", name, e), Type: t.Type, Shape: []int{cols, rows},
			Data: t.Data[e*size : (e+1)*size : (e+1)*size]}
	}
	return views
}

// Matrices lists w's matrices (none when w is nil): compute.Prepare binds
// them, bench counts them.
func (w *MoEWeights) Matrices() []*compute.Tensor {
	if w == nil {
		return nil
	}
	ms := []*compute.Tensor{w.Router, w.SharedRouter, w.SharedGate, w.SharedUp, w.SharedDown}
	ms = append(ms, w.Gate...)
	ms = append(ms, w.Up...)
	return append(ms, w.Down...)
}

// moeFFN runs the experts of layer l over the n tokens' normed inputs s.xb
// and adds the result to the residual stream s.x.
func (m *Model) moeFFN(s *State, l, n int) error {
	c, w := &m.Config, m.Weights.Layers[l].MoE
	dim, E, K := c.Dim, c.Experts, c.ExpertsUsed
	ms := &s.moe
	ms.reserve(c, n)

	// Route: softmax over every expert, the top K, their weights.
	if err := s.mm.MatMul(ms.probs, s.xb, n, w.Router); err != nil {
		return err
	}
	for i := range n {
		p := ms.probs[i*E : (i+1)*E]
		if w.RouterBias != nil {
			compute.Add(p, w.RouterBias)
		}
		if !c.SoftmaxTopK {
			softmax(p)
		}
		topK(ms.sel[i*K:(i+1)*K], p)
		wt := ms.weights[i*K : (i+1)*K]
		for j, e := range ms.sel[i*K : (i+1)*K] {
			wt[j] = p[e]
		}
		if c.SoftmaxTopK { // gpt-oss: a softmax over the chosen logits alone
			softmax(wt)
		}
		if c.NormTopK {
			var sum float64 // ggml_sum_rows: a float64 sum in order, rounded
			for _, v := range wt {
				sum += float64(v)
			}
			d := max(float32(sum), 6.103515625e-5) // ggml_clamp to f16's smallest normal
			for j := range wt {
				wt[j] /= d
			}
		}
	}

	if ms.onRoute != nil {
		ms.onRoute(l, ms.sel[:n*K])
	}

	// Group the (token, slot) pairs by expert, tokens in batch order.
	clear(ms.start)
	for _, e := range ms.sel[:n*K] {
		ms.start[e+1]++
	}
	for e := range E {
		ms.start[e+1] += ms.start[e]
	}
	copy(ms.next, ms.start[:E])
	for r, e := range ms.sel[:n*K] {
		ms.order[ms.next[e]] = int32(r)
		ms.next[e]++
	}

	w.prefetch(ms.start) // prefetch.go
	if err := m.runExperts(s, w, n); err != nil {
		return err
	}

	// Weighted sum per token in top-k order, as ggml multiplies each
	// expert's output by its weight and then adds them in turn.
	for i := range n {
		out := s.ob[i*dim : (i+1)*dim]
		wt := ms.weights[i*K : (i+1)*K]
		y := ms.ys[i*K*dim : (i+1)*K*dim]
		for d := range out {
			out[d] = y[d] * wt[0]
		}
		for j := 1; j < K; j++ {
			yj := y[j*dim : (j+1)*dim]
			for d := range out {
				out[d] += float32(yj[d] * wt[j]) // rounded before the add, never fused
			}
		}
	}
	if w.SharedGate != nil {
		if err := m.sharedExpert(s, w, n); err != nil {
			return err
		}
	}
	compute.Add(s.x[:n*dim], s.ob[:n*dim])
	return nil
}

// sharedExpert adds the shared expert's output, scaled by its gate
// sigmoid(logit) (computed as ggml does: silu(logit)/logit), to s.ob.
func (m *Model) sharedExpert(s *State, w *MoEWeights, n int) error {
	c, ms := &m.Config, &s.moe
	dim := c.Dim
	if err := s.mm.MatMul(ms.shared, s.xb, n, w.SharedRouter); err != nil {
		return err
	}
	if err := swiglu(s.mm, &ms.main, s.xb, n, c.SharedFFNDim, w.SharedGate, w.SharedUp, w.SharedDown); err != nil {
		return err
	}
	for i := range n {
		x := ms.shared[i]
		g := float32(0.5)
		if x != 0 {
			g = x / (1 + float32(math.Exp(float64(-x)))) / x
		}
		out, y := s.ob[i*dim:(i+1)*dim], ms.main.yg[i*dim:(i+1)*dim]
		for d := range out {
			out[d] += float32(y[d] * g)
		}
	}
	return nil
}

// expertFFN runs expert e of w over the rows gathered in b.xg into
// b.yg, with mm.
func (m *Model) expertFFN(mm *compute.MatMuler, b *expertBuf, rows int, w *MoEWeights, e int) error {
	if w.GateBias != nil {
		return oaiExpert(mm, b, rows, &m.Config, w, e) // gptoss.go
	}
	return swiglu(mm, b, b.xg, rows, m.Config.ExpertFFNDim, w.Gate[e], w.Up[e], w.Down[e])
}

// swiglu computes down(silu(gate·x) ⊙ up·x) for the rows of x into b.yg,
// with mm.
func swiglu(mm *compute.MatMuler, b *expertBuf, x []float32, rows, ff int, gate, up, down *compute.Tensor) error {
	if err := mm.MatMul(b.gate, x, rows, gate); err != nil {
		return err
	}
	if err := mm.MatMul(b.up, x, rows, up); err != nil {
		return err
	}
	for g := range rows { // per row, as ggml's swiglu
		gr, ur := b.gate[g*ff:(g+1)*ff], b.up[g*ff:(g+1)*ff]
		compute.SiLUMul(gr, gr, ur)
	}
	return mm.MatMul(b.yg, b.gate, rows, down)
}

// softmax turns p into its softmax as ggml_soft_max does on the CPU: the
// exponentials of p − max, their float64 sum in order, then a multiply by
// the float32 inverse of the sum.
func softmax(p []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range p {
		mx = max(mx, v)
	}
	for i := range p {
		p[i] -= mx
	}
	compute.Exp(p)
	var sum float64
	for _, v := range p {
		sum += float64(v)
	}
	inv := float32(1 / sum)
	for i := range p {
		p[i] *= inv
	}
}

// topK writes the indices of p's len(sel) largest values into sel, largest
// first; of equal values the lower index comes first.
func topK(sel []int32, p []float32) {
	for j := range sel {
		best := -1
		for e, v := range p {
			if best < 0 || v > p[best] {
				if !slices.Contains(sel[:j], int32(e)) {
					best = e
				}
			}
		}
		sel[j] = int32(best)
	}
}

// reserve grows the buffers for n tokens of c.
func (ms *moeScratch) reserve(c *Config, n int) {
	E, K, ff := c.Experts, c.ExpertsUsed, max(c.ExpertFFNDim, c.SharedFFNDim)
	if len(ms.sel) < n*K {
		ms.probs = make([]float32, n*E)
		ms.sel = make([]int32, n*K)
		ms.weights = make([]float32, n*K)
		ms.order = make([]int32, n*K)
		ms.main.reserve(n, c.Dim, ff)
		ms.ys = make([]float32, n*K*c.Dim)
		ms.shared = make([]float32, n)
	}
	if len(ms.start) != E+1 {
		ms.start, ms.next = make([]int, E+1), make([]int, E)
	}
}
