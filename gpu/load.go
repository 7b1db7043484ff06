package gpu

import (
	"embed"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/model"
)

// kernelFiles are the CUDA sources, in the order they are joined into
// kernelSource: each uses the types, macros and helpers of those before it
// (kernels_dequant.cu says what each holds).
var kernelFiles = []string{"kernels_dequant.cu", "kernels_matmul.cu", "kernels_layer.cu"}

//go:embed kernels_dequant.cu kernels_matmul.cu kernels_layer.cu
var kernelFS embed.FS

// kernelSource is the one translation unit NVRTC (and the emulator, and
// TestKernelsCompile) compiles: kernelFiles joined, each after a #line
// directive so diagnostics name the file and line it came from.
var kernelSource = joinKernels(kernelFS, kernelFiles)

func joinKernels(fsys embed.FS, names []string) string {
	var b strings.Builder
	for _, name := range names {
		src, err := fsys.ReadFile(name)
		if err != nil {
			panic(err) // a name missing from the go:embed line above
		}
		fmt.Fprintf(&b, "#line 1 \"%s\"\n", name)
		b.Write(src)
	}
	return b.String()
}

// Config is the shape of a Model's KV cache, and how it runs.
type Config struct {
	NumBlocks     int // device blocks
	BlockSize     int // tokens per block
	NumHostBlocks int // pinned host blocks for swap (0: no swapping)
	// NoGraphs launches every kernel of every step, instead of replaying a
	// CUDA graph captured for each decode shape (see Forward).
	NoGraphs bool
}

// Model is a model.Model loaded on a device. See the package comment.
type Model struct {
	cfg        model.Config
	cache      Config
	graphs     map[graphKey]*cuda.GraphExec // captured decode steps, dropped when the scratch moves
	captureErr error                        // why graphs were turned off, if a capture failed
	dev        *cuda.Device
	stream     *cuda.Stream
	mod        *cuda.Module
	fns        map[string]*cuda.Function

	w     weights
	kc    []cuda.DevicePtr // (layers) keys: (num_blocks*block_size, kv_dim) halves
	vc    []cuda.DevicePtr // (layers) values, the same
	hostK []unsafe.Pointer // (layers) pinned host tier: (num_host_blocks*block_size, kv_dim) halves
	hostV []unsafe.Pointer

	st    state            // device scratch, grown to the largest batch seen
	owned []cuda.DevicePtr // every device allocation, freed by Close
}

// matrix is a weight matrix in device memory, in its stored type, with
// the kernels that read that type (looked up once, at load).
type matrix struct {
	ptr      cuda.DevicePtr
	typ      compute.DType
	rows     int // n: outputs
	cols     int // k: inputs
	rowBytes int
	mm       *cuda.Function // its matrix product (matmulKernel)
	getRows  *cuda.Function // its row dequantizer
}

type layerWeights struct {
	attnNorm, ffnNorm   cuda.DevicePtr // (dim)
	q, k, v, o          matrix
	qBias, kBias, vBias cuda.DevicePtr // 0 unless Config.QKVBias
	qNorm, kNorm        cuda.DevicePtr // (head_dim); 0 unless Config.QKNorm
	gate, up, down      matrix
}

type weights struct {
	tokEmbd    matrix
	outputNorm cuda.DevicePtr
	output     matrix
	layers     []layerWeights
}

// Features is what the CUDA forward pass implements: the plain llama
// transformer with rotate-half or adjacent rope (linear scaling and
// per-frequency factors, both folded into the rope table the host
// computes), q/k/v biases and q/k norms, and the matrices a loader has
// split or shared (fused q/k/v and gate/up, a tied output). Load refuses a
// model with any other feature of model.Features, by name.
const Features = model.RopeNeox | model.RopeScaling | model.RopeFactors | model.LongRoPE |
	model.QKVBias | model.QKNorm | model.FusedQKV | model.FusedGateUp | model.TiedOutput

// kernelTypes maps the weight types the kernels read to their name suffix.
var kernelTypes = map[compute.DType]string{
	compute.F32: "f32", compute.F16: "f16", compute.BF16: "bf16",
	compute.Q4_0: "q4_0", compute.Q4_1: "q4_1", compute.Q5_0: "q5_0", compute.Q5_1: "q5_1", compute.Q8_0: "q8_0",
	compute.Q2_K: "q2_k", compute.Q3_K: "q3_k", compute.Q4_K: "q4_k", compute.Q5_K: "q5_k", compute.Q6_K: "q6_k",
}

