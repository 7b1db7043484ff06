package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// scaleOffsets lists the byte offsets of the f16 scale fields in a block of
// each weight type with a block dot product.
var scaleOffsets = map[DType][]int{
	Q4_0: {0}, Q4_1: {0, 2}, Q5_0: {0}, Q5_1: {0, 2}, Q8_0: {0},
	Q2_K: {80, 82}, Q3_K: {108}, Q4_K: {0, 2}, Q5_K: {0, 2}, Q6_K: {208},
	IQ4_NL: {0}, IQ4_XS: {0},
}

var dotTypes = []DType{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS}

// randomTensor is a weight tensor "w" [k, n] of randomWeights.
func randomTensor(rng *rand.Rand, typ DType, n, k int) *Tensor {
	return &Tensor{Name: "w", Type: typ, Shape: []int{k, n}, Data: randomWeights(rng, typ, n, k)}
}

// randomWeights returns rows×k values of typ: random quant bytes with every
// scale field a random finite half of magnitude up to about 1/4 (MXFP4:
// randomMXFP4's blocks).
func randomWeights(rng *rand.Rand, typ DType, rows, k int) []byte {
	if typ == MXFP4 { // E8M0 scales near 1, and edge ones (randomMXFP4)
		return randomMXFP4(rng, rows, k)
	}
	size, err := typ.RowSize(k)
	if err != nil {
		panic(err)
	}
	b := make([]byte, rows*size)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	switch typ {
	case F32:
		for i := 0; i < len(b); i += 4 {
			putF32(b[i:], float32(rng.NormFloat64()))
		}
	case F16:
		for i := 0; i < len(b); i += 2 {
			putF16(b[i:], FP32ToFP16(float32(rng.NormFloat64())))
		}
	case BF16:
		for i := 0; i < len(b); i += 2 {
			putF16(b[i:], FP32ToBF16(float32(rng.NormFloat64())))
		}
	}
	if offs := scaleOffsets[typ]; offs != nil {
		for off := 0; off < len(b); off += typ.TypeSize() {
			for _, s := range offs {
				putF16(b[off+s:], FP32ToFP16(float32(rng.NormFloat64()/16)))
			}
		}
	}
	return b
}

