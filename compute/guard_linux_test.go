package compute

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// guarded returns a byte slice of n bytes whose end touches a page the
// process may not read or write, so a kernel that reads or writes past
// its arguments' ends faults in the test rather than, now and then, in a
// forward pass.
func guarded(t *testing.T, n int) []byte {
	t.Helper()
	page := syscall.Getpagesize()
	size := (n+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return mem[size-page-n : size-page : size-page]
}

func guardedF32(t *testing.T, n int) []float32 {
	b := guarded(t, 4*n)
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

func guardedU16(t *testing.T, n int) []uint16 {
	b := guarded(t, 2*n)
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// TestAttentionKernelsStayInBounds runs the attention kernels with every
// argument ending at an unreadable page (each in turn): a kernel that
// reads a vector past a row's or a slice's end faults here.
func TestAttentionKernelsStayInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fill := func(x []float32) {
		for i := range x {
			x[i] = RoundF16(float32(rng.NormFloat64()))
		}
	}
	for _, hd := range []int{8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 256} {
		for _, g := range []int{1, 2, 3, 4} {
			for _, n := range []int{1, 3, 16} {
				t.Run(fmt.Sprintf("hd%d/g%d/n%d", hd, g, n), func(t *testing.T) {
					stride := hd * 3 // a row of one KV head within a wider cache row
					rowsLen := (n-1)*stride + hd
					rows := guardedU16(t, rowsLen)
					for i := range rows {
						rows[i] = FP32ToFP16(float32(rng.NormFloat64()))
					}
					q := guardedF32(t, g*hd)
					fill(q)
					out := guardedF32(t, (g-1)*n+n)
					DotRowsGroup(out, n, q, g, rows, stride, n)
					DotRows(out[:n], q[:hd], rows, stride, n)
					acc := guardedF32(t, g*hd)
					ms, vs := guardedF32(t, (g-1)*n+n), guardedF32(t, (g-1)*n+n)
					for i := range ms {
						ms[i], vs[i] = 1, 0.25
					}
					VKQRowsF16Group(acc, g, rows, stride, ms, vs, n, n)
					VKQRowsF16(acc[:hd], rows, stride, ms[:n], vs[:n])
					r16 := guardedF32(t, g*hd)
					RoundF16s(r16, q)
					h16 := guardedU16(t, g*hd)
					F16s(h16, q)
					sc := guardedF32(t, n)
					copy(sc, out[:n])
					OnlineSoftmax(sc, ms[len(ms)-n:], 0.125)
					Exp(sc)
					if hd%32 != 0 {
						return
					}
					rowBytes := hd / 32 * Q8_0BlockBytes * 3
					q8rows := guarded(t, (n-1)*rowBytes+hd/32*Q8_0BlockBytes)
					for r := range n {
						x := make([]float32, hd)
						fill(x)
						QuantizeQ8_0(q8rows[r*rowBytes:r*rowBytes+hd/32*Q8_0BlockBytes], x)
					}
					var qq Q8_0Query
					qq.Set(q)
					DotRowsQ8_0Group(out, n, &qq, g, q8rows, rowBytes, n)
					VKQRowsQ8_0Group(acc, g, q8rows, rowBytes, ms, vs, n, n)
				})
			}
		}
	}
}

// TestMatMulStaysInBounds runs MatMul for every weight type with the
// weights, the activations and the output each ending at an unreadable
// page, packed and in place, on row and batch counts that leave partial
// tiles and steps.
func TestMatMulStaysInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	types := []DType{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4}
	for _, typ := range types {
		for _, k := range []int{256, 512} {
			for _, n := range []int{1, 5, 16, 33} {
				for _, inPlace := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/k%d/n%d/inplace=%v", typ, k, n, inPlace), func(t *testing.T) {
						rb, err := typ.RowSize(k)
						if err != nil {
							t.Skip(err)
						}
						data := guarded(t, n*rb)
						row := make([]float32, k)
						for r := range n {
							for i := range row {
								row[i] = float32(rng.NormFloat64())
							}
							if err := QuantizeRow(typ, row, data[r*rb:(r+1)*rb]); err != nil {
								t.Skip(err)
							}
						}
						w := &Tensor{Name: "w", Type: typ, Shape: []int{k, n}, Data: data, InPlace: inPlace}
						for _, workers := range []int{1, 2} {
							mm := NewMatMuler(workers)
							for _, m := range []int{1, 2, 4, 5, 9} {
								x := guardedF32(t, m*k)
								for i := range x {
									x[i] = float32(rng.NormFloat64())
								}
								out := guardedF32(t, m*n)
								if err := mm.MatMul(out, x, m, w); err != nil {
									t.Fatal(err)
								}
								mm.GGMLBatch = true
								if err := mm.MatMul(out, x, m, w); err != nil {
									t.Fatal(err)
								}
								mm.GGMLBatch = false
							}
						}
					})
				}
			}
		}
	}
}
