package spec

import (
	"slices"
	"testing"
)

func TestNGramPropose(t *testing.T) {
	cases := []struct {
		name   string
		g      NGram
		tokens []int32
		k      int
		want   []int32
	}{
		{"quote back", NGram{}, []int32{1, 2, 3, 4, 5, 6, 9, 1, 2, 3}, 3, []int32{4, 5, 6}},
		{"k bounds it", NGram{}, []int32{1, 2, 3, 4, 5, 6, 9, 1, 2, 3}, 2, []int32{4, 5}},
		{"repeats past the end of the tokens", NGram{}, []int32{7, 1, 2, 8, 1, 2}, 5, []int32{8, 1, 2, 8, 1}},
		{"latest match wins", NGram{}, []int32{1, 2, 5, 1, 2, 6, 1, 2}, 1, []int32{6}},
		{"longest suffix first", NGram{MinN: 2, MaxN: 3}, []int32{1, 2, 3, 7, 9, 2, 3, 8, 1, 2, 3}, 1, []int32{7}},
		{"falls back to a shorter suffix", NGram{MinN: 2, MaxN: 3}, []int32{5, 2, 3, 8, 1, 2, 3}, 1, []int32{8}},
		{"no match", NGram{}, []int32{1, 2, 3, 4}, 3, nil},
		{"below MinN", NGram{MinN: 3}, []int32{1, 2, 9, 5, 1, 2}, 3, nil},
		{"a repeated token", NGram{}, []int32{4, 4, 4}, 4, []int32{4, 4, 4, 4}},
		{"a loop of two", NGram{}, []int32{9, 5, 6, 5, 6}, 5, []int32{5, 6, 5, 6, 5}},
		{"too short", NGram{}, []int32{1}, 3, nil},
		{"k 0", NGram{}, []int32{1, 2, 3, 1, 2}, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.g.Propose(nil, tc.tokens, tc.k)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Propose(%v, k=%d) = %v, want %v", tc.tokens, tc.k, got, tc.want)
			}
		})
	}
}