// Load compiles the kernels for dev, copies m's weights to it and allocates
// the KV cache. m stays the caller's; the Model keeps only its Config.
func Load(m *model.Model, dev *cuda.Device, cc Config) (g *Model, err error) {
	c := &m.Config
	if err := model.CheckFeatures("CUDA", Features, m); err != nil {
		return nil, fmt.Errorf("gpu: %w (it runs on the CPU only)", err)
	}
	switch {
	case cc.NumBlocks <= 0 || cc.BlockSize <= 0 || cc.NumHostBlocks < 0:
		return nil, fmt.Errorf("gpu: cache of %d blocks of %d tokens (%d on the host)", cc.NumBlocks, cc.BlockSize, cc.NumHostBlocks)
	case c.HeadDim > 256:
		return nil, fmt.Errorf("gpu: head dim %d > 256 is not supported by the attention kernel", c.HeadDim)
	}
	if need, free, ok := fits(m, dev, cc); !ok {
		return nil, fmt.Errorf("gpu: the model and its KV cache need %.2f GiB, %s has %.2f GiB free", gib(need), dev.Name(), gib(free))
	}
	g = &Model{cfg: *c, cache: cc, dev: dev, fns: map[string]*cuda.Function{}, graphs: map[graphKey]*cuda.GraphExec{}}
	defer func() {
		if err != nil {
			g.Close()
			g = nil
		}
	}()
	if g.stream, err = dev.NewStream(); err != nil {
		return g, err
	}
	// --fmad=false: no product is fused into an add unless the source says
	// fmaf, so the last bits are ggml's (and the emulator's, which builds
	// with -ffp-contract=off).
	image, err := dev.Compile(kernelSource, "kernels.cu", "--std=c++14", "--fmad=false")
	if err != nil {
		return g, fmt.Errorf("gpu: kernels: %w", err)
	}
	if g.mod, err = dev.LoadModule(image); err != nil {
		return g, fmt.Errorf("gpu: kernels: %w", err)
	}
	if err = g.uploadWeights(m.Weights); err != nil {
		return g, err
	}
	return g, g.allocCache()
}

// fits estimates the device memory Load needs: the weights, the cache and
// a margin for scratch, against what the device has free.
func fits(m *model.Model, dev *cuda.Device, cc Config) (need, free int64, ok bool) {
	w := m.Weights
	seen := map[*compute.Tensor]bool{}
	add := func(t *compute.Tensor) {
		if t != nil && !seen[t] {
			seen[t] = true
			need += int64(len(t.Data))
		}
	}
	add(w.TokEmbd)
	add(w.Output)
	for i := range w.Layers {
		lw := &w.Layers[i]
		for _, t := range []*compute.Tensor{lw.Q, lw.K, lw.V, lw.O, lw.Gate, lw.Up, lw.Down} {
			add(t)
		}
	}
	c := &m.Config
	need += 2 * 2 * int64(c.Layers) * int64(cc.NumBlocks) * int64(cc.BlockSize) * int64(c.KVDim())
	need += 256 << 20 // scratch for a batch of a few thousand tokens, and the kernels
	free, _, err := dev.MemInfo()
	if err != nil {
		return need, 0, false
	}
	return need, free, need <= free
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// alloc allocates device memory that Close frees.
func (g *Model) alloc(bytes int) (cuda.DevicePtr, error) {
	p, err := g.dev.Alloc(bytes)
	if err != nil {
		return 0, fmt.Errorf("gpu: %d bytes: %w", bytes, err)
	}
	g.owned = append(g.owned, p)
	return p, nil
}

// upload copies b to new device memory.
func (g *Model) upload(b []byte) (cuda.DevicePtr, error) {
	p, err := g.alloc(len(b))
	if err != nil {
		return 0, err
	}
	return p, g.dev.CopyHtoD(p, unsafe.Pointer(&b[0]), len(b), nil)
}

func (g *Model) uploadF32(v []float32) (cuda.DevicePtr, error) {
	if len(v) == 0 {
		return 0, nil
	}
	return g.upload(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)))
}