func putF32(b []byte, f float32) {
	u := math.Float32bits(f)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

func randomActs(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// quantizedRow quantizes one activation row to typ's vec_dot_type.
func quantizedRow(typ DType, x []float32) any {
	switch {
	case vecDotQ8_0Kernel(typ) != nil:
		y := make([]blockQ8_0, len(x)/32)
		quantizeRowQ8_0(x, y)
		return y
	case vecDotQ8_1Kernel(typ) != nil:
		y := make([]blockQ8_1, len(x)/32)
		quantizeRowQ8_1(x, y)
		return y
	default:
		y := make([]blockQ8_K, len(x)/QK_K)
		quantizeRowQ8_K(x, y)
		return y
	}
}

// dequantizedRow is the value each quantized activation stands for, d·q,
// computed independently of the kernels.
func dequantizedRow(blocks any) []float64 {
	var out []float64
	switch y := blocks.(type) {
	case []blockQ8_0:
		for _, b := range y {
			for _, q := range b.qs {
				out = append(out, float64(b.d)*float64(q))
			}
		}
	case []blockQ8_1:
		for _, b := range y {
			for _, q := range b.qs {
				out = append(out, float64(b.d)*float64(q))
			}
		}
	case []blockQ8_K:
		for _, b := range y {
			for _, q := range b.qs {
				out = append(out, float64(b.d)*float64(q))
			}
		}
	}
	return out
}

// vecDot runs typ's kernel (its batch kernel when batch is set) on one row.
func vecDot(typ DType, batch bool, w []byte, blocks any) float32 {
	switch y := blocks.(type) {
	case []blockQ8_0:
		return vecDotQ8_0Kernel(typ)(w, y)
	case []blockQ8_1:
		return vecDotQ8_1Kernel(typ)(w, y)
	case []blockQ8_K:
		if batch {
			return vecDotQ8_KBatchKernel(typ)(w, y)
		}
		return vecDotQ8_KKernel(typ)(w, y)
	}
	panic("unreachable")
}

// TestVecDot checks every block dot product against the float64 dot of the
// dequantized weights with the dequantized activations. They differ only by
// float32 rounding (and for Q4_1/Q5_1 by the f16 rounding of d·Σq).
func TestVecDot(t *testing.T) {
	const k = 1024
	type kernel struct {
		typ   DType
		batch bool
	}
	kernels := []kernel{{Q2_K, true}, {Q4_K, true}}
	for _, typ := range dotTypes {
		kernels = append(kernels, kernel{typ, false})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kn := range kernels {
		name := kn.typ.String()
		if kn.batch {
			name += "/batch"
		}
		t.Run(name, func(t *testing.T) {
			worst := 0.0
			for range 50 {
				w := randomWeights(rng, kn.typ, 1, k)
				wf := make([]float32, k)
				if err := Dequantize(kn.typ, w, wf); err != nil {
					t.Fatal(err)
				}
				blocks := quantizedRow(kn.typ, randomActs(rng, k))
				xf := dequantizedRow(blocks)
				var want, scale float64
				for i := range wf {
					want += float64(wf[i]) * xf[i]
					scale += math.Abs(float64(wf[i]) * xf[i])
				}
				got := vecDot(kn.typ, kn.batch, w, blocks)
				rel := math.Abs(float64(got)-want) / scale
				worst = max(worst, rel)
				if rel > 1e-4 {
					t.Fatalf("dot %g, want %g (|Δ|/Σ|w·x| = %.2g)", got, want, rel)
				}
			}
			t.Logf("max |Δ|/Σ|w·x| = %.2g", worst)
		})
	}
}

// filledBlock returns n values of fill, but for those set names.
func filledBlock(n int, fill float32, set map[int]float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = fill
	}
	for i, v := range set {
		x[i] = v
	}
	return x
}

// TestQuantizeActivations pins the activation quantizers on hand-checked
// blocks. Q8_0 and Q8_1 use x86 ggml's 127/amax and round half to even
// (2.5 → 2, 3.5 → 4); Q8_K maps the first value of largest magnitude to ∓127.
func TestQuantizeActivations(t *testing.T) {
	block := func(fill float32, set map[int]float32) []float32 { return filledBlock(32, fill, set) }
	q8 := []struct {
		name  string
		x     []float32
		d     float32 // f16-rounded scale
		q     map[int]int8
		other int8 // every quant not in q
		sum   int32
	}{
		{"zeros", block(0, nil), 0, nil, 0, 0},
		// id = 0.127: 1000 → 127, 1 → 0.127 → 0; d = f16(1000/127) = 7.875.
		{"one huge value", block(1, map[int]float32{5: 1000}), 7.875, map[int]int8{5: 127}, 0, 127},
		// amax 2, id 63.5: −2 → −127, 1.5 → 95.25 → 95, 0.25 → 15.875 → 16;
		// d = f16(2/127) = 1032·2^-16.
		{"negative max", block(0.25, map[int]float32{3: -2, 7: 1.5}), 0.0157470703125,
			map[int]int8{3: -127, 7: 95}, 16, -127 + 95 + 30*16},
		// amax 127, id 1: halves round to even.
		{"ties to even", block(0, map[int]float32{0: 127, 1: 2.5, 2: 3.5, 3: -2.5, 4: 0.5}), 1,
			map[int]int8{0: 127, 1: 2, 2: 4, 3: -2, 4: 0}, 0, 131},
	}
	for _, tc := range q8 {
		t.Run("Q8_0/"+tc.name, func(t *testing.T) {
			y := make([]blockQ8_0, 1)
			quantizeRowQ8_0(tc.x, y)
			checkQ8(t, y[0].d, y[0].qs[:], tc.d, tc.q, tc.other)
		})
		t.Run("Q8_1/"+tc.name, func(t *testing.T) {
			y := make([]blockQ8_1, 1)
			quantizeRowQ8_1(tc.x, y)
			checkQ8(t, y[0].d, y[0].qs[:], tc.d, tc.q, tc.other)
			// s = f16(d·Σq) with the unrounded d = amax/127.
			var amax float32
			for _, v := range tc.x {
				amax = max(amax, abs32(v))
			}
			if want := RoundF16(amax / 127 * float32(tc.sum)); y[0].s != want {
				t.Errorf("s = %g, want %g", y[0].s, want)
			}
		})
	}

	bigBlock := func(fill float32, set map[int]float32) []float32 { return filledBlock(QK_K, fill, set) }
	qk := []struct {
		name     string
		x        []float32
		d        float32
		q        map[int]int8
		other    int8
		bsum0    int16 // bsums[0]; the others are 16·other
		bsumRest int16
	}{
		{"zeros", bigBlock(0, nil), 0, nil, 0, 0, 0},
		// iscale = −127e-6: 1e6 → −127, 1 → −0.000127 → 0; d = 1/iscale.
		{"one huge value", bigBlock(1, map[int]float32{10: 1e6}), 1 / (-127 / float32(1e6)), map[int]int8{10: -127}, 0, -127, 0},
		// max −4, iscale 31.75: 2 → 63.5 → 64 (even), 1 → 31.75 → 32,
		// 0.5 → 15.875 → 16.
		{"negative max", bigBlock(0.5, map[int]float32{0: -4, 1: 2, 2: 1}), 1 / float32(31.75),
			map[int]int8{0: -127, 1: 64, 2: 32}, 16, -127 + 64 + 32 + 13*16, 256},
		// ±3: the first one sets the sign.
		{"first max wins", bigBlock(0, map[int]float32{0: 3, 1: -3}), 1 / (-127 / float32(3)),
			map[int]int8{0: -127, 1: 127}, 0, 0, 0},
	}
	for _, tc := range qk {
		t.Run("Q8_K/"+tc.name, func(t *testing.T) {
			y := make([]blockQ8_K, 1)
			y[0].bsums[3] = 99 // stale scratch must be overwritten
			quantizeRowQ8_K(tc.x, y)
			checkQ8(t, y[0].d, y[0].qs[:], tc.d, tc.q, tc.other)
			for j, s := range y[0].bsums {
				want := tc.bsumRest
				if j == 0 {
					want = tc.bsum0
				}
				if s != want {
					t.Errorf("bsums[%d] = %d, want %d", j, s, want)
				}
			}
		})
	}
}

func checkQ8(t *testing.T, d float32, qs []int8, wantD float32, want map[int]int8, other int8) {
	t.Helper()
	if d != wantD {
		t.Errorf("d = %g, want %g", d, wantD)
	}
	for j, q := range qs {
		w, ok := want[j]
		if !ok {
			w = other
		}
		if q != w {
			t.Errorf("qs[%d] = %d, want %d", j, q, w)
		}
	}
}

// TestMatMulRows checks that MatMul is batch-invariant: for m rows, split
// over several workers, each row gets bit for bit what it gets alone on one
// worker, which for block weights is its one-row dot product. With GGMLBatch
// the Q2_K and Q4_K rows in whole groups of four take the batch kernel.
func TestMatMulRows(t *testing.T) {
	const k, n = 512, 27 // n not a multiple of the workers
	rng := rand.New(rand.NewPCG(3, 4))
	types := append([]DType{F32, F16, BF16}, dotTypes...)
	for _, typ := range types {
		w := randomTensor(rng, typ, n, k)
		big := &Tensor{Name: "big", Type: typ, Shape: []int{k, 300}, Data: randomWeights(rng, typ, 300, k)}
		rb := w.RowBytes()
		for _, m := range []int{1, 4, 7, 70} {
			for _, ggml := range []bool{false, true} {
				if ggml && vecDotQ8_KBatchKernel(typ) == nil {
					continue
				}
				t.Run(fmt.Sprintf("%s/m=%d/ggml=%v", typ, m, ggml), func(t *testing.T) {
					x := randomActs(rng, m*k)
					for _, w := range []*Tensor{w, big} {
						n := w.Rows()
						out := make([]float32, m*n)
						mm := NewMatMuler(3)
						mm.GGMLBatch = ggml
						if err := mm.MatMul(out, x, m, w); err != nil {
							t.Fatal(err)
						}
						single := NewMatMuler(1)
						for row := range m {
							xr := x[row*k : (row+1)*k]
							want := make([]float32, n)
							if err := single.MatMul(want, xr, 1, w); err != nil {
								t.Fatal(err)
							}
							batch := ggml && m >= 4 && row < m-m%4
							// Block types run by the panel kernels are checked against
							// the row alone (its x1 kernel); TestPanelKernels checks
							// those against the reference dot products.
							float := typ == F32 || typ == F16 || typ == BF16
							if (!float && panelKernelFor(typ, hostISA) == nil) || batch {
								blocks := quantizedRow(typ, xr)
								for r := range n {
									want[r] = vecDot(typ, batch, w.Data[r*rb:(r+1)*rb], blocks)
								}
							}
							for r, v := range want {
								if got := out[row*n+r]; math.Float32bits(got) != math.Float32bits(v) {
									t.Fatalf("%s: out[%d][%d] = %g, row alone %g", w.Name, row, r, got, v)
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestMatMulOddWidth checks batch invariance for float weights whose rows
// are not a whole number of 16-byte groups (k = 37), which the dequantized
// tiles pad so that every row is summed in the same order.
func TestMatMulOddWidth(t *testing.T) {
	const k, n, m = 37, 303, 5 // 101 rows per worker
	rng := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []DType{F32, F16, BF16} {
		t.Run(typ.String(), func(t *testing.T) {
			w := randomTensor(rng, typ, n, k)
			x := randomActs(rng, m*k)
			out := make([]float32, m*n)
			if err := NewMatMuler(3).MatMul(out, x, m, w); err != nil {
				t.Fatal(err)
			}
			single := NewMatMuler(1)
			want := make([]float32, n)
			for row := range m {
				if err := single.MatMul(want, x[row*k:(row+1)*k], 1, w); err != nil {
					t.Fatal(err)
				}
				for r, v := range want {
					if got := out[row*n+r]; math.Float32bits(got) != math.Float32bits(v) {
						t.Fatalf("out[%d][%d] = %g, row alone %g", row, r, got, v)
					}
				}
			}
		})
	}
}

// TestMatMulFloatActivations checks the F16 and BF16 paths against a float64
// product of the dequantized weights with activations rounded to the weight
// type, which is what ggml multiplies.
func TestMatMulFloatActivations(t *testing.T) {
	const k, n, m = 256, 9, 3
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []DType{F16, BF16} {
		t.Run(typ.String(), func(t *testing.T) {
			w := randomTensor(rng, typ, n, k)
			wf := make([]float32, k*n)
			if err := Dequantize(typ, w.Data, wf); err != nil {
				t.Fatal(err)
			}
			x := randomActs(rng, m*k)
			out := make([]float32, m*n)
			if err := NewMatMuler(2).MatMul(out, x, m, w); err != nil {
				t.Fatal(err)
			}
			round := func(v float32) float32 { return FP16ToFP32(FP32ToFP16(v)) }
			if typ == BF16 {
				round = func(v float32) float32 { return BF16ToFP32(FP32ToBF16(v)) }
			}
			for row := range m {
				for r := range n {
					var want, scale float64
					for i := range k {
						p := float64(wf[r*k+i]) * float64(round(x[row*k+i]))
						want += p
						scale += math.Abs(p)
					}
					if d := math.Abs(float64(out[row*n+r]) - want); d > 1e-6*scale {
						t.Fatalf("out[%d][%d] = %g, want %g", row, r, out[row*n+r], want)
					}
				}
			}
		})
	}
}

// TestMatMulAllocs checks that a warm MatMuler allocates nothing for a
// quantized product.
func TestMatMulAllocs(t *testing.T) {
	const k, n, m = 512, 64, 5
	rng := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []DType{Q8_0, Q4_1, Q4_K} {
		w := randomTensor(rng, typ, n, k)
		x, out := randomActs(rng, m*k), make([]float32, m*n)
		mm := NewMatMuler(4)
		// A helper that exits after idleExit and starts again allocates its
		// goroutine: on a loaded machine a pause between runs can be that
		// long. Keep the helpers parked instead.
		mm.crew.idleExit = time.Hour
		if err := mm.MatMul(out, x, m, w); err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(20, func() { _ = mm.MatMul(out, x, m, w) }); a != 0 {
			t.Errorf("%s: %v allocations per warm MatMul, want 0", typ, a)
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	q4 := &Tensor{Name: "q4", Type: Q4_0, Shape: []int{64, 2}, Data: make([]byte, 2*36)}
	tests := []struct {
		name   string
		w      *Tensor
		x, out int
	}{
		{"short x", q4, 63, 2},
		{"short out", q4, 64, 1},
		{"short data", &Tensor{Name: "t", Type: Q4_0, Shape: []int{64, 2}, Data: make([]byte, 71)}, 64, 2},
		{"partial block", &Tensor{Name: "t", Type: Q4_0, Shape: []int{48, 1}, Data: make([]byte, 36)}, 48, 1},
		{"unknown type", &Tensor{Name: "t", Type: DType(99), Shape: []int{64, 1}, Data: make([]byte, 256)}, 64, 1},
		{"no dequantizer", &Tensor{Name: "t", Type: Q8_1, Shape: []int{32, 1}, Data: make([]byte, 64)}, 32, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := NewMatMuler(2).MatMul(make([]float32, tc.out), make([]float32, tc.x), 1, tc.w)
			if err == nil {
				t.Fatal("MatMul succeeded, want an error")
			}
		})
	}
}

// BenchmarkMatMul reports the reference kernels' speed for one 2048×2048
// weight matrix: decode (m = 1) and a 64-token prefill (m = 64).
func BenchmarkMatMul(b *testing.B) {
	const k, n = 2048, 2048
	rng := rand.New(rand.NewPCG(9, 10))
	for _, typ := range []DType{Q4_0, Q8_0, Q4_K, Q6_K, F16, F32} {
		w := randomTensor(rng, typ, n, k)
		for _, m := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/m=%d", typ, m), func(b *testing.B) {
				x, out := randomActs(rng, m*k), make([]float32, m*n)
				mm := NewMatMuler(1)
				for b.Loop() {
					if err := mm.MatMul(out, x, m, w); err != nil {
						b.Fatal(err)
					}
				}
				s := b.Elapsed().Seconds()
				b.ReportMetric(2*float64(m)*k*n*float64(b.N)/s/1e9, "GFLOP/s")
				b.ReportMetric(float64(m)*float64(b.N)/s, "rows/s")
			})
		}
	}
}
