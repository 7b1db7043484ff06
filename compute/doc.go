// Package compute holds troupe's numeric kernels: tensor types and their
// bit-exact dequantization (ggml's layouts), float16/bfloat16 conversion,
// the matrix products of the forward pass (float32 through gonum's dot
// product, quantized types through ggml-style block dot products), and the
// small vector operations (RMSNorm, RoPE, SwiGLU, softmax).
//
// Every kernel computes a row's result the same way whatever else is in the
// call (rows beside it, the split over workers), bit for bit, so that a
// model's forward pass is batch-invariant; MatMuler.GGMLBatch is the one
// opt-out.
//
// It imports nothing of troupe's. Functions are pure over their arguments;
// a MatMuler owns scratch buffers and is used by one goroutine at a time.
package compute
