package compute

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestHalfToFloat checks the fast conversion against the table for every
// half.
func TestHalfToFloat(t *testing.T) {
	for h := range 1 << 16 {
		got, want := halfToFloat(uint16(h)), fp16Table[h]
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("halfToFloat(%#04x) = %v, want %v", h, got, want)
		}
	}
}

// TestPackPanel packs F16 and F32 panels, the last one narrow, and checks
// every value against the weights, and that the columns past w stay as
// they were.
func TestPackPanel(t *testing.T) {
	const k, n = 37, 21
	for _, typ := range []DType{F32, F16} {
		size := 4
		if typ == F16 {
			size = 2
		}
		data := make([]byte, n*k*size)
		want := make([]float32, n*k)
		for i := range want {
			v := float32(i%53-26) / 8
			want[i] = v
			if typ == F16 {
				binary.LittleEndian.PutUint16(data[2*i:], FP32ToFP16(v))
			} else {
				binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
			}
		}
		w := &Tensor{Name: "w", Type: typ, Shape: []int{k, n}, Data: data}
		for _, j := range []int{0, 16} {
			cw := min(16, n-j)
			dst := make([]float32, 16*k)
			for i := range dst {
				dst[i] = -99
			}
			if err := PackPanel(dst, w, j, cw); err != nil {
				t.Fatal(err)
			}
			for p := range k {
				for c := range 16 {
					got, exp := dst[p*16+c], float32(-99)
					if c < cw {
						exp = want[(j+c)*k+p]
					}
					if got != exp {
						t.Fatalf("%s panel %d [%d][%d] = %v, want %v", typ, j, p, c, got, exp)
					}
				}
			}
		}
		if err := PackPanel(make([]float32, 16*k), w, 16, 6); err == nil {
			t.Errorf("%s: rows past the matrix: no error", typ)
		}
	}
}
