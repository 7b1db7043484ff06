// Package compute holds troupe's numeric kernels: tensor types and their
// bit-exact dequantization (ggml's layouts), float16/bfloat16 conversion,
// the matrix products of the forward pass (float32 through gonum's blas32,
// quantized types through ggml-style block dot products), and the small
// vector operations (RMSNorm, RoPE, SwiGLU, softmax).
//
// It imports nothing of troupe's. Functions are pure over their arguments;
// a MatMuler owns scratch buffers and is used by one goroutine at a time.
package compute
