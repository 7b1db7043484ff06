package compute

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmNN checks GemmNN against gemmGo bit for bit over shapes with row
// and column tails and strides wider than the rows.
func TestGemmNN(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][3]int{{1, 1, 1}, {6, 64, 16}, {13, 72, 72}, {6, 9, 24}, {7, 72, 37}, {13, 80, 48}, {12, 5, 33}, {5, 100, 15}, {25, 1, 64}} {
		m, k, n := s[0], s[1], s[2]
		lda, ldb, ldc := k+3, n+5, n+7
		a, b := make([]float32, m*lda), make([]float32, k*ldb)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		got, want := make([]float32, m*ldc), make([]float32, m*ldc)
		GemmNN(got, ldc, a, lda, b, ldb, m, k, n)
		gemmGo(want, ldc, a, lda, b, ldb, m, k, n)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("m %d k %d n %d: c[%d] = %g, want %g", m, k, n, i, got[i], want[i])
			}
		}
		var d float64
		for p := range k {
			d += float64(a[(m-1)*lda+p]) * float64(b[p*ldb+n-1])
		}
		if g := float64(got[(m-1)*ldc+n-1]); math.Abs(g-d) > 1e-4*math.Sqrt(float64(k)) {
			t.Errorf("m %d k %d n %d: last output %g, want %g", m, k, n, g, d)
		}
	}
}

func BenchmarkGemmNN(b *testing.B) {
	for _, s := range []struct {
		name    string
		m, k, n int
	}{{"kq", 48, 64, 2304}, {"kqv", 48, 2304, 64}, {"l1", 6, 256, 16}, {"l2", 96, 256, 16}, {"l2k1280", 96, 1280, 16}, {"k5120", 96, 5120, 16}} {
		b.Run(s.name, func(b *testing.B) {
			x, y, c := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n)
			for i := range x {
				x[i] = 1
			}
			for i := range y {
				y[i] = 1
			}
			cpu0 := cpuTime()
			for b.Loop() {
				GemmNN(c, s.n, x, s.k, y, s.n, s.m, s.k, s.n)
			}
			b.ReportMetric(2*float64(s.m*s.k*s.n)*float64(b.N)/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
		})
	}
}

