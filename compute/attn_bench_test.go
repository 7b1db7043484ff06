package compute

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkAttention times one head group's pass over 1024 cached positions
// of one KV head (TinyLlama's head_dim 64 with 8 query heads per KV head,
// and head_dim 128): scores then the value accumulation. SetBytes is the
// K and V bytes read.
func BenchmarkAttention(b *testing.B) {
	for _, s := range []struct{ hd, g, kvHeads int }{{64, 4, 4}, {128, 2, 8}} {
		b.Run(fmt.Sprintf("hd%d/g%d", s.hd, s.g), func(b *testing.B) {
			const n = 1024
			rng := rand.New(rand.NewPCG(1, 2))
			stride := s.hd * s.kvHeads
			k, v := f16Rows(rng, n*stride), f16Rows(rng, n*stride)
			q := f16Acts(rng, s.g*s.hd)
			vs, ms := make([]float32, s.g*n), make([]float32, s.g*n)
			out := make([]float32, s.g*s.hd)
			b.SetBytes(int64(2 * n * s.hd * 2))
			for b.Loop() {
				for j0 := 0; j0 < n; j0 += 16 {
					DotRowsGroup(vs[j0:], n, q, s.g, k[j0*stride:], stride, 16)
				}
				for i := range ms {
					ms[i], vs[i] = 1, 0.5
				}
				for j0 := 0; j0 < n; j0 += 16 {
					VKQRowsF16Group(out, s.g, v[j0*stride:], stride, ms[j0:], vs[j0:], n, 16)
				}
			}
		})
	}
}

// BenchmarkAttentionQ8_0 is BenchmarkAttention on Q8_0 rows
// (DotRowsQ8_0Group, VKQRowsQ8_0Group).
func BenchmarkAttentionQ8_0(b *testing.B) {
	for _, s := range []struct{ hd, g, kvHeads int }{{64, 4, 4}, {128, 2, 8}} {
		b.Run(fmt.Sprintf("hd%d/g%d", s.hd, s.g), func(b *testing.B) {
			const n = 1024
			rng := rand.New(rand.NewPCG(1, 2))
			rowBytes := s.hd * s.kvHeads / 32 * Q8_0BlockBytes
			k, _ := q8Rows(rng, n, s.hd*s.kvHeads, rowBytes)
			v, _ := q8Rows(rng, n, s.hd*s.kvHeads, rowBytes)
			q := randomActs(rng, s.g*s.hd)
			vs, ms := make([]float32, s.g*n), make([]float32, s.g*n)
			out := make([]float32, s.g*s.hd)
			var q8 Q8_0Query
			b.SetBytes(int64(2 * n * s.hd / 32 * Q8_0BlockBytes))
			for b.Loop() {
				q8.Set(q)
				for j0 := 0; j0 < n; j0 += 16 {
					DotRowsQ8_0Group(vs[j0:], n, &q8, s.g, k[j0*rowBytes:], rowBytes, 16)
				}
				for i := range ms {
					ms[i], vs[i] = 1, 0.5
				}
				for j0 := 0; j0 < n; j0 += 16 {
					VKQRowsQ8_0Group(out, s.g, v[j0*rowBytes:], rowBytes, ms[j0:], vs[j0:], n, 16)
				}
			}
		})
	}
}
