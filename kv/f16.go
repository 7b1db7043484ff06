package kv

import "github.com/troupe-llm/troupe/compute"

func roundF16(x []float32) {
	for i, v := range x {
		x[i] = compute.RoundF16(v)
	}
}
