package compute

import "testing"

// TestTransposePanel checks TransposePanel against its definition for
// panels of 16 columns (the AVX2 path, with and without a tail of rows)
// and narrower ones, with room around the source vectors.
func TestTransposePanel(t *testing.T) {
	for _, c := range []struct{ rows, w, ldx int }{{80, 16, 1280}, {72, 16, 75}, {13, 16, 16}, {5, 16, 9}, {64, 8, 70}, {80, 3, 80}, {1, 1, 1}} {
		x := make([]float32, (c.w-1)*c.ldx+c.rows)
		for i := range x {
			x[i] = float32(i) + 0.5
		}
		dst := make([]float32, c.rows*c.w)
		TransposePanel(dst, x, c.ldx, c.rows, c.w)
		for p := range c.rows {
			for j := range c.w {
				if got, want := dst[p*c.w+j], x[j*c.ldx+p]; got != want {
					t.Fatalf("%+v: dst[%d][%d] = %v, want %v", c, p, j, got, want)
				}
			}
		}
	}
}
