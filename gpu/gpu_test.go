package gpu

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/internal/cudaemu"
	"github.com/troupe-llm/troupe/internal/reftest"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/gguf"
)

// These tests run on a CUDA device, or on the CUDA emulator where there is
// none (see emu_test.go; CI runs them there). Run them on a GPU machine with
//   go test ./gpu -v -run . -bench . -benchtime 20x

// openDevice returns GPU 0 (or the emulator's device), or skips the test.
func openDevice(t testing.TB) *cuda.Device {
	t.Helper()
	cudaemu.Require(t)
	if err := cuda.Available(); err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	dev, err := cuda.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// load opens rel from the test models on dev with a cache of numBlocks.
func load(t testing.TB, dev *cuda.Device, path string, numBlocks, hostBlocks int) (*model.Model, *Model) {
	t.Helper()
	m, _, err := model.LoadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	g, err := Load(m, dev, Config{NumBlocks: numBlocks, BlockSize: 16, NumHostBlocks: hostBlocks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return m, g
}

// teacherForced runs ids as one sequence on blocks 0.. of g's cache: the
// prompt as one batch, then a token a step, as llama.cpp made the
// reference; it returns every row's logits.
func teacherForced(t testing.TB, g *Model, promptLen int, ids []int32, table []int32) []float32 {
	t.Helper()
	out := reftest.TeacherForced(t, g.Forward, g.VocabSize(), promptLen, ids, table)
	if err := g.GraphError(); err != nil { // Forward went on without graphs
		t.Fatalf("CUDA graph capture failed: %v", err)
	}
	return out
}

func identityTable(n int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(i)
	}
	return t
}

// TestLogitParity compares teacher-forced logits on the GPU with llama.cpp's
// reference for every GGUF model with one, within the bounds measured for
// it (testmodels' manifest: the CPU path's, or CUDA's where they differ).
func TestLogitParity(t *testing.T) {
	dev := openDevice(t)
	dir := testmodels.Dir(t)
	for _, r := range testmodels.ReferenceGGUFs(t) {
		name := r.Name()
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, r.Rel)
			if missing := typesWithoutKernel(t, path); len(missing) > 0 {
				t.Skipf("no CUDA kernel for %v yet", missing)
			}
			_, g := load(t, dev, path, 64, 0)
			tol := r.CUDABound()
			for ci, rc := range testmodels.Cases(t, name) {
				ids := append(append([]int32(nil), rc.PromptIDs...), rc.GreedyIDs...)
				got := teacherForced(t, g, len(rc.PromptIDs), ids, identityTable(64))
				worst, worstAbs := testmodels.CompareLogits(t, ci, rc, got)
				t.Logf("case %d: %d rows, max |Δ| %.5f, max |Δ|/std %.4f%% (limit %.3f%%)", ci, rc.LogitRows, worstAbs, worst*100, tol*100)
				if worst > tol {
					t.Errorf("case %d: max |Δ|/std %.6f exceeds %.6f", ci, worst, tol)
				}
			}
		})
	}
}

// typesWithoutKernel returns the weight types of the GGUF file at path that
// the kernels do not read (Load refuses such files, see TestLoadRefusesType).
func typesWithoutKernel(t *testing.T, path string) []compute.DType {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var missing []compute.DType
	for _, ti := range f.Tensors() {
		if _, ok := kernelTypes[ti.Type]; !ok && len(ti.Shape) > 1 && !slices.Contains(missing, ti.Type) {
			missing = append(missing, ti.Type)
		}
	}
	return missing
}

