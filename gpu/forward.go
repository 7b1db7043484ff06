package gpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/model"
)

// mmvMaxM is the activation rows one mmv launch takes (MMV_MAXM in
// kernels_dequant.cu); mmvWarps the output rows per block of mmv
// (MMV_WARPS, kernels_matmul.cu), mmvqRows those of mmvq (MMVQ_ROWS).
const (
	mmvMaxM  = 8
	mmvWarps = 4
	mmvqRows = 16
)

// state is the device scratch of a forward pass, sized for cap tokens.
type state struct {
	cap                         int
	x, xb, q, k, v, att, ob, xo cuda.DevicePtr // (cap, dim) / (cap, q_dim) / (cap, kv_dim)
	gate, up                    cuda.DevicePtr // (cap, ffn)
	// A matmul's input as quantize_act converts it, k = max(dim, q_dim, ffn)
	// values a row at most: rounded to f16/bf16, or ggml's activation blocks.
	xq                          cuda.DevicePtr // (cap, k) floats
	aq                          cuda.DevicePtr // (cap, k) int8 quants
	ad, as                      cuda.DevicePtr // (cap, k/32) floats: block scales d, Q8_1 sums s
	ab                          cuda.DevicePtr // (cap, k/16) ints: Q8_K bsums
	logits                      cuda.DevicePtr // (cap, vocab)
	ids                         cuda.DevicePtr // (cap) ints: argmax's picks
	ints                        cuda.DevicePtr // the batch's index arrays, then the rope table (see layout)
	intsCap                     int            // 4-byte words in ints
	staging                     unsafe.Pointer // pinned host copy of ints
	tokens, ends, slots, seq    int            // word offsets into ints
	btOff, bt, rows, cs, nWords int
	emb                         int // word offset of the input embeddings (Batch.Embeds)
	allocs                      []cuda.DevicePtr
}

// reserve grows the scratch to n tokens and words index words.
func (g *Model) reserve(n, words int) error {
	c := &g.cfg
	s := &g.st
	if n > s.cap || words > s.intsCap {
		if err := g.dropGraphs(); err != nil { // they name the old scratch
			return err
		}
	}
	if n > s.cap {
		for _, p := range s.allocs {
			if err := g.dev.Free(p); err != nil {
				return err
			}
		}
		s.allocs = s.allocs[:0]
		n = max(n, 2*s.cap, 64)
		qDim := c.Heads * c.HeadDim
		k := max(c.Dim, qDim, c.FFNDim)
		for _, b := range []struct {
			p     *cuda.DevicePtr
			bytes int // a row
		}{{&s.x, 4 * c.Dim}, {&s.xb, 4 * c.Dim}, {&s.xo, 4 * c.Dim}, {&s.q, 4 * qDim}, {&s.att, 4 * qDim}, {&s.ob, 4 * c.Dim},
			{&s.k, 4 * c.KVDim()}, {&s.v, 4 * c.KVDim()}, {&s.gate, 4 * c.FFNDim}, {&s.up, 4 * c.FFNDim}, {&s.logits, 4 * c.VocabSize},
			{&s.ids, 4}, {&s.xq, 4 * k}, {&s.aq, k}, {&s.ad, 4 * (k/32 + 1)}, {&s.as, 4 * (k/32 + 1)}, {&s.ab, 4 * (k/16 + 1)}} {
			p, err := g.dev.Alloc(n * b.bytes)
			if err != nil {
				return fmt.Errorf("gpu: scratch for %d tokens: %w", n, err)
			}
			*b.p = p
			s.allocs = append(s.allocs, p)
		}
		s.cap = n
	}
	if words > s.intsCap {
		words = max(words, 2*s.intsCap, 4096)
		if s.ints != 0 {
			if err := g.dev.Free(s.ints); err != nil {
				return err
			}
			if err := g.dev.HostFree(s.staging); err != nil {
				return err
			}
			s.ints, s.staging = 0, nil
		}
		p, err := g.dev.Alloc(4 * words)
		if err != nil {
			return fmt.Errorf("gpu: batch indexes: %w", err)
		}
		h, err := g.dev.HostAlloc(4 * words)
		if err != nil {
			g.dev.Free(p)
			return fmt.Errorf("gpu: batch staging: %w", err)
		}
		s.ints, s.staging, s.intsCap = p, h, words
	}
	return nil
}

