package vision

import (
	"math"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/synth"
)

// TestQwenSmartSize: calc_size_preserved_ratio's three cases with
// Qwen2.5-VL's constants (28-pixel alignment, 8 to 4096 rows of 28×28).
func TestQwenSmartSize(t *testing.T) {
	const align, lo, hi = 28, 8 * 784, 4096 * 784
	for _, tc := range []struct{ w, h, ww, wh int }{
		{100, 50, 112, 56},       // rounded to multiples of 28
		{20, 60, 56, 140},        // below 8 rows: scaled up, ceiled
		{3000, 2000, 2184, 1456}, // above 4096 rows: scaled down, floored
		{1, 1, 84, 84},
	} {
		w, h := smartSize(tc.w, tc.h, align, lo, hi)
		if w != tc.ww || h != tc.wh {
			t.Errorf("%dx%d: %dx%d, want %dx%d", tc.w, tc.h, w, h, tc.ww, tc.wh)
		}
		if w*h > hi || w%align != 0 || h%align != 0 {
			t.Errorf("%dx%d: %dx%d is out of bounds", tc.w, tc.h, w, h)
		}
	}
}

// TestQwenLayout: the graph order clip.cpp gives a 9×6 merged grid with
// 7-row windows (two windows across), each patch once, its window holding
// it, and the rows' M-RoPE offsets row-major.
func TestQwenLayout(t *testing.T) {
	l := newQwenLayout(18, 12, 7)
	seen := slices.Clone(l.patch)
	slices.Sort(seen)
	for i, v := range seen {
		if v != i {
			t.Fatalf("patch order is not a permutation: %v", l.patch)
		}
	}
	if l.window[0] != [2]int{0, 4 * 7 * 6} || l.window[len(l.window)-1] != [2]int{4 * 7 * 6, 4 * 9 * 6} {
		t.Errorf("windows %v … %v, want the first 7×6 rows' then the last 2×6", l.window[0], l.window[len(l.window)-1])
	}
	for i, w := range l.window {
		if i < w[0] || i >= w[1] {
			t.Fatalf("row %d outside its window %v", i, w)
		}
	}
	if l.unit[7] != 42 || l.unit[9] != 7 {
		t.Errorf("merged row 7 is graph row %d, row 9 %d; want 42 and 7", l.unit[7], l.unit[9])
	}
	p := tinyProjectorSeed(t, "qwen2.5vl-tiny", 1)
	prep := prepareFile(t, p, "big.png")
	if prep.Rows() != 54 || prep.Positions[10] != [3]int32{0, 1, 1} || prep.Chunks[0].Text != "<|vision_start|>" {
		t.Errorf("%d rows, row 10 at %v, chunks %v", prep.Rows(), prep.Positions[10], prep.Chunks)
	}
}

// TestQwenWindowsMatter: the window layers change the embeddings of an
// image of two windows far beyond TestParityEmbeddings' bound, so that
// test would see windows computed wrongly.
func TestQwenWindowsMatter(t *testing.T) {
	p := tinyProjectorSeed(t, "qwen2.5vl-tiny", 1)
	prep := prepareFile(t, p, "big.png")
	mm := compute.NewMatMuler(1)
	win, err := p.Encode(mm, prep)
	if err != nil {
		t.Fatal(err)
	}
	p.hp.waPattern = 0
	defer func() { p.hp.waPattern = 2 }()
	full, err := p.Encode(mm, prep)
	if err != nil {
		t.Fatal(err)
	}
	var mx, sq float64
	for i := range win {
		mx = max(mx, math.Abs(float64(win[i]-full[i])))
		sq += float64(full[i]) * float64(full[i])
	}
	std := math.Sqrt(sq / float64(len(full)))
	t.Logf("windows against full attention: max |Δ| %.3g (%.1f%% of the rows' rms)", mx, 100*mx/std)
	if mx < 20*embBound*std {
		t.Errorf("window attention changes the rows by %.3g only", mx)
	}
}

// TestQwenWorkers: Qwen2.5-VL's gated SiLU gives the same bits on 1, 2
// and 3 threads with a feed-forward width (99, as Qwen2.5-VL's 3420) that
// puts the rows' boundaries inside SiLUMul's 16-value vectors, and so does
// the encode. (The encode alone would not show a split-dependent SiLU:
// ffn_down's F16 weights round its input to half, which hides a last-bit
// difference nearly always.)
func TestQwenWorkers(t *testing.T) {
	const rows, ffn = 216, 99
	gate, up := make([]float32, rows*ffn), make([]float32, rows*ffn)
	for i := range gate {
		gate[i] = float32(math.Sin(float64(i)*0.37)) * 4
		up[i] = float32(math.Cos(float64(i) * 0.11))
	}
	sameOnWorkers(t, "SiLU", func(mm *compute.MatMuler) []float32 {
		got := slices.Clone(up)
		siluRows(mm, got, gate, ffn)
		return got
	})

	s, _ := synth.LookupProjectorShape("qwen2.5vl-tiny")
	s.FFN = ffn
	p := shapeProjector(t, s, 1)
	sameOnWorkers(t, "encode", encodeWith(t, p, prepareFile(t, p, "big.png")))
}

// firstBitDiff is the index of the first value of a whose bits differ
// from b's, or −1.
func firstBitDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
