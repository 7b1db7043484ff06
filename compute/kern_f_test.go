package compute

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// floatCase is one float kernel to test: an ISA level and, for BF16 at the
// AVX-512 level on a CPU with AVX512_BF16, whether VDPBF16PS runs.
type floatCase struct {
	isa ISA
	dp  bool
}

func (c floatCase) String() string {
	if c.dp {
		return c.isa.String() + "+bf16"
	}
	return c.isa.String()
}

// floatCases lists the kernels this machine runs for type t, Generic (the
// Go reference) included.
func floatCases(t DType) []floatCase {
	var cs []floatCase
	for _, isa := range append(hostISAs(), Generic) {
		if t == BF16 && isa >= AVX512VNNI && hostBF16 {
			cs = append(cs, floatCase{isa, true})
		}
		cs = append(cs, floatCase{isa, false})
	}
	return cs
}

// use makes c the kernel MatMul picks, until the returned func runs.
func (c floatCase) use() func() {
	savedISA, savedBF16 := hostISA, hostBF16
	hostISA, hostBF16 = c.isa, c.dp
	return func() { hostISA, hostBF16 = savedISA, savedBF16 }
}

// floatWant computes the reference output for every (activation row,
// weight row) of w, in the arithmetic c's kernels implement.
func floatWant(c floatCase, w *Tensor, x []float32, m int) []float32 {
	k, n := w.Cols(), w.Rows()
	want := make([]float32, m*n)
	xr := make([]float32, k)
	xh := make([]uint16, k)
	for t := range m {
		xt := x[t*k : (t+1)*k]
		switch w.Type {
		case F32:
			copy(xr, xt)
		case F16:
			roundRowF16(xt, xr)
		case BF16:
			bf16Split(xt, xr)
			for i, v := range xt {
				xh[i] = FP32ToBF16(v)
			}
		}
		for r := range n {
			if c.dp {
				want[t*n+r] = dotBF16DP(w.Row(r), xh, k)
			} else {
				want[t*n+r] = dotFloat(w.Type, w.Row(r), xr, k)
			}
		}
	}
	return want
}