func (g *Model) uploadMatrix(t *compute.Tensor) (matrix, error) {
	if _, ok := kernelTypes[t.Type]; !ok {
		return matrix{}, fmt.Errorf("gpu: tensor %q: type %s has no CUDA kernel", t.Name, t.Type)
	}
	mm, err := g.fn(matmulKernel(t.Type))
	if err != nil {
		return matrix{}, err
	}
	getRows, err := g.fn("get_rows_" + kernelTypes[t.Type])
	if err != nil {
		return matrix{}, err
	}
	p, err := g.upload(t.Data)
	if err != nil {
		return matrix{}, fmt.Errorf("gpu: tensor %q: %w", t.Name, err)
	}
	return matrix{ptr: p, typ: t.Type, rows: t.Rows(), cols: t.Cols(), rowBytes: t.RowBytes(), mm: mm, getRows: getRows}, nil
}

func (g *Model) uploadWeights(w *model.Weights) error {
	var errs []error
	mat := func(t *compute.Tensor) matrix {
		m, err := g.uploadMatrix(t)
		errs = append(errs, err)
		return m
	}
	vec := func(v []float32) cuda.DevicePtr {
		p, err := g.uploadF32(v)
		errs = append(errs, err)
		return p
	}
	g.w.tokEmbd = mat(w.TokEmbd)
	g.w.outputNorm = vec(w.OutputNorm)
	if w.Output == w.TokEmbd {
		g.w.output = g.w.tokEmbd
	} else {
		g.w.output = mat(w.Output)
	}
	g.w.layers = make([]layerWeights, len(w.Layers))
	for i := range w.Layers {
		lw, d := &w.Layers[i], &g.w.layers[i]
		d.attnNorm, d.ffnNorm = vec(lw.AttnNorm), vec(lw.FFNNorm)
		d.q, d.k, d.v, d.o = mat(lw.Q), mat(lw.K), mat(lw.V), mat(lw.O)
		d.qBias, d.kBias, d.vBias = vec(lw.QBias), vec(lw.KBias), vec(lw.VBias)
		d.qNorm, d.kNorm = vec(lw.QNorm), vec(lw.KNorm)
		d.gate, d.up, d.down = mat(lw.Gate), mat(lw.Up), mat(lw.Down)
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// allocCache allocates each layer's K and V blocks on the device (zeroed)
// and in pinned host memory.
func (g *Model) allocCache() error {
	c := &g.cfg
	blockBytes := 2 * g.cache.BlockSize * c.KVDim()
	for range c.Layers {
		for _, dst := range []*[]cuda.DevicePtr{&g.kc, &g.vc} {
			p, err := g.alloc(g.cache.NumBlocks * blockBytes)
			if err != nil {
				return fmt.Errorf("gpu: KV cache: %w", err)
			}
			if err := g.dev.Memset(p, 0, g.cache.NumBlocks*blockBytes, g.stream); err != nil {
				return err
			}
			*dst = append(*dst, p)
		}
		if g.cache.NumHostBlocks == 0 {
			continue
		}
		for _, dst := range []*[]unsafe.Pointer{&g.hostK, &g.hostV} {
			p, err := g.dev.HostAlloc(g.cache.NumHostBlocks * blockBytes)
			if err != nil {
				return fmt.Errorf("gpu: host KV tier: %w", err)
			}
			*dst = append(*dst, p)
		}
	}
	return g.stream.Sync()
}

// fn returns the kernel of that name, looked up once.
func (g *Model) fn(name string) (*cuda.Function, error) {
	if f, ok := g.fns[name]; ok {
		return f, nil
	}
	f, err := g.mod.Function(name)
	if err != nil {
		return nil, fmt.Errorf("gpu: kernel %s: %w", name, err)
	}
	g.fns[name] = f
	return f, nil
}

// Close frees the device and host memory and the module; the Device stays
// the caller's.
func (g *Model) Close() error {
	var errs []error
	if g.stream != nil {
		errs = append(errs, g.stream.Sync())
	}
	errs = append(errs, g.dropGraphs())
	for _, p := range append(g.owned, g.st.allocs...) {
		errs = append(errs, g.dev.Free(p))
	}
	g.owned, g.st.allocs = nil, nil
	if g.st.ints != 0 {
		errs = append(errs, g.dev.Free(g.st.ints), g.dev.HostFree(g.st.staging))
		g.st.ints, g.st.staging = 0, nil
	}
	for _, p := range append(g.hostK, g.hostV...) {
		errs = append(errs, g.dev.HostFree(p))
	}
	g.hostK, g.hostV = nil, nil
	if g.mod != nil {
		errs = append(errs, g.mod.Unload())
		g.mod = nil
	}
	if g.stream != nil {
		errs = append(errs, g.stream.Destroy())
		g.stream = nil
	}
	return errors.Join(errs...)
}
