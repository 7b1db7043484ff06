package kv

import "github.com/troupe-llm/troupe/compute"

func roundF16(x []float32) {
	compute.RoundF16s(x, x)
}