// TestFloatKernels checks MatMul on F32, F16 and BF16 weights, for every
// kernel this machine runs, against the Go reference of the arithmetic it
// implements, bit for bit, for 1 to 13 and 64 activation rows on 1 and 3
// workers (so also that no output depends on m, on the kernel shape that
// took its row or on the split). k covers whole steps and tails; n covers
// whole groups of rows and leftovers, and at k = 2048 several chunks of
// rows (the kernels prefetch the next chunk); k = 1105 ends in a short,
// odd block of split_kernel's steps (scripts/gen-kern-f.py).
func TestFloatKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ms := []int{1, 2, 3, 4, 5, 6, 7, 8, 13, 64}
	for _, typ := range []DType{F32, F16, BF16} {
		for _, shape := range []struct{ k, n int }{{64, 9}, {37, 27}, {172, 40}, {512, 35}, {8, 5}, {2048, 41}, {1105, 29}} {
			w := &Tensor{Name: "w", Type: typ, Shape: []int{shape.k, shape.n}, Data: randomWeights(rng, typ, shape.n, shape.k)}
			x := randomActs(rng, 64*shape.k)
			for _, c := range floatCases(typ) {
				t.Run(fmt.Sprintf("%v/k%d_n%d/%v", typ, shape.k, shape.n, c), func(t *testing.T) {
					defer c.use()()
					k, n := shape.k, shape.n
					want := floatWant(c, w, x, 64)
					for _, m := range ms {
						if c.isa == Generic && m > 8 {
							continue
						}
						for _, workers := range []int{1, 3} {
							out := make([]float32, m*n)
							if err := NewMatMuler(workers).MatMul(out, x[:m*k], m, w); err != nil {
								t.Fatal(err)
							}
							for i, g := range out {
								if math.Float32bits(g) != math.Float32bits(want[i]) {
									t.Fatalf("m=%d workers=%d: out[%d][%d] = %g, reference %g", m, workers, i/n, i%n, g, want[i])
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestFloatKernelsAgree checks that the AVX2 and AVX-512 FMA kernels and
// the Go reference compute the same bits, on rows whose sums cancel (so
// that any change of order shows).
func TestFloatKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const k, n, m = 1024, 17, 7
	for _, typ := range []DType{F32, F16, BF16} {
		w := randomTensor(rng, typ, n, k)
		x := randomActs(rng, m*k)
		for i := range x {
			x[i] *= float32(math.Exp2(float64(rng.IntN(30) - 15))) // wide range of magnitudes
		}
		var first []float32
		for _, c := range floatCases(typ) {
			if c.dp {
				continue
			}
			restore := c.use()
			out := make([]float32, m*n)
			err := NewMatMuler(2).MatMul(out, x, m, w)
			restore()
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = out
				continue
			}
			for i := range out {
				if math.Float32bits(out[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%v %v: out[%d] = %g, %v gave %g", typ, c, i, out[i], floatCases(typ)[0], first[i])
				}
			}
		}
	}
}

// TestBF16DPDenormals runs the VDPBF16PS kernels on weights and activations
// with denormals, products below 2⁻¹²⁶ and partial sums that cancel into the
// denormal range, against dotBF16DP's flushing.
func TestBF16DPDenormals(t *testing.T) {
	if hostISA < AVX512VNNI || !hostBF16 {
		t.Skip("no AVX512_BF16 on this CPU")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	const k, n, m = 96, 8, 3
	// Even weight rows and the first activation row hold only tiny values,
	// so that flushing shows in their outputs.
	tiny := []float32{0x1p-130, -0x1p-128, 0x1p-64, -0x1p-70, 0x1p-60, 0x1.8p-63, 0x1p-126, 0}
	all := append([]float32{1, -1, 0x1p-20}, tiny...)
	pick := func(tinyOnly bool) float32 {
		if tinyOnly {
			return tiny[rng.IntN(len(tiny))]
		}
		return all[rng.IntN(len(all))]
	}
	data := make([]byte, 2*k*n)
	for i := 0; i < len(data); i += 2 {
		putF16(data[i:], FP32ToBF16(pick(i/(2*k)%2 == 0)))
	}
	w := &Tensor{Name: "w", Type: BF16, Shape: []int{k, n}, Data: data}
	x := make([]float32, m*k)
	for i := range x {
		x[i] = pick(i < k)
	}
	c := floatCase{AVX512VNNI, true}
	defer c.use()()
	want := floatWant(c, w, x, m)
	out := make([]float32, m*n)
	if err := NewMatMuler(1).MatMul(out, x, m, w); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
			t.Fatalf("out[%d][%d] = %g (%#x), reference %g (%#x)", i/n, i%n, out[i], math.Float32bits(out[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestFMAExact32 checks fmaExact32 against exact big.Float arithmetic
// rounded once, on random operands and on sums that land on or near a
// float32 halfway point (where rounding through float64 goes wrong).
func TestFMAExact32(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	check := func(a, b, c float32) {
		t.Helper()
		exact := new(big.Float).SetPrec(400).SetFloat64(float64(a))
		exact.Mul(exact, new(big.Float).SetPrec(400).SetFloat64(float64(b)))
		exact.Add(exact, new(big.Float).SetPrec(400).SetFloat64(float64(c)))
		want, _ := exact.Float32()
		if got := fmaExact32(a, b, c); math.Float32bits(got) != math.Float32bits(want) && !(want == 0 && got == 0) {
			t.Fatalf("fmaExact32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	for range 200000 {
		a := float32(rng.NormFloat64()) * float32(math.Exp2(float64(rng.IntN(80)-40)))
		b := float32(rng.NormFloat64()) * float32(math.Exp2(float64(rng.IntN(80)-40)))
		c := float32(rng.NormFloat64()) * float32(math.Exp2(float64(rng.IntN(80)-40)))
		check(a, b, c)
	}
	// 1 + 2⁻²⁴ is halfway between 1 and its successor; a tiny c decides.
	check(1+0x1p-12, 1+0x1p-12, -0x1p-24) // 1 + 2⁻¹¹: exact
	check(1+0x1p-12, 1+0x1p-12, 0x1p-80)  // a·b halfway, c tips it up
	check(1+0x1p-12, 1+0x1p-12, -0x1p-80) // and down
	check(1+0x1p-23, 1, 0x1p-24)          // halfway, ties to even
	check(1, 1, 0x1p-24+0x1p-70)          // just above halfway
	check(1, 1, 0x1p-24-0x1p-60)          // just below halfway
	check(0x1p-75, 0x1p-75, 0x1p-149)     // denormal results
	check(0x1p-100, 0x1p-49, -0x1p-149)
}

// TestActivationConversions checks the vector f16 rounding, bf16 split and
// bf16 conversion of activations against the Go ones, bit for bit,
// on random values over the whole exponent range and on special values
// (NaN only for bf16: F16C keeps a NaN's payload, FP32ToFP16 does not).
func TestActivationConversions(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	specials := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x00000001, 0x807fffff, 0x7f7fffff,
		0x477fe000, 0x477ff000, 0x477fefff, 0x33800000, 0x33000000, 0x387fc000, 0x3f808000, 0x3f818000,
		0x3f80ffff, 0x3f817fff}
	nans := []uint32{0x7fc00000, 0xffc00001, 0x7f800001, 0x7fbfffff, 0xff812345}
	for _, n := range []int{0, 5, 16, 37, 1000} {
		x := make([]float32, n)
		for i := range x {
			switch r := rng.IntN(8); {
			case r == 0:
				x[i] = math.Float32frombits(specials[rng.IntN(len(specials))])
			case r == 1:
				x[i] = math.Float32frombits(rng.Uint32())
			default:
				x[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(60)-30)))
			}
		}
		xf := make([]float32, n)
		for i := range x {
			xf[i] = x[i]
			if v := x[i]; v != v {
				xf[i] = 1
			}
		}
		got, want := make([]float32, n), make([]float32, n)
		roundF16(xf, got)
		roundRowF16(xf, want)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: f16(%#x) = %#x, want %#x", n, math.Float32bits(xf[i]), math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
		for i := range x {
			if rng.IntN(10) == 0 {
				x[i] = math.Float32frombits(nans[rng.IntN(len(nans))])
			}
		}
		split, splitRef := make([]float32, n), make([]float32, n)
		bf16Split(x, split)
		bf16SplitRef(x, splitRef)
		for i := range split {
			if math.Float32bits(split[i]) != math.Float32bits(splitRef[i]) {
				t.Fatalf("n=%d: split[%d] = %#x, want %#x", n, i, math.Float32bits(split[i]), math.Float32bits(splitRef[i]))
			}
		}
		h := make([]uint16, n)
		toBF16(x, h)
		for i, v := range x {
			if w := FP32ToBF16(v); h[i] != w {
				t.Fatalf("n=%d: bf16(%#x) = %#x, want %#x", n, math.Float32bits(v), h[i], w)
			}
		}
	}
}

// TestLanesFMA checks lanesFMA's shortcut for f16 and bf16 operands (one
// float32 addition when the product is exact) against fmaExact32, on bf16
// values over the whole exponent range, where products overflow and fall
// below the normal range.
func TestLanesFMA(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	bf16 := func() float32 {
		v := float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(280)-140)))
		return BF16ToFP32(FP32ToBF16(v))
	}
	for range 20000 {
		var acc, want [16]float32
		w, x := make([]float32, 16), make([]float32, 16)
		for l := range acc {
			acc[l] = bf16() * float32(rng.NormFloat64())
			w[l], x[l] = bf16(), bf16()
			want[l] = fmaExact32(w[l], x[l], acc[l])
		}
		got := acc
		lanesFMA(&got, w, x, true)
		for l := range got {
			if math.Float32bits(got[l]) != math.Float32bits(want[l]) {
				t.Fatalf("lane %d: fma(%g, %g, %g) = %g, want %g", l, w[l], x[l], acc[l], got[l], want[l])
			}
		}
	}
}
