package lora

import (
	"math/rand/v2"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// BenchmarkApplierAdd: the adapters' share of one decode step of
// BenchmarkLoRADecode's model (dim 512, FFN 1536) at one layer: 16 rows
// over 8 rank-16 F32 adapters, two rows each, at the seven projections.
func BenchmarkApplierAdd(b *testing.B) {
	const n, adapters, rank = 16, 8, 16
	shapes := []struct {
		name    string
		in, out int
	}{
		{"blk.0.attn_q.weight", 512, 512}, {"blk.0.attn_k.weight", 512, 256}, {"blk.0.attn_v.weight", 512, 256},
		{"blk.0.attn_output.weight", 512, 512}, {"blk.0.ffn_gate.weight", 512, 1536},
		{"blk.0.ffn_up.weight", 512, 1536}, {"blk.0.ffn_down.weight", 1536, 512},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ads := make([]*Adapter, adapters)
	for i := range ads {
		ads[i] = &Adapter{Path: "a", Alpha: 32, Weights: map[string]*Pair{}}
		for _, s := range shapes {
			p := &Pair{A: randTensor(rng, s.name+".lora_a", s.in, rank), B: randTensor(rng, s.name+".lora_b", rank, s.out)}
			p.lowRank() // B transposed, as Open does
			ads[i].Weights[s.name] = p
		}
	}
	seq := make([]int32, n)
	loras := make([][]Scaled, n)
	for i := range n {
		seq[i] = int32(i)
		loras[i] = []Scaled{{Adapter: ads[i%adapters], Scale: 1}}
	}
	x := randVec(rng, n*1536)
	out := make([]float32, n*1536)
	mm := compute.NewMatMuler(2)
	var ap Applier
	for b.Loop() {
		for _, s := range shapes {
			w := &compute.Tensor{Name: s.name, Type: compute.F32, Shape: []int{s.in, s.out}}
			if err := ap.Add(mm, out, x, n, w, seq, loras); err != nil {
				b.Fatal(err)
			}
		}
	}
}