// weightTensor is the n×k matrix w (row j at w[j·k:]) as a weight tensor
// of type typ (F32; F16 when w's values are halves).
func weightTensor(typ DType, w []float32, k, n int) *Tensor {
	data := make([]byte, 0, 4*len(w))
	for _, v := range w {
		if typ == F16 {
			data = binary.LittleEndian.AppendUint16(data, FP32ToFP16(v))
		} else {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
	}
	return &Tensor{Name: "w", Type: typ, Shape: []int{k, n}, Data: data}
}

// TestGemmPacked checks GemmPacked over PackRows and PackCols (F32 and F16
// weights, packed from an offset row) against gemmGo bit for bit, in
// assembly and in Go, over shapes with row tails (m mod 4), k short of the
// 4-step loop, k past one block of gemmKC and not a multiple of it, and
// last panels of 8, 16 and 3 columns; and the columns of C past n left
// as they were.
func TestGemmPacked(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, s := range [][3]int{{1, 1, 1}, {4, 3, 24}, {7, 5, 32}, {13, 257, 40}, {12, 600, 19}, {5, 1030, 48}, {25, 513, 8}, {18, 256, 72}} {
		m, k, n := s[0], s[1], s[2]
		lda, j0 := k+3, 5
		a := make([]float32, m*lda)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for _, typ := range []DType{F32, F16} {
			w := make([]float32, (j0+n)*k) // weight rows j0.. are B's columns
			for i := range w {
				w[i] = RoundF16(float32(r.NormFloat64()))
			}
			bt := make([]float32, k*n) // B = wᵀ, k×n
			for j := range n {
				for p := range k {
					bt[p*n+j] = w[(j0+j)*k+p]
				}
			}
			want := make([]float32, m*n)
			gemmGo(want, n, a, lda, bt, n, m, k, n)
			ap, bp := make([]float32, PackedRows(m)*k), make([]float32, PackedCols(n)*k)
			PackRows(ap, a, lda, m, k, false)
			if err := PackCols(bp, weightTensor(typ, w, k, j0+n), j0, n); err != nil {
				t.Fatal(err)
			}
			for _, isa := range []ISA{hostISA, Generic} {
				saved := hostISA
				hostISA = isa
				ldc := n + 3
				got := make([]float32, m*ldc)
				for i := range got {
					got[i] = -99
				}
				GemmPacked(got, ldc, ap, bp, m, k, n)
				hostISA = saved
				for i := range m {
					for j := range ldc {
						g, w := got[i*ldc+j], float32(-99)
						if j < n {
							w = want[i*n+j]
						}
						if math.Float32bits(g) != math.Float32bits(w) {
							t.Fatalf("%v %v: m %d k %d n %d: c[%d][%d] = %g, want %g", typ, isa, m, k, n, i, j, g, w)
						}
					}
				}
			}
		}
	}
}

// BenchmarkGemmPacked times one worker's group of 96 columns of a linear
// layer of Qwen2-VL's shapes (k = 1280: its qkv, out, fc1; k = 5120: its
// fc2), 96 rows, or 1600 (a tile) in blocks of 96 rows as model/vision's
// linear runs it, through GemmPacked and (96 rows) through GemmNN over
// panels of 16 columns, in GFLOP a CPU-second.
func BenchmarkGemmPacked(b *testing.B) {
	for _, s := range []struct {
		name    string
		m, k, n int
	}{{"k1280", 96, 1280, 96}, {"k5120", 96, 5120, 96}, {"k1280m1600", 1600, 1280, 96}, {"k5120m1600", 1600, 5120, 96}} {
		m, k, n := s.m, s.k, s.n
		x, y := make([]float32, m*k), make([]float32, k*n)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		for i := range y {
			y[i] = float32(i%5) - 2
		}
		const rows = 96
		ap, c := make([]float32, PackedRows(m)*k), make([]float32, rows*n)
		PackRows(ap, x, k, m, k, false)
		for _, path := range []string{"packed", "nn"} {
			if path == "nn" && m > rows {
				continue
			}
			b.Run(s.name+"/"+path, func(b *testing.B) {
				cpu0 := cpuTime()
				for b.Loop() {
					if path == "nn" {
						for q := 0; q < n; q += 16 {
							GemmNN(c[q:], n, x, k, y[q*k:], 16, m, k, 16)
						}
						continue
					}
					for r := 0; r < m; r += rows {
						GemmPacked(c, n, ap[r*k:], y, min(rows, m-r), k, n)
					}
				}
				b.ReportMetric(2*float64(m*k*n)*float64(b.N)/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
			})
		}
	}
}

// TestPackCols packs every half (F16 weights of 2 panels and a part, k
// not a multiple of 8) with AVX2 and in Go and checks both against
// FP16ToFP32 bit for bit, and the padding columns zeros.
func TestPackCols(t *testing.T) {
	const k, n = 1367, 50 // 50·1367 values: each of the 65536 halves once or more
	data := make([]byte, 2*k*n)
	for i := range k * n {
		binary.LittleEndian.PutUint16(data[2*i:], uint16(i*7919))
	}
	w := &Tensor{Name: "w", Type: F16, Shape: []int{k, n}, Data: data}
	for _, isa := range []ISA{hostISA, Generic} {
		saved := hostISA
		hostISA = isa
		dst := make([]float32, PackedCols(n)*k)
		for i := range dst {
			dst[i] = -99
		}
		err := PackCols(dst, w, 0, n)
		hostISA = saved
		if err != nil {
			t.Fatal(err)
		}
		for j := range PackedCols(n) {
			for p := range k {
				got, want := math.Float32bits(dst[j/24*24*k+p*24+j%24]), uint32(0)
				if j < n {
					want = math.Float32bits(FP16ToFP32(uint16((j*k + p) * 7919)))
				}
				if got != want {
					t.Fatalf("%v: column %d, p %d: %#x, want %#x", isa, j, p, got, want)
				}
			}
		}
	}
}

// TestPackRows packs rows (m not a multiple of 4, k not of 8, rows lda
// apart) with AVX2 and in Go, as they are and rounded to f16, and checks
// both against RoundF16 bit for bit, and the padding rows zeros.
func TestPackRows(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const m, k, lda = 11, 45, 50
	a := make([]float32, m*lda)
	for i := range a {
		a[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-24)))
	}
	a[3] = float32(math.Inf(-1))
	for _, isa := range []ISA{hostISA, Generic} {
		for _, round := range []bool{false, true} {
			saved := hostISA
			hostISA = isa
			dst := make([]float32, PackedRows(m)*k)
			for i := range dst {
				dst[i] = -99
			}
			PackRows(dst, a, lda, m, k, round)
			hostISA = saved
			for i := range PackedRows(m) {
				for p := range k {
					var want float32
					if i < m {
						want = a[i*lda+p]
					}
					if round {
						want = RoundF16(want)
					}
					if got := dst[i/4*4*k+p*4+i%4]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%v round %v: row %d, p %d: %g, want %g", isa, round, i, p, got, want)
					}
				}
			}
		}
	}
}
