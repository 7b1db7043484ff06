package compute

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// Half constants used to build blocks.
const (
	hZero      uint16 = 0x0000
	hOne       uint16 = 0x3c00
	hHalf      uint16 = 0x3800
	hQuarter   uint16 = 0x3400
	hMinusOne  uint16 = 0xbc00
	hInf       uint16 = 0x7c00
	hSubnormal uint16 = 0x0001 // 2^-24
)

func putF16(b []byte, h uint16) { binary.LittleEndian.PutUint16(b, h) }

// sameBits reports whether got and want are the same float32 bit pattern;
// any two NaNs count as equal, since a NaN's payload depends on the CPU.
func sameBits(got, want float32) bool {
	if math.IsNaN(float64(got)) && math.IsNaN(float64(want)) {
		return true
	}
	return math.Float32bits(got) == math.Float32bits(want)
}

// dequantize runs Dequantize on whole blocks and fails the test on error.
func dequantize(t *testing.T, typ DType, src []byte) []float32 {
	t.Helper()
	dst := make([]float32, len(src)/typ.TypeSize()*typ.BlockSize())
	if err := Dequantize(typ, src, dst); err != nil {
		t.Fatalf("Dequantize(%s): %v", typ, err)
	}
	return dst
}

func checkValues(t *testing.T, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		if !sameBits(got[i], want[i]) {
			if bad < 5 {
				t.Errorf("value %d = %v (%#08x), want %v (%#08x)", i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d values differ", bad, len(want))
	}
}

// legacyBlock is the logical content of one 32-value block of the legacy
// types: scale d, min m (Q4_1, Q5_1) and the unsigned quants L (Q8_0: int8).
type legacyBlock struct {
	d, m uint16
	L    [32]int
}

// pack lays b out as typ, following ggml's quantize_row_*_ref.
func (b *legacyBlock) pack(typ DType) []byte {
	out := make([]byte, typ.TypeSize())
	putF16(out, b.d)
	qs := out[2:]
	switch typ {
	case Q4_1, Q5_1:
		putF16(out[2:], b.m)
		qs = out[4:]
	}
	if typ == Q5_0 || typ == Q5_1 {
		var qh uint32
		for j, l := range b.L {
			qh |= uint32(l>>4) << j
		}
		binary.LittleEndian.PutUint32(qs, qh)
		qs = qs[4:]
	}
	if typ == Q8_0 {
		for j, l := range b.L {
			qs[j] = byte(int8(l))
		}
		return out
	}
	for j := range 16 {
		qs[j] = byte(b.L[j]&0xf | (b.L[j+16]&0xf)<<4)
	}
	return out
}

// want is ggml's formula for value j of the block.
func (b *legacyBlock) want(typ DType, j int) float32 {
	d, m, l := FP16ToFP32(b.d), FP16ToFP32(b.m), b.L[j]
	switch typ {
	case Q4_0:
		return float32(l-8) * d
	case Q5_0:
		return float32(l-16) * d
	case Q4_1, Q5_1:
		return float32(float32(l)*d) + m
	}
	return float32(l) * d // Q8_0
}

func TestDequantizeLegacy(t *testing.T) {
	maxQ := map[DType]int{Q4_0: 15, Q4_1: 15, Q5_0: 31, Q5_1: 31, Q8_0: 127}
	fill := func(f func(j int) int) (L [32]int) {
		for j := range L {
			L[j] = f(j)
		}
		return L
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []DType{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0} {
		lo := 0
		if typ == Q8_0 {
			lo = -128
		}
		top := maxQ[typ]
		blocks := []struct {
			name string
			b    legacyBlock
		}{
			{"ramp", legacyBlock{d: hOne, m: hMinusOne, L: fill(func(j int) int { return lo + j%(top-lo+1) })}},
			{"max quants", legacyBlock{d: hHalf, m: hQuarter, L: fill(func(int) int { return top })}},
			{"min quants", legacyBlock{d: hHalf, m: hQuarter, L: fill(func(int) int { return lo })}},
			{"zero scale", legacyBlock{d: hZero, m: hOne, L: fill(func(j int) int { return lo + j%(top-lo+1) })}},
			{"subnormal scale", legacyBlock{d: hSubnormal, m: hSubnormal, L: fill(func(j int) int { return top - j%4 })}},
			{"infinite scale", legacyBlock{d: hInf, m: hZero, L: fill(func(j int) int { return lo + j%(top-lo+1) })}},
			{"random", legacyBlock{d: uint16(rng.IntN(0x7c00)), m: uint16(rng.IntN(0x7c00)) | 0x8000,
				L: fill(func(int) int { return lo + rng.IntN(top-lo+1) })}},
		}
		for _, bt := range blocks {
			t.Run(typ.String()+"/"+bt.name, func(t *testing.T) {
				// Two blocks: the second checks the stride.
				second := bt.b
				second.d, second.m = hOne, hHalf
				src := append(bt.b.pack(typ), second.pack(typ)...)
				var want []float32
				for _, b := range []*legacyBlock{&bt.b, &second} {
					for j := range 32 {
						want = append(want, b.want(typ, j))
					}
				}
				checkValues(t, dequantize(t, typ, src), want)
			})
		}
	}
}

func TestDequantizeFloat(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -2.5, 65504, 1e-7, float32(math.Inf(-1)), 3.1415927}
	t.Run("F32", func(t *testing.T) {
		src := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(v))
		}
		checkValues(t, dequantize(t, F32, src), vals)
	})
	for _, tc := range []struct {
		typ  DType
		from func(float32) uint16
		to   func(uint16) float32
	}{{F16, FP32ToFP16, FP16ToFP32}, {BF16, FP32ToBF16, BF16ToFP32}} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			src := make([]byte, 2*len(vals))
			want := make([]float32, len(vals))
			for i, v := range vals {
				putF16(src[2*i:], tc.from(v))
				want[i] = tc.to(tc.from(v))
			}
			checkValues(t, dequantize(t, tc.typ, src), want)
		})
	}
}

