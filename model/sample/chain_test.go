package sample

import (
	"math"
	"slices"
	"testing"
)

// logitsOf returns log(p) for each probability.
func logitsOf(probs []float32) []float32 {
	l := make([]float32, len(probs))
	for i, p := range probs {
		l[i] = float32(math.Log(float64(p)))
	}
	return l
}

// chainSurvivors runs the general chain for p on logits and returns the
// surviving ids in id order.
func chainSurvivors(t *testing.T, p Params, logits []float32) []int32 {
	return sortedIDs(mustNew(t, p).chainTruncate(logits))
}

// TestChain checks typical-p, XTC and min_keep against llama.cpp's own
// cases (tests/test-sampling.cpp: test_xtc, test_typical, seed 0) and cases
// worked out by hand from its algorithms. Probabilities 1/2, 1/4, 1/8, 1/8
// have entropy 1.75 ln 2, so the surprises' distances from it are 0.52,
// 0.17, 0.87, 0.87: typical-p keeps token 1 first, then 0.
func TestChain(t *testing.T) {
	llama := []float32{0.4, 0.3, 0.2, 0.1}
	halves := []float32{0.5, 0.25, 0.125, 0.125}
	tests := []struct {
		name  string
		p     Params
		probs []float32
		want  []int32
	}{
		// llama.cpp's test_xtc (probability 0.99, its coin on seed 0 is 0.55).
		{"xtc 0.09", Params{XTCProbability: 0.99, XTCThreshold: 0.09}, llama, []int32{3}},
		{"xtc 0.19", Params{XTCProbability: 0.99, XTCThreshold: 0.19}, llama, []int32{2, 3}},
		{"xtc 0.29", Params{XTCProbability: 0.99, XTCThreshold: 0.29}, llama, []int32{1, 2, 3}},
		{"xtc 0.39 keeps all", Params{XTCProbability: 0.99, XTCThreshold: 0.39}, llama, []int32{0, 1, 2, 3}},
		{"xtc min_keep", Params{XTCProbability: 1, XTCThreshold: 0.09, MinKeep: 2}, llama, []int32{0, 1, 2, 3}},
		{"xtc threshold > 0.5 is off", Params{XTCProbability: 1, XTCThreshold: 0.6, MinKeep: 2}, llama, []int32{0, 1, 2, 3}},
		// llama.cpp's test_typical.
		{"typical peaked", Params{TypicalP: 0.5}, []float32{0.97, 0.01, 0.01, 0.01}, []int32{0}},
		{"typical flat tail", Params{TypicalP: 0.5}, []float32{0.4, 0.2, 0.2, 0.2}, []int32{1, 2, 3}},
		// By hand.
		{"typical 0.5", Params{TypicalP: 0.5}, halves, []int32{0, 1}},
		{"typical 0.2 drops the top", Params{TypicalP: 0.2}, halves, []int32{1}},
		{"typical 0.2 min_keep 3", Params{TypicalP: 0.2, MinKeep: 3}, halves, []int32{0, 1, 2}},
		{"top_p min_keep", Params{TopP: 0.5, MinKeep: 3}, halves, []int32{0, 1, 2}},
		{"top_p min_keep 1", Params{TopP: 0.5, MinKeep: 1, TypicalP: 0.999}, halves, []int32{0}},
		{"min_p min_keep", Params{MinP: 0.6, MinKeep: 3}, halves, []int32{0, 1, 2}},
		{"min_p enough pass", Params{MinP: 0.2, MinKeep: 2}, halves, []int32{0, 1, 2, 3}},
		{"top_k then typical", Params{TopK: 2, TypicalP: 0.5, MinKeep: 2}, halves, []int32{0, 1}},
		{"typical then top_p", Params{TypicalP: 0.9, TopP: 0.6}, halves, []int32{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			p.Temperature, p.HasSeed = 1, true
			if got := chainSurvivors(t, p, logitsOf(tt.probs)); !slices.Equal(got, tt.want) {
				t.Errorf("survivors = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestXTCCoinOff checks that XTC leaves the candidates alone when its coin
// comes up above the probability: on seed 0 the first coin is 0.549.
func TestXTCCoinOff(t *testing.T) {
	p := Params{Temperature: 1, XTCProbability: 0.5, XTCThreshold: 0.09, HasSeed: true}
	if got := chainSurvivors(t, p, logitsOf([]float32{0.4, 0.3, 0.2, 0.1})); len(got) != 4 {
		t.Errorf("survivors = %v, want all four (coin 0.549 > 0.5)", got)
	}
	p.XTCProbability = 0.55
	if got := chainSurvivors(t, p, logitsOf([]float32{0.4, 0.3, 0.2, 0.1})); !slices.Equal(got, []int32{3}) {
		t.Errorf("survivors = %v, want [3] (coin 0.549 <= 0.55)", got)
	}
}

// TestMT19937 checks the generator against the C++ standard's required
// value (the 10000th output of a default-seeded std::mt19937 is
// 4123659995) and the first output of seed 0, 2357136044.
func TestMT19937(t *testing.T) {
	var m mt19937
	m.seed(5489)
	var v uint32
	for range 10000 {
		v = m.next()
	}
	if v != 4123659995 {
		t.Errorf("10000th output = %d, want 4123659995", v)
	}
	m.seed(0)
	if v := m.next(); v != 2357136044 {
		t.Errorf("seed 0: first output = %d, want 2357136044", v)
	}
}

// TestXTCSeek checks that a coin depends on (seed, draw) alone: coins read
// in order equal coins sought out of order.
func TestXTCSeek(t *testing.T) {
	var seq xtcCoin
	seq.seek(42, 0)
	var want []float32
	for range 700 { // past one twist of the state
		want = append(want, seq.coin())
	}
	var x xtcCoin
	for _, d := range []uint64{5, 3, 699, 0, 624, 625, 5} {
		x.seek(42, d)
		if got := x.coin(); got != want[d] {
			t.Errorf("coin %d = %v, want %v", d, got, want[d])
		}
	}
	x.seek(7, 0)
	if x.coin() == want[0] {
		t.Error("another seed gave the same first coin")
	}
}

// TestXTCMatchesLlamaCpp: XTC's decisions over 40 calls on the same seed
// are llama.cpp's. The golden strings (1: XTC dropped tokens) were printed
// by llama.cpp b10573's llama_sampler_init_xtc(0.5, 0.1, 1, seed) applied
// 40 times to probabilities 0.4, 0.3, 0.2, 0.1.
func TestXTCMatchesLlamaCpp(t *testing.T) {
	golden := map[uint64]string{
		0:     "0000000010011101011100010100111011000100",
		42:    "1001000011111101010011000011101010011110",
		12345: "0011111000000100010100011111100000000001",
	}
	logits := logitsOf([]float32{0.4, 0.3, 0.2, 0.1})
	for seed, want := range golden {
		s := mustNew(t, Params{Temperature: 1, XTCProbability: 0.5, XTCThreshold: 0.1, Seed: seed, HasSeed: true})
		got := make([]byte, 0, len(want))
		for range len(want) {
			if len(s.chainTruncate(logits)) == 4 {
				got = append(got, '0')
			} else {
				got = append(got, '1')
			}
		}
		if string(got) != want {
			t.Errorf("seed %d: %s, want %s", seed, got, want)
		}
		// Seek gives coin d whatever came before.
		for _, d := range []uint64{7, 3, 39} {
			s.Seek(seed, d)
			if drop := len(s.chainTruncate(logits)) != 4; drop != (want[d] == '1') {
				t.Errorf("seed %d: sought coin %d dropped %v, want %c", seed, d, drop, want[d])
			}
		}
	}
}