// at is the device address of word w of the index area.
func (s *state) at(w int) cuda.DevicePtr { return s.ints + cuda.DevicePtr(4*w) }

// stage lays the batch's indexes and rope table out in the pinned staging
// buffer and copies them to the device: tokens, attention ends (the
// position each row's attention stops before: its own plus one, or its
// Batch.AttendTo past that), slots and sequence indexes (n each), the rows
// that want logits, the rope cos/sin table (n, rope_dim), each sequence's
// block-table offset, the block tables, and the input embeddings
// (Batch.Embeds: an image's rows, dim floats each, in row order).
func (g *Model) stage(b *model.Batch, nOut int) error {
	c := &g.cfg
	n, s := len(b.Tokens), &g.st
	tables, embeds := 0, 0
	for _, t := range b.BlockTables {
		tables += len(t)
	}
	for _, e := range b.Embeds {
		if e != nil {
			embeds++
		}
	}
	// Every offset but the block tables' depends only on (n, nOut,
	// sequences), so a decode graph captured for those replays as is.
	s.tokens, s.ends, s.slots, s.seq = 0, n, 2*n, 3*n
	s.rows = 4 * n
	s.cs = s.rows + nOut
	s.btOff = s.cs + n*c.RopeDim
	s.bt = s.btOff + len(b.BlockTables)
	s.emb = s.bt + tables
	s.nWords = s.emb + embeds*c.Dim
	if err := g.reserve(n, s.nWords); err != nil {
		return err
	}
	words := unsafe.Slice((*int32)(s.staging), s.nWords)
	floats := unsafe.Slice((*float32)(s.staging), s.nWords)
	bs := g.cache.BlockSize
	for i := range n {
		pos := int(b.Positions[i])
		words[s.tokens+i], words[s.ends+i], words[s.seq+i] = b.Tokens[i], b.Positions[i]+1, b.Seq[i]
		if len(b.AttendTo) != 0 && b.AttendTo[i] > b.Positions[i]+1 {
			words[s.ends+i] = b.AttendTo[i]
		}
		words[s.slots+i] = b.BlockTables[b.Seq[i]][pos/bs]*int32(bs) + int32(pos%bs)
		compute.RopeTable(floats[s.cs+i*c.RopeDim:s.cs+(i+1)*c.RopeDim], pos, c.RopeBase, c.RopeScale, c.RopeFactors)
	}
	off := s.bt
	for j, t := range b.BlockTables {
		words[s.btOff+j] = int32(off - s.bt)
		off += copy(words[off:], t)
	}
	off = s.emb
	for _, e := range b.Embeds {
		off += copy(floats[off:], e)
	}
	r := s.rows
	for i, want := range b.Logits {
		if want {
			words[r] = int32(i)
			r++
		}
	}
	return g.dev.CopyHtoD(s.ints, s.staging, 4*s.nWords, g.stream)
}

// Forward runs the batch as model.Model.Forward does, over the device's
// cache, and stores the logits of the rows with Logits set into logits,
// (NumLogits, VocabSize).
func (g *Model) Forward(b *model.Batch, logits []float32) error {
	nOut, err := g.run(b, len(logits))
	if err != nil || nOut == 0 {
		return err
	}
	s, vocab := &g.st, g.cfg.VocabSize
	if err := g.dev.CopyDtoH(unsafe.Pointer(&logits[0]), s.logits, 4*nOut*vocab, g.stream); err != nil {
		return err
	}
	return g.stream.Sync()
}

