package compute

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomMXFP4 returns rows×k values of MXFP4: random codes, exponents
// around 2^-5 (weights of magnitude up to about 0.4), and in the first
// block of every third row one of the edge exponents (subnormal scales,
// the largest ones).
func randomMXFP4(rng *rand.Rand, rows, k int) []byte {
	b := make([]byte, rows*k/32*17)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	edges := []byte{0, 1, 2, 3, 254, 255}
	for off := 0; off < len(b); off += 17 {
		b[off] = byte(117 + rng.IntN(8))
	}
	rb := k / 32 * 17
	for r := 0; r < rows; r += 3 {
		b[r*rb] = edges[(r/3)%len(edges)]
	}
	return b
}

// TestMXFP4Type pins MXFP4's type id, name and block size (ggml's).
func TestMXFP4Type(t *testing.T) {
	got, err := MXFP4.RowSize(64)
	if uint32(MXFP4) != 39 || MXFP4.String() != "MXFP4" || err != nil || got != 34 {
		t.Errorf("MXFP4: id %d, name %s, 64 values take %d bytes (%v); want 39, MXFP4, 34", uint32(MXFP4), MXFP4, got, err)
	}
	if p, ok := ParseDType("MXFP4"); !ok || p != MXFP4 {
		t.Errorf("ParseDType(MXFP4) = %v, %v", p, ok)
	}
	if _, err := MXFP4.RowSize(48); err == nil {
		t.Error("MXFP4 accepted a row of 48 values")
	}
}

// TestE8M0Half checks every exponent's scale against 2^(e−128), and that
// its low 16 bits are zero (packMXFP4 stores it as bf16).
func TestE8M0Half(t *testing.T) {
	for e := range 256 {
		got, want := e8m0Half(uint8(e)), float32(math.Ldexp(1, e-128))
		if got != want || math.Float32bits(got)&0xffff != 0 {
			t.Errorf("e8m0Half(%d) = %g (%#08x), want %g", e, got, math.Float32bits(got), want)
		}
	}
}

// TestDequantMXFP4 checks a block with every code in both nibbles, at a
// normal and a subnormal scale, against value·2^(e−128) from the E2M1
// code (sign bit 3, exponent bits 2..1, mantissa bit 0) decoded here.
func TestDequantMXFP4(t *testing.T) {
	e2m1 := func(c byte) float64 {
		m, ex := float64(c&1), int(c>>1&3)
		v := m / 2
		if ex > 0 {
			v = math.Ldexp(1+m/2, ex-1)
		}
		if c&8 != 0 {
			v = -v
		}
		if v == 0 {
			return 0 // ggml's int8 table: code 8 is +0
		}
		return v
	}
	for _, e := range []byte{0, 1, 100, 127, 128, 200, 255} {
		var b [17]byte
		b[0] = e
		for j := range 16 {
			b[1+j] = byte(j) | byte(15-j)<<4
		}
		var y [32]float32
		Dequantize(MXFP4, b[:], y[:])
		for j := range 16 {
			for i, c := range map[int]byte{j: byte(j), j + 16: byte(15 - j)} {
				want := float32(e2m1(c) * math.Ldexp(1, int(e)-127))
				if y[i] != want || math.Signbit(float64(y[i])) != math.Signbit(float64(want)) {
					t.Errorf("e %d: value %d (code %d) = %g, want %g", e, i, c, y[i], want)
				}
			}
		}
	}
}

