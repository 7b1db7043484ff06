package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// GPU-only: cuBLAS.

func TestGemmEx(t *testing.T) {
	d := openDevice(t)
	s := newStream(t, d)
	b, err := d.NewBLAS(s)
	if errors.Is(err, ErrNoCUBLAS) {
		if gpuHooks.emulated() {
			t.Skip("the CUDA emulator has no cuBLAS")
		}
		gpuHooks.unavailable(t, err)
	}
	must(t, err)
	defer b.Destroy()
	const m, n, k = 64, 48, 80
	// Inputs are multiples of 1/64 in [-1, 1]: every product and partial sum
	// is exact in float32 (and in half for the inputs), whatever the order.
	const tol = 1e-4
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := func(size int) []float32 {
		xs := make([]float32, size)
		for i := range xs {
			xs[i] = float32(rng.IntN(129)-64) / 64
		}
		return xs
	}
	for _, tc := range []struct {
		name           string
		transA, transB bool
		typ            DataType
	}{
		{"f32 NN", false, false, F32}, {"f32 TN", true, false, F32}, {"f32 NT", false, true, F32},
		{"f16 NN", false, false, F16}, {"f16 TT", true, true, F16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			A, B, C := rnd(m*k), rnd(k*n), rnd(m*n) // column-major
			lda, ldb := m, k
			if tc.transA {
				lda = k // A is stored k×m
			}
			if tc.transB {
				ldb = n // B is stored n×k
			}
			dA, dB := uploadAs(t, d, A, tc.typ), uploadAs(t, d, B, tc.typ)
			dC := upload(t, d, C)
			const alpha, beta = 0.5, 2
			must(t, b.GemmEx(tc.transA, tc.transB, m, n, k, alpha, dA, tc.typ, lda, dB, tc.typ, ldb, beta, dC, F32, m))
			must(t, s.Sync())
			got := download(t, d, dC, m*n)
			maxDiff := 0.0
			for j := range n {
				for i := range m {
					sum := 0.0
					for p := range k {
						ia, ib := i+p*lda, p+j*ldb
						if tc.transA {
							ia = p + i*lda
						}
						if tc.transB {
							ib = j + p*ldb
						}
						sum += float64(A[ia]) * float64(B[ib])
					}
					want := alpha*sum + beta*float64(C[i+j*m])
					maxDiff = max(maxDiff, math.Abs(float64(got[i+j*m])-want))
				}
			}
			t.Logf("max |diff| %.3g (tolerance %g)", maxDiff, tol)
			if maxDiff > tol {
				t.Errorf("max |diff| %g > %g", maxDiff, tol)
			}
		})
	}
}

// uploadAs copies xs to the device as typ (F32, or F16 for values exactly
// representable in half precision).
func uploadAs(tb testing.TB, d *Device, xs []float32, typ DataType) DevicePtr {
	tb.Helper()
	if typ == F32 {
		return upload(tb, d, xs)
	}
	hs := make([]uint16, len(xs))
	for i, x := range xs {
		hs[i] = exactHalf(tb, x)
	}
	p := alloc(tb, d, 2*len(hs))
	must(tb, d.CopyHtoD(p, unsafe.Pointer(&hs[0]), 2*len(hs), nil))
	return p
}

// exactHalf returns the IEEE half with x's value; x must be zero or a normal
// half with at most 11 significant bits.
func exactHalf(tb testing.TB, x float32) uint16 {
	bits := math.Float32bits(x)
	sign := uint16(bits>>16) & 0x8000
	if bits&0x7fffffff == 0 {
		return sign
	}
	exp := int(bits>>23&0xff) - 127 + 15
	if exp <= 0 || exp >= 31 || bits&0x1fff != 0 {
		tb.Fatalf("%v is not exactly a normal half", x)
	}
	return sign | uint16(exp)<<10 | uint16(bits>>13&0x3ff)
}
