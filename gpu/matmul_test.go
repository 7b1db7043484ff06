package gpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/testmodels"
)

// TestMatMulExact: for every quantized weight type the device's matrix
// product (quantize_act, then mmvq) equals compute's, which is ggml's
// arithmetic, bit for bit; for F16 and BF16 weights (mmv over rounded
// activations) it agrees to float rounding. Parity with llama.cpp on
// quantized models depends on the first: the next layer quantizes the
// activations again, so a last-bit difference can move a quant a whole
// step. 11 activation rows cover a launch of mmvMaxM rows and a partial one.
func TestMatMulExact(t *testing.T) {
	dev := openDevice(t)
	mm := compute.NewMatMuler(1)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []string{"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q4_K_S", "Q5_K_S", "Q6_K", "F16", "BF16"} {
		t.Run(typ, func(t *testing.T) {
			m, g := load(t, dev, testmodels.Path(t, "synthetic/synth-llama-tiny256-"+typ+".gguf"), 4, 0)
			const rows = 11
			if err := g.reserve(rows, 0); err != nil {
				t.Fatal(err)
			}
			for _, wt := range []struct {
				cpu *compute.Tensor
				dev matrix
			}{{m.Weights.Layers[0].Q, g.w.layers[0].q}, {m.Weights.Layers[1].Down, g.w.layers[1].down}} {
				x := make([]float32, rows*wt.cpu.Cols())
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				want := make([]float32, rows*wt.cpu.Rows())
				if err := mm.MatMul(want, x, rows, wt.cpu); err != nil {
					t.Fatal(err)
				}
				got := deviceMatMul(t, g, x, rows, wt.dev)
				exact := wt.cpu.Type != compute.F16 && wt.cpu.Type != compute.BF16
				var worst, top float64
				for i := range got {
					if exact && math.Float32bits(got[i]) != math.Float32bits(want[i]) && got[i] != want[i] {
						t.Fatalf("%s: row %d output %d: device %v, compute %v", wt.cpu.Name, i/wt.cpu.Rows(), i%wt.cpu.Rows(), got[i], want[i])
					}
					worst = max(worst, math.Abs(float64(got[i]-want[i])))
					top = max(top, math.Abs(float64(want[i])))
				}
				t.Logf("%s (%s): max |Δ| %.3g of max |y| %.3g", wt.cpu.Name, wt.cpu.Type, worst, top)
				if worst > 1e-5*top {
					t.Errorf("%s: max |Δ| %.3g exceeds float rounding (max |y| %.3g)", wt.cpu.Name, worst, top)
				}
			}
		})
	}
}

// deviceMatMul runs launcher.matmul over the host rows x (rows, w.cols)
// and returns the result (rows, w.rows).
func deviceMatMul(t *testing.T, g *Model, x []float32, rows int, w matrix) []float32 {
	t.Helper()
	dx, err := g.alloc(4 * len(x))
	if err != nil {
		t.Fatal(err)
	}
	dy, err := g.alloc(4 * rows * w.rows)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.dev.CopyHtoD(dx, unsafe.Pointer(&x[0]), 4*len(x), nil); err != nil {
		t.Fatal(err)
	}
	l := launcher{g: g}
	l.matmul(dy, dx, rows, w)
	if l.err != nil {
		t.Fatal(l.err)
	}
	got := make([]float32, rows*w.rows)
	if err := g.dev.CopyDtoH(unsafe.Pointer(&got[0]), dy, 4*len(got), g.stream); err != nil {
		t.Fatal(err)
	}
	if err := g.stream.Sync(); err != nil {
		t.Fatal(err)
	}
	return got
}