// ForwardGreedy runs the batch as Forward does, but takes the greedy token
// of each logit row r with greedy[r] on the device: ids[r] is its id, and
// only the other rows' logits are copied to the host (row r at
// logits[r*vocab:]), saving a vocabulary-sized copy per greedy row. ids[r]
// is -1 for a row without greedy[r], and for one whose logits hold a NaN,
// +Inf or only -Inf: its logits are copied, for the host sampler to say
// what is wrong.
func (g *Model) ForwardGreedy(b *model.Batch, greedy []bool, logits []float32, ids []int32) error {
	nOut, err := g.run(b, len(logits))
	if err != nil || nOut == 0 {
		return err
	}
	if len(greedy) != nOut || len(ids) < nOut {
		return fmt.Errorf("gpu: %d logit rows, %d greedy flags, room for %d ids", nOut, len(greedy), len(ids))
	}
	s, vocab := &g.st, g.cfg.VocabSize
	l := launcher{g: g}
	l.launch("argmax", [3]uint32{uint32(nOut), 1, 1}, 256, s.logits, int32(vocab), s.ids)
	if l.err != nil {
		return l.err
	}
	if err := g.dev.CopyDtoH(unsafe.Pointer(&ids[0]), s.ids, 4*nOut, g.stream); err != nil {
		return err
	}
	if err := g.stream.Sync(); err != nil {
		return err
	}
	for r := range nOut {
		if !greedy[r] {
			ids[r] = -1
		}
		if ids[r] >= 0 {
			continue
		}
		row := s.logits + cuda.DevicePtr(4*r*vocab)
		if err := g.dev.CopyDtoH(unsafe.Pointer(&logits[r*vocab]), row, 4*vocab, g.stream); err != nil {
			return err
		}
	}
	return g.stream.Sync()
}

// run validates and queues the pass over b, leaving the logits of its
// NumLogits rows (returned) in the device scratch; room is the length of
// the caller's logits buffer.
func (g *Model) run(b *model.Batch, room int) (int, error) {
	c := &g.cfg
	if err := b.Validate(c, g.cache.BlockSize, g.cache.NumBlocks); err != nil {
		return 0, err
	}
	n, nOut := len(b.Tokens), b.NumLogits()
	if room < nOut*c.VocabSize {
		return 0, fmt.Errorf("gpu: logits buffer holds %d values, need %d×%d", room, nOut, c.VocabSize)
	}
	if n == 0 {
		return 0, nil
	}
	if err := g.stage(b, nOut); err != nil {
		return 0, err
	}
	// A step with input embeddings launches directly: a graph holds no
	// copies of them.
	var ge *cuda.GraphExec
	if !b.HasEmbeds() {
		ge = g.graph(graphKey{n, nOut, len(b.BlockTables)})
	}
	if ge != nil {
		if err := ge.Launch(g.stream); err != nil {
			return 0, fmt.Errorf("gpu: graph: %w", err)
		}
	} else {
		l := launcher{g: g}
		g.queue(&l, n, nOut, b.Embeds)
		if l.err != nil {
			return 0, l.err
		}
	}
	if nOut == 0 { // no logits to wait for: wait here, before the next step's stage reuses the staging buffer
		return 0, g.stream.Sync()
	}
	return nOut, nil
}

// queue queues the whole pass over the staged batch of n tokens, nOut of
// which want logits; embeds (the batch's Embeds, staged) replace their
// rows' token embeddings.
func (g *Model) queue(l *launcher, n, nOut int, embeds [][]float32) {
	s, dim := &g.st, g.cfg.Dim
	l.getRows(g.w.tokEmbd, s.at(s.tokens), n, s.x)
	for i, k := 0, 0; i < len(embeds); { // each run of rows with embeddings, one copy
		j := i
		for j < len(embeds) && embeds[j] != nil {
			j++
		}
		if j > i {
			l.copy(s.x+cuda.DevicePtr(4*i*dim), s.at(s.emb+k*dim), 4*(j-i)*dim)
			k += j - i
		}
		i = j + 1
	}
	for i := range g.w.layers {
		g.layer(l, i, n)
	}
	if nOut > 0 {
		l.rmsNorm(s.x, g.w.outputNorm, s.xo, s.at(s.rows), nOut, g.cfg.Dim)
		l.matmul(s.logits, s.xo, nOut, g.w.output)
	}
}