// TestDequantizeKnownValues checks single values worked out by hand, so the
// layouts are pinned independently of the packers used elsewhere.
func TestDequantizeKnownValues(t *testing.T) {
	tests := []struct {
		name  string
		typ   DType
		build func(b []byte)
		index int
		want  float32
	}{
		{"Q4_0 low nibble", Q4_0, func(b []byte) { putF16(b, hOne); b[2] = 0xf0 }, 0, -8},
		{"Q4_0 high nibble", Q4_0, func(b []byte) { putF16(b, hOne); b[2] = 0xf0 }, 16, 7},
		{"Q4_1", Q4_1, func(b []byte) { putF16(b, hHalf); putF16(b[2:], hMinusOne); b[4+3] = 0x0f }, 3, 6.5},
		{"Q5_0 fifth bit", Q5_0, func(b []byte) { putF16(b, hOne); b[2+3] = 0x80; b[6+15] = 0x20 }, 31, 2},
		{"Q5_1 all bits", Q5_1, func(b []byte) { putF16(b, hOne); putF16(b[2:], hQuarter); b[4] = 1; b[8] = 0x0f }, 0, 31.25},
		{"Q8_0 -128", Q8_0, func(b []byte) { putF16(b, hHalf); b[2+5] = 0x80 }, 5, -64},
		{"Q8_0 -128 times zero is -0", Q8_0, func(b []byte) { b[2] = 0x80 }, 0, float32(math.Copysign(0, -1))},
		// Q2_K: scales[0] = sc 1 | m 2, d 1, dmin 0.25; q 3 → 1·3 − 0.25·2.
		{"Q2_K", Q2_K, func(b []byte) { b[0] = 0x21; b[16] = 0x03; putF16(b[80:], hOne); putF16(b[82:], hQuarter) }, 0, 2.5},
		// Q2_K value 32 takes bits 2-3 of qs[0] with scales[2].
		{"Q2_K shift", Q2_K, func(b []byte) { b[2] = 0x05; b[16] = 0x0c; putF16(b[80:], hOne) }, 32, 15},
		// Q3_K: every scale byte zero → scale −32; hmask clear → q − 4 = −4.
		{"Q3_K zero bytes", Q3_K, func(b []byte) { putF16(b[108:], hOne) }, 0, 128},
		// Q3_K value 255: sub-block 15 scale from scales[7] high nibble and
		// scales[11] bits 6-7; hmask[31] bit 7; qs[63] bits 6-7.
		{"Q3_K last", Q3_K, func(b []byte) {
			b[96+7] = 0x10
			b[96+11] = 0x80
			b[31] = 0x80
			b[32+63] = 0xc0
			putF16(b[108:], hHalf)
		}, 255, 0.5 * (33 - 32) * 3},
		// Q4_K: sub-block 0 sc 2, m 4; d 1, dmin 0.5; q 15 → 2·15 − 0.5·4.
		{"Q4_K", Q4_K, func(b []byte) { putF16(b, hOne); putF16(b[2:], hHalf); b[4] = 2; b[8] = 4; b[16] = 0x0f }, 0, 28},
		// Q4_K sub-block 4 (values 128..159): sc = scales[8]&15 | (scales[0]>>6)<<4 = 17,
		// m = scales[8]>>4 | (scales[4]>>6)<<4 = 3; q = low nibble of qs[64].
		{"Q4_K high scale bits", Q4_K, func(b []byte) {
			putF16(b, hOne)
			putF16(b[2:], hHalf)
			b[4+0] = 0x40
			b[4+8] = 0x31
			b[16+64] = 0x01
		}, 128, 17 - 1.5},
		// Q5_K: qh bit 0 of byte 0 adds 16 to value 0; bit 1 to value 32.
		{"Q5_K fifth bit", Q5_K, func(b []byte) { putF16(b, hOne); b[4] = 1; b[16] = 0x01; b[48] = 0x0f }, 0, 31},
		{"Q5_K fifth bit high nibble", Q5_K, func(b []byte) { putF16(b, hOne); b[5] = 1; b[16] = 0x02; b[48] = 0x10 }, 32, 17},
		// Q6_K: scale −128, q 0 − 32 → 4096.
		{"Q6_K scale -128", Q6_K, func(b []byte) { b[192] = 0x80; putF16(b[208:], hOne) }, 0, 4096},
		// Q6_K value 96+16: high nibble of ql[48], qh[16] bits 6-7, scales[7].
		{"Q6_K", Q6_K, func(b []byte) { b[48] = 0xf0; b[128+16] = 0xc0; b[192+7] = 2; putF16(b[208:], hHalf) }, 112, 0.5 * 2 * 31},
		{"Q8_K", Q8_K, func(b []byte) { binary.LittleEndian.PutUint32(b, math.Float32bits(0.25)); b[4+200] = 0x81 }, 200, -31.75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, tt.typ.TypeSize())
			tt.build(b)
			got := dequantize(t, tt.typ, b)[tt.index]
			if !sameBits(got, tt.want) {
				t.Errorf("value %d = %v, want %v", tt.index, got, tt.want)
			}
		})
	}
}

