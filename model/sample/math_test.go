package sample

import (
	"math"
	"slices"
	"testing"
)

func TestArgmax(t *testing.T) {
	nan, ninf := float32(math.NaN()), float32(math.Inf(-1))
	tests := []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"empty", nil, -1},
		{"one", []float32{-5}, 0},
		{"max in the middle", []float32{1, 7, 3}, 1},
		{"max last", []float32{1, 2, 3}, 2},
		{"negative", []float32{-3, -1, -2}, 1},
		{"ties take the lowest id", []float32{0, 5, 2, 5, 5}, 1},
		{"all equal", []float32{4, 4, 4}, 0},
		{"-Inf", []float32{ninf, ninf, -1e30}, 2},
		{"all -Inf", []float32{ninf, ninf}, 0},
		{"NaN skipped", []float32{nan, 1, nan, 2, nan}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Argmax(tt.logits); got != tt.want {
				t.Fatalf("Argmax = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLogSoftmax(t *testing.T) {
	ninf := float32(math.Inf(-1))
	tests := []struct {
		name   string
		logits []float32
		want   []float32
	}{
		{"uniform", []float32{3, 3, 3, 3}, []float32{-1.3862944, -1.3862944, -1.3862944, -1.3862944}},
		{"two", []float32{0, float32(math.Log(3))}, []float32{-1.3862944, -0.2876821}},
		{"large logits do not overflow", []float32{1000, 1000}, []float32{-0.6931472, -0.6931472}},
		{"-Inf", []float32{ninf, 5}, []float32{ninf, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make([]float32, len(tt.logits))
			LogSoftmax(got, tt.logits)
			for i := range got {
				if d := math.Abs(float64(got[i] - tt.want[i])); !(d <= 1e-6) && got[i] != tt.want[i] {
					t.Fatalf("LogSoftmax = %v, want %v", got, tt.want)
				}
			}
			// In place gives the same.
			in := slices.Clone(tt.logits)
			LogSoftmax(in, in)
			if !slices.Equal(in, got) {
				t.Fatalf("in place: %v, want %v", in, got)
			}
		})
	}
}

func TestLogSoftmaxSumsToOne(t *testing.T) {
	logits := []float32{0.3, -2, 7.5, 7.25, 1e-3, -40}
	lp := make([]float32, len(logits))
	LogSoftmax(lp, logits)
	var sum float64
	for i, x := range lp {
		sum += math.Exp(float64(x))
		// Differences between logits survive.
		if d := (lp[i] - lp[0]) - (logits[i] - logits[0]); math.Abs(float64(d)) > 1e-5 {
			t.Errorf("token %d: difference off by %v", i, d)
		}
	}
	if math.Abs(sum-1) > 1e-6 {
		t.Fatalf("sum of probabilities = %v", sum)
	}
}

func TestLogSoftmaxPanicsOnLength(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	LogSoftmax(make([]float32, 2), make([]float32, 3))
}

func TestExpNeg(t *testing.T) {
	worst := 0.0
	for x := 0.0; x >= -700; x -= 0.000731 {
		want := math.Exp(x)
		rel := math.Abs(expNeg(x)-want) / want
		worst = max(worst, rel)
	}
	t.Logf("max relative error on [-700, 0]: %.3g", worst)
	if worst > 1e-8 {
		t.Fatalf("max relative error %.3g > 1e-8", worst)
	}
	for _, x := range []float64{-700.5, -1e300, math.Inf(-1)} {
		if got := expNeg(x); got != 0 {
			t.Errorf("expNeg(%v) = %v, want 0", x, got)
		}
	}
	if got := expNeg(0); got != 1 {
		t.Errorf("expNeg(0) = %v, want 1", got)
	}
}