// layer queues transformer block i over the n tokens of the batch.
func (g *Model) layer(l *launcher, i, n int) {
	c, w, s := &g.cfg, &g.w.layers[i], &g.st
	qDim, kvDim, hd := c.Heads*c.HeadDim, c.KVDim(), c.HeadDim

	l.rmsNorm(s.x, w.attnNorm, s.xb, 0, n, c.Dim)
	l.matmul(s.q, s.xb, n, w.q)
	l.matmul(s.k, s.xb, n, w.k)
	l.matmul(s.v, s.xb, n, w.v)
	if c.QKVBias {
		l.addBias(s.q, w.qBias, qDim, n*qDim)
		l.addBias(s.k, w.kBias, kvDim, n*kvDim)
		l.addBias(s.v, w.vBias, kvDim, n*kvDim)
	}
	if c.QKNorm {
		l.rmsNorm(s.q, w.qNorm, s.q, 0, n*c.Heads, hd)
		l.rmsNorm(s.k, w.kNorm, s.k, 0, n*c.KVHeads, hd)
	}
	neox := int32(0)
	if c.RopeNeox {
		neox = 1
	}
	l.launch("rope", [3]uint32{uint32(n), uint32(c.Heads), 1}, 64, s.q, s.at(s.cs), int32(hd), int32(c.RopeDim), neox, int32(qDim))
	l.launch("rope", [3]uint32{uint32(n), uint32(c.KVHeads), 1}, 64, s.k, s.at(s.cs), int32(hd), int32(c.RopeDim), neox, int32(kvDim))
	l.launch("kv_store", [3]uint32{uint32(n), 1, 1}, 256, s.k, s.v, g.kc[i], g.vc[i], s.at(s.slots), int32(kvDim))
	scale := float32(1 / math.Sqrt(float64(hd)))
	l.launch("attention", [3]uint32{uint32(n), uint32(c.Heads), 1}, 32, s.q, g.kc[i], g.vc[i], s.att,
		s.at(s.ends), s.at(s.seq), s.at(s.btOff), s.at(s.bt), int32(c.Heads), int32(c.KVHeads), int32(hd),
		int32(g.cache.BlockSize), scale)
	l.matmul(s.ob, s.att, n, w.o)
	l.add(s.x, s.ob, n*c.Dim)

	l.rmsNorm(s.x, w.ffnNorm, s.xb, 0, n, c.Dim)
	l.matmul(s.gate, s.xb, n, w.gate)
	l.matmul(s.up, s.xb, n, w.up)
	l.launch("silu_mul", grid1(n*c.FFNDim), 256, s.gate, s.up, int32(n*c.FFNDim), int32(c.FFNDim))
	l.matmul(s.ob, s.gate, n, w.down)
	l.add(s.x, s.ob, n*c.Dim)
}

// launcher queues kernels on the Model's stream, keeping the first error
// so the forward pass reads as a list.
type launcher struct {
	g   *Model
	err error
}

// launch queues the kernel of that name.
func (l *launcher) launch(name string, grid [3]uint32, threads uint32, args ...any) {
	if l.err != nil {
		return
	}
	f, err := l.g.fn(name)
	if err != nil {
		l.err = err
		return
	}
	l.launchFn(f, grid, threads, args...)
}

// launchFn queues f.
func (l *launcher) launchFn(f *cuda.Function, grid [3]uint32, threads uint32, args ...any) {
	if l.err != nil {
		return
	}
	if err := l.g.dev.Launch(f, grid, [3]uint32{threads, 1, 1}, 0, l.g.stream, args...); err != nil {
		l.err = fmt.Errorf("gpu: %s: %w", f.Name(), err)
	}
}

// copy queues a copy of bytes from src to dst, both on the device.
func (l *launcher) copy(dst, src cuda.DevicePtr, bytes int) {
	if l.err != nil {
		return
	}
	if err := l.g.dev.CopyDtoD(dst, src, bytes, l.g.stream); err != nil {
		l.err = fmt.Errorf("gpu: input embeddings: %w", err)
	}
}

func grid1(total int) [3]uint32 { return [3]uint32{uint32((total + 255) / 256), 1, 1} }

// Activation forms (ACT_* in kernels_matmul.cu), and the one each weight type's
// dot products read: what ggml's CPU backend converts activations to, its
// vec_dot_type. F32 weights read them as they are.
const (
	actQ8_0 int32 = 1 + iota // Q8_0 and Q8_1 blocks of 32
	actQ8_K                  // Q8_K super-blocks of 256
	actF16
	actBF16
)