// noPanic runs f and fails the test if it panics.
func noPanic(t *testing.T, f func() error) error {
	t.Helper()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panic: %v", r)
			}
		}()
		err = f()
	}()
	return err
}

func TestDequantizeErrors(t *testing.T) {
	tests := []struct {
		name        string
		typ         DType
		src, values int
		unsupported bool
	}{
		{"values not whole blocks", Q4_K, 144, 100, false},
		{"src one byte short", Q4_0, 2*18 - 1, 64, false},
		{"src one byte long", Q6_K, 211, 256, false},
		{"src empty", Q8_0, 0, 32, false},
		{"F16 odd bytes", F16, 3, 2, false},
		{"Q8_1 has no dequantizer", Q8_1, 36, 32, true},
		{"unknown type", DType(99), 10, 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]float32, tt.values)
			err := noPanic(t, func() error { return Dequantize(tt.typ, make([]byte, tt.src), dst) })
			if err == nil {
				t.Fatal("want an error")
			}
			if got := errors.Is(err, ErrUnsupportedType); got != tt.unsupported {
				t.Errorf("errors.Is(%v, ErrUnsupportedType) = %v, want %v", err, got, tt.unsupported)
			}
		})
	}
}

func TestDequantizeRow(t *testing.T) {
	// Two rows of 64 Q8_0 values: row r, block k holds d = 1 and q = 10r + k.
	data := make([]byte, 0, 4*34)
	for r := range 2 {
		for k := range 2 {
			b := make([]byte, 34)
			putF16(b, hOne)
			for j := range 32 {
				b[2+j] = byte(10*r + k)
			}
			data = append(data, b...)
		}
	}
	tensor := &Tensor{Name: "w", Type: Q8_0, Shape: []int{64, 2}, Data: data}
	row := make([]float32, 64)
	if err := DequantizeRow(tensor, 1, row); err != nil {
		t.Fatal(err)
	}
	if row[0] != 10 || row[63] != 11 {
		t.Errorf("row 1 = [%v … %v], want [10 … 11]", row[0], row[63])
	}

	bad := []struct {
		name   string
		tensor *Tensor
		i, n   int
	}{
		{"row past end", tensor, 2, 64},
		{"negative row", tensor, -1, 64},
		{"dst too short", tensor, 0, 32},
		{"data truncated", &Tensor{Type: Q8_0, Shape: []int{64, 2}, Data: data[:3*34]}, 1, 64},
		{"no shape", &Tensor{Type: Q8_0, Data: data}, 0, 64},
		{"row not whole blocks", &Tensor{Type: Q8_0, Shape: []int{40, 1}, Data: data}, 0, 40},
		{"unknown type", &Tensor{Type: DType(99), Shape: []int{64, 2}, Data: data}, 0, 64},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]float32, tt.n)
			if err := noPanic(t, func() error { return DequantizeRow(tt.tensor, tt.i, dst) }); err == nil {
				t.Error("want an error")
			}
		})
	}
}

func BenchmarkDequantize(b *testing.B) {
	const n = 4096
	for _, typ := range []DType{F16, Q4_0, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			size, _ := typ.RowSize(n)
			src := make([]byte, size)
			rng := rand.New(rand.NewPCG(7, 8))
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			dst := make([]float32, n)
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := Dequantize(typ, src, dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
		})
	}
}