// TestLoadRefusesType: a file with a weight type the kernels do not read
// fails to load with an error that names the tensor and the type.
func TestLoadRefusesType(t *testing.T) {
	dev := openDevice(t)
	m, _, err := model.LoadGGUF(testmodels.Path(t, "synthetic-more/synth-llama-tiny256-IQ4_NL.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, ok := kernelTypes[compute.IQ4_NL]; ok {
		t.Skip("IQ4_NL has a CUDA kernel now: pick another type")
	}
	g, err := Load(m, dev, Config{NumBlocks: 4, BlockSize: 16})
	if err == nil {
		g.Close()
		t.Fatal("Load accepted IQ4_NL weights")
	}
	if !strings.Contains(err.Error(), "IQ4_NL has no CUDA kernel") {
		t.Fatalf("error %q does not name the type", err)
	}
}

// TestBatchInvariance: a sequence's logits are the same bits alone and in a
// ragged batch with others (prefill chunks and decode rows mixed), as the
// runtime's recompute preemption needs.
func TestBatchInvariance(t *testing.T) {
	dev := openDevice(t)
	_, g := load(t, dev, testmodels.Path(t, "synthetic/synth-llama-tiny256-Q4_K_M.gguf"), 64, 0)
	rc := testmodels.Cases(t, "synth-llama-tiny256-Q4_K_M")[0]
	ids := rc.PromptIDs
	alone := teacherForced(t, g, len(ids), ids, identityTable(8))
	vocab := g.VocabSize()
	// The same prompt again on blocks 8.., in chunks of 3, beside a second
	// sequence on blocks 16.. decoding a token a step.
	var b model.Batch
	got := make([]float32, 0, len(alone))
	for start, other := 0, 0; start < len(ids)-1; start += 3 {
		end := min(start+3, len(ids)-1)
		b.Reset()
		b.BlockTables = append(b.BlockTables, identityTable(16)[8:], identityTable(24)[16:])
		b.Add(ids[other%len(ids)], int32(other), 1, true)
		for p := start; p < end; p++ {
			b.Add(ids[p], int32(p), 0, true)
		}
		other++
		logits := make([]float32, (end-start+1)*vocab)
		if err := g.Forward(&b, logits); err != nil {
			t.Fatal(err)
		}
		got = append(got, logits[vocab:]...)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(alone[i]) {
			t.Fatalf("row %d value %d: %v in a batch, %v alone", i/vocab, i%vocab, got[i], alone[i])
		}
	}
}

// TestSwap: blocks swapped out, overwritten on the device and swapped back
// in give the same logits as before.
func TestSwap(t *testing.T) {
	dev := openDevice(t)
	_, g := load(t, dev, testmodels.Path(t, "stories260K.gguf"), 8, 8)
	rc := testmodels.Cases(t, "stories260K")[0]
	ids := rc.PromptIDs
	table := identityTable(4)
	before := teacherForced(t, g, len(ids), ids, table)
	copies := []BlockCopy{{0, 3}, {1, 2}, {2, 1}, {3, 0}}
	if err := g.SwapOut(copies); err != nil {
		t.Fatal(err)
	}
	clobber := append([]int32{ids[0]}, ids[len(ids)/2:]...)
	teacherForced(t, g, len(clobber), clobber, table)
	back := make([]BlockCopy, len(copies))
	for i, c := range copies {
		back[i] = BlockCopy{Src: c.Dst, Dst: c.Src + 4}
	}
	if err := g.SwapIn(back); err != nil {
		t.Fatal(err)
	}
	// The last token again, now reading blocks 4..7.
	var b model.Batch
	b.BlockTables = append(b.BlockTables, identityTable(8)[4:])
	n := len(ids) - 1
	b.Add(ids[n-1], int32(n-1), 0, true)
	logits := make([]float32, g.VocabSize())
	if err := g.Forward(&b, logits); err != nil {
		t.Fatal(err)
	}
	want := before[(n-1)*g.VocabSize():]
	for i := range logits {
		if math.Float32bits(logits[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d after swapping: %v, before %v", i, logits[i], want[i])
		}
	}
}

// copyBandwidth is the device's measured memory bandwidth in GB/s: bytes
// read and written by device-to-device copies of 1 GiB.
func copyBandwidth(b *testing.B, dev *cuda.Device) float64 {
	const n = 1 << 30
	src, err := dev.Alloc(n)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Free(src)
	dst, err := dev.Alloc(n)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Free(dst)
	s, err := dev.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Destroy()
	start, _ := dev.NewEvent()
	end, _ := dev.NewEvent()
	const reps = 10
	dev.CopyDtoD(dst, src, n, s) // warm up
	start.Record(s)
	for range reps {
		if err := dev.CopyDtoD(dst, src, n, s); err != nil {
			b.Fatal(err)
		}
	}
	end.Record(s)
	if err := end.Sync(); err != nil {
		b.Fatal(err)
	}
	ms, err := cuda.ElapsedMillis(start, end)
	if err != nil {
		b.Fatal(err)
	}
	return 2 * n * reps / (float64(ms) / 1e3) / 1e9
}

// BenchmarkDecode decodes at batch 1 and 64 on a synthetic llama-3.2-1b of
// each type (written once into $TROUPE_BENCH_MODELS, default the user
// cache), reporting tokens/s and, at batch 1, the weight bytes read per
// second and that as a percentage of the copy bandwidth (the issue asks
// for at least 50%).
func BenchmarkDecode(b *testing.B) {
	if cudaemu.Active() {
		b.Skip("the CUDA emulator runs kernels on the CPU: it has no GPU speed to measure")
	}
	dev := openDevice(b)
	bw := copyBandwidth(b, dev)
	b.Logf("%s: copy bandwidth %.0f GB/s", dev.Name(), bw)
	for _, typ := range []string{"Q4_K_M", "Q8_0", "F16"} {
		path := synthtest.BenchModel(b, "llama-3.2-1b", typ)
		for _, batch := range []int{1, 64} {
			b.Run(typ+"/batch"+strconv.Itoa(batch), func(b *testing.B) {
				m, g := load(b, dev, path, batch*8+8, 0)
				var weightBytes int64
				for _, l := range m.Weights.Layers {
					weightBytes += int64(len(l.Q.Data) + len(l.K.Data) + len(l.V.Data) + len(l.O.Data) + len(l.Gate.Data) + len(l.Up.Data) + len(l.Down.Data))
				}
				weightBytes += int64(len(m.Weights.Output.Data))
				var bt model.Batch
				logits := make([]float32, batch*g.VocabSize())
				step := func(pos int) {
					bt.Reset()
					for s := range batch {
						bt.BlockTables = append(bt.BlockTables, identityTable(s*8 + 8)[s*8:])
						bt.Add(int32(1+s), int32(pos), int32(s), true)
					}
					if err := g.Forward(&bt, logits); err != nil {
						b.Fatal(err)
					}
				}
				step(0)
				pos := 1
				for b.Loop() {
					step(pos % 128)
					pos++
				}
				tps := float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(tps*float64(batch), "tok/s")
				if batch == 1 {
					b.ReportMetric(tps*float64(weightBytes)/1e9, "weightGB/s")
					b.ReportMetric(100*tps*float64(weightBytes)/1e9/bw, "%bandwidth")
				}
			})
		}
	}
}

// TestArgmax: the device's greedy pick is the host sampler's (the lowest
// index of the largest value) on rows with ties, rows shorter and longer
// than a block, and -1 where the host must look (a NaN, +Inf, only -Inf).
func TestArgmax(t *testing.T) {
	dev := openDevice(t)
	_, g := load(t, dev, testmodels.Path(t, "stories260K.gguf"), 8, 0)
	inf := float32(math.Inf(1))
	const vocab = 1000
	row := func(set map[int]float32) []float32 {
		r := make([]float32, vocab)
		for i := range r {
			r[i] = float32(i%97) / 10
		}
		for i, v := range set {
			r[i] = v
		}
		return r
	}
	allNegInf := make([]float32, vocab)
	for i := range allNegInf {
		allNegInf[i] = -inf
	}
	rows := [][]float32{
		row(nil), // ties of 9.6 at 96, 193, ...: the first
		row(map[int]float32{999: 50}),
		row(map[int]float32{3: 50, 700: 50}),
		row(map[int]float32{500: float32(math.NaN())}),
		row(map[int]float32{10: inf}),
		allNegInf,
	}
	want := []int32{96, 999, 3, -1, -1, -1}
	var flat []float32
	for _, r := range rows {
		flat = append(flat, r...)
	}
	in, err := dev.Alloc(4 * len(flat))
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(in)
	out, err := dev.Alloc(4 * len(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(out)
	if err := dev.CopyHtoD(in, unsafe.Pointer(&flat[0]), 4*len(flat), nil); err != nil {
		t.Fatal(err)
	}
	l := launcher{g: g}
	l.launch("argmax", [3]uint32{uint32(len(rows)), 1, 1}, 256, in, int32(vocab), out)
	if l.err != nil {
		t.Fatal(l.err)
	}
	got := make([]int32, len(rows))
	if err := g.stream.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := dev.CopyDtoH(unsafe.Pointer(&got[0]), out, 4*len(got), nil); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: argmax %d, want %d", i, got[i], want[i])
		}
	}
}

// TestForwardGreedy: greedy rows come back as the argmax of the logits
// Forward gives, the other rows as those logits, in a mixed batch.
func TestForwardGreedy(t *testing.T) {
	dev := openDevice(t)
	_, g := load(t, dev, testmodels.Path(t, "synthetic/synth-llama-tiny256-Q8_0.gguf"), 16, 0)
	rc := testmodels.Cases(t, "synth-llama-tiny256-Q8_0")[0]
	vocab := g.VocabSize()
	batch := func() *model.Batch {
		b := &model.Batch{BlockTables: [][]int32{identityTable(4), identityTable(8)[4:], identityTable(12)[8:]}}
		for s := range 3 {
			for p, id := range rc.PromptIDs[:3+s] {
				b.Add(id, int32(p), int32(s), p == 2+s)
			}
		}
		return b
	}
	want := make([]float32, 3*vocab)
	if err := g.Forward(batch(), want); err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, 3*vocab)
	ids := make([]int32, 3)
	greedy := []bool{true, false, true}
	if err := g.ForwardGreedy(batch(), greedy, logits, ids); err != nil {
		t.Fatal(err)
	}
	for r := range 3 {
		ref := want[r*vocab : (r+1)*vocab]
		if !greedy[r] {
			if ids[r] != -1 || !slices.Equal(logits[r*vocab:(r+1)*vocab], ref) {
				t.Errorf("row %d (not greedy): id %d, logits equal: %v", r, ids[r], slices.Equal(logits[r*vocab:(r+1)*vocab], ref))
			}
			continue
		}
		if best, _ := testmodels.Top2(ref); ids[r] != int32(best) {
			t.Errorf("row %d: device argmax %d, host %d", r, ids[r], best)
		}
	}
}