// matmulKernel names the matrix product for weights of type t: mmvq (over
// ggml's activation blocks) for quantized types, mmv for float ones.
func matmulKernel(t compute.DType) string {
	if m := actModes[t]; m == actQ8_0 || m == actQ8_K {
		return "mmvq_" + kernelTypes[t]
	}
	return "mmv_" + kernelTypes[t]
}

var actModes = map[compute.DType]int32{
	compute.F16: actF16, compute.BF16: actBF16,
	compute.Q4_0: actQ8_0, compute.Q4_1: actQ8_0, compute.Q5_0: actQ8_0, compute.Q5_1: actQ8_0, compute.Q8_0: actQ8_0,
	compute.Q2_K: actQ8_K, compute.Q3_K: actQ8_K, compute.Q4_K: actQ8_K, compute.Q5_K: actQ8_K, compute.Q6_K: actQ8_K,
}

// matmul queues out (m, w.rows) = x (m, w.cols) · wᵀ, mmvMaxM rows a launch:
// for a quantized w, mmvq over x quantized as ggml would; else mmv, over x
// rounded to f16 (bf16) for F16 (BF16) weights.
func (l *launcher) matmul(out, x cuda.DevicePtr, m int, w matrix) {
	s, k, n := &l.g.st, w.cols, w.rows
	mode, convert := actModes[w.typ]
	if convert {
		l.launch("quantize_act", [3]uint32{uint32(m), 1, 1}, 256, x, s.xq, s.aq, s.ad, s.as, s.ab, int32(k), mode)
	}
	if mode == actQ8_0 || mode == actQ8_K {
		qk := 32
		if mode == actQ8_K {
			qk = 256
		}
		grid := [3]uint32{uint32((n + mmvqRows - 1) / mmvqRows), 1, 1}
		for r := 0; r < m; r += mmvMaxM {
			l.launchFn(w.mm, grid, 8*mmvqRows, w.ptr, uint64(w.rowBytes), s.aq+cuda.DevicePtr(r*k),
				s.ad+cuda.DevicePtr(4*r*(k/qk)), s.as+cuda.DevicePtr(4*r*(k/32)), s.ab+cuda.DevicePtr(4*r*(k/16)),
				out+cuda.DevicePtr(4*r*n), int32(k), int32(n), int32(min(mmvMaxM, m-r)))
		}
		return
	}
	if convert {
		x = s.xq
	}
	grid := [3]uint32{uint32((n + mmvWarps - 1) / mmvWarps), 1, 1}
	for r := 0; r < m; r += mmvMaxM {
		l.launchFn(w.mm, grid, 32*mmvWarps, w.ptr, uint64(w.rowBytes), x+cuda.DevicePtr(4*r*k),
			out+cuda.DevicePtr(4*r*n), int32(k), int32(n), int32(min(mmvMaxM, m-r)))
	}
}

// getRows queues out (n, w.cols) = the rows idx[0..n) of w, dequantized.
func (l *launcher) getRows(w matrix, idx cuda.DevicePtr, n int, out cuda.DevicePtr) {
	l.launchFn(w.getRows, [3]uint32{uint32(n), 1, 1}, 128, w.ptr, uint64(w.rowBytes), idx, int32(0), out, int32(w.cols))
}

// rmsNorm queues y row r = RMSNorm(x row idx[r] (or r when idx is 0)) * w
// for rows of width values.
func (l *launcher) rmsNorm(x, w, y, idx cuda.DevicePtr, rows, width int) {
	l.launch("rms_norm", [3]uint32{uint32(rows), 1, 1}, 256, x, w, y, idx, int32(width), int32(width), int32(width), l.g.cfg.NormEps)
}

func (l *launcher) addBias(x, b cuda.DevicePtr, width, total int) {
	l.launch("add_bias", grid1(total), 256, x, b, int32(width), int32(total))
}

func (l *launcher) add(x, y cuda.DevicePtr, total int) {
	l.launch("add", grid1(total), 256, x, y, int32(total))
}
