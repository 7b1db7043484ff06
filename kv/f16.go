package kv

import "github.com/troupe-llm/troupe/compute"

func roundF16(x []float32) {
	for i, v := range x {
		x[i] = compute.FP16ToFP32(compute.FP32ToFP16(v))
	}
}