// TestQuantizeMXFP4 checks quantize_row_mxfp4_ref's exponent choice and
// rounding on chosen blocks: the exponent makes amax/d fall in [4, 8) (12
// the largest code), each value takes the nearest code, the first one on a
// tie, and a zero block is e = 0 with zero codes.
func TestQuantizeMXFP4(t *testing.T) {
	for _, tc := range []struct {
		name  string
		x     func(j int) float32
		e     byte
		codes [32]byte // expected codes; nil-equivalent zero array means all zero
	}{
		{"zero", func(int) float32 { return 0 }, 0, [32]byte{}},
		{"ones", func(int) float32 { return 1 }, 125, func() (c [32]byte) {
			for j := range c {
				c[j] = 6 // 1/0.125 = 8 = code 6
			}
			return
		}()},
		{"ramp", func(j int) float32 { return float32(j-16) / 4 }, 127, func() (c [32]byte) {
			// amax 4: d = 0.5, x/d = (j−16)/2; the table's |v| are 0, 1, 2,
			// 3, 4, 6, 8, 12 and a tie (0.5, 1.5, 2.5, 3.5, 5, 7) goes to
			// the first index, so −0.5 to +0 (index 0, not 9).
			idx := [17]byte{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 5, 5, 6, 6} // by 2|v|
			for j := range c {
				v := j - 16
				switch {
				case v >= 0:
					c[j] = idx[v]
				case idx[-v] > 0:
					c[j] = idx[-v] | 8
				}
			}
			return
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x [32]float32
			for j := range x {
				x[j] = tc.x(j)
			}
			var b [17]byte
			quantizeMXFP4(&x, &b)
			if b[0] != tc.e {
				t.Errorf("e = %d, want %d", b[0], tc.e)
			}
			for j := range 32 {
				c := b[1+j%16] & 0x0f
				if j >= 16 {
					c = b[1+j%16] >> 4
				}
				if c != tc.codes[j] {
					t.Errorf("value %d (%g): code %d, want %d", j, x[j], c, tc.codes[j])
				}
			}
		})
	}
	// Random blocks: every value's code is a nearest one.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		var x [32]float32
		for j := range x {
			x[j] = float32(rng.NormFloat64() * 0.02)
		}
		var b [17]byte
		quantizeMXFP4(&x, &b)
		var y [32]float32
		dequantMXFP4(b[:], y[:])
		d := e8m0Half(b[0])
		for j, v := range x {
			for _, kv := range kvaluesMXFP4 {
				if math.Abs(float64(float32(kv)*d-v)) < math.Abs(float64(y[j]-v)) {
					t.Fatalf("%g quantized to %g, %g is nearer (e %d)", v, y[j], float32(kv)*d, b[0])
				}
			}
		}
	}
}

// TestVecDotMXFP4 checks the Go block dot product against the float64 dot
// of the dequantized weights and activations.
func TestVecDotMXFP4(t *testing.T) {
	const k = 1024
	rng := rand.New(rand.NewPCG(7, 8))
	for r := range 20 {
		w := randomMXFP4(rng, 2, k)[k/32*17:] // a row with normal exponents only
		x := randomActs(rng, k)
		xq := quantizedRow(MXFP4, x)
		wd := make([]float32, k)
		Dequantize(MXFP4, w, wd)
		var want, mag float64
		for i, a := range dequantizedRow(xq) {
			want += float64(wd[i]) * a
			mag += math.Abs(float64(wd[i]) * a)
		}
		got := vecDot(MXFP4, false, w, xq)
		if diff := math.Abs(float64(got) - want); diff > 1e-6*mag {
			t.Errorf("row %d: got %g, float64 %g (|Δ| %g, Σ|w·x| %g)", r, got, want, diff, mag)
		}
	}
}

// TestMXFP4Kernels checks the MXFP4 panel kernels of every ISA against the
// Go block dot product bit for bit (ggml's repacked mxfp4_8x8 order), on
// random blocks with subnormal and extreme scales among them and on
// activation rows at ±127 and all zero, for 1 to 9 activation rows, each
// also run alone.
func TestMXFP4Kernels(t *testing.T) {
	forKernelShapes(t, rand.NewPCG(43, 44), []DType{MXFP4}, []kernelShape{{8, 1, 1}, {24, 3, 5}, {43, 9, 9}, {16, 7, 4}, {19, 2, 8}, {40, 3, 17},
		{24, 3, 2}, {16, 2, 3}, {19, 2, 6}, {43, 3, 7}}, // and the x2 and x3 tails
		func(t *testing.T, typ DType, shape kernelShape, w *Tensor, x []float32) {
			for _, isa := range hostISAs() {
				pk := panelKernelFor(MXFP4, isa)
				if missingKernel(t, isa, MXFP4, pk == nil) {
					continue
				}
				checked := checkRows(t, isa, MXFP4, w, x, shape.m, false, func(x []float32, m int) []float32 { return panelOutputs(pk, w, x, m) })
				if checked < shape.m*(shape.n/panelRows*panelRows)/2 {
					t.Fatalf("%v: only %d outputs checked", isa, checked)
				}
			}
		})
}

// BenchmarkMatMulMXFP4 measures MatMul on TinyLlama-sized MXFP4 weights
// beside IQ4_NL and Q4_0 (k = 2048, n = 2048) for a decode step (m = 1)
// and a prefill chunk (m = 64), with two workers, per ISA. GFLOP/cpu-s
// divides by the CPU time the process used (steadier on a shared machine).
func BenchmarkMatMulMXFP4(b *testing.B) {
	benchMatMulTypes(b, []DType{MXFP4, IQ4_NL, Q4_0}, func(b *testing.B, isa ISA, out, x []float32, m int, w *Tensor) {
		reportGFLOPs(b, m, w.Rows(), w.Cols(), benchMatMul(b, isa, 2, true, out, x, m, w))
	})
}
