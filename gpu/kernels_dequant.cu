// troupe's CUDA kernels, compiled at run time by NVRTC (no CUDA toolkit at
// build time). Every kernel is extern "C" so the driver finds it by name.
// No header is included: half conversions and warp shuffles are inline PTX,
// so the source also compiles with clang (--cuda-device-only, see
// kernels_test.go).
//
// The kernels are three files, joined in this order into the one source
// NVRTC compiles (kernelSource, load.go), each later file using the
// earlier ones' types, macros and helpers:
//   kernels_dequant.cu: the builds' primitives, scalar helpers and the
//     dequantizers;
//   kernels_matmul.cu: weight rows (get_rows), activations for a matrix
//     product (quantize_act) and the matrix-vector products (mmv, mmvq);
//   kernels_layer.cu: norms, element-wise kernels, RoPE, the KV cache,
//     attention and argmax.
//
// Layouts follow the CPU path: activations are float32 rows; a weight
// matrix is its GGUF bytes, row after row (row_bytes each); the KV cache of
// a layer is (num_blocks * block_size, kv_dim) halves, slot = block *
// block_size + position % block_size.
//
// The arithmetic is ggml's CPU backend's wherever llama.cpp's logits depend
// on it (see doc.go): quantize_act and mmvq for matrix products with
// quantized weights, rms_norm, silu_mul and attention.

// Three builds of the kernels:
//   NVRTC (__CUDACC_RTC__) or clang's CUDA front end: the real kernels;
//   TROUPE_EMU: host C++ over testdata/emu/emu.h, which runs each block's
//     threads as cooperative fibers (the CUDA emulator the tests use where
//     there is no GPU); it supplies the qualifiers, the built-in variables,
//     the math functions and the primitives below;
//   TROUPE_HOST: this file alone, the dequantizers, for the bit-exactness
//     test (testdata/dequant_host.cc).
// Everything between the builds differs only in the primitives: h2f, f2h,
// shfl_bfly, shfl_idx, shfl_idx_i, sync_threads, sync_warp and
// NO_CONTRACT.

typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef unsigned int u32;

#if defined(TROUPE_EMU)
#include "emu.h"
#define DEV static inline
#elif !defined(TROUPE_HOST)
#ifndef __CUDACC_RTC__
// clang without CUDA headers: the attributes NVRTC defines itself.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ __attribute__((always_inline))
#include <__clang_cuda_builtin_vars.h>
extern "C" __device__ float sqrtf(float);
extern "C" __device__ float fmaf(float, float, float);
extern "C" __device__ float fmaxf(float, float);
extern "C" __device__ float fminf(float, float);
extern "C" __device__ float fabsf(float);
extern "C" __device__ float rintf(float);
extern "C" __device__ float ldexpf(float, int);
extern "C" __device__ double exp(double);
#endif
#define DEV static __device__ __forceinline__
DEV float h2f(u16 h) {
	float f;
	asm("{ .reg .b16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
	return f;
}
DEV u16 f2h(float f) {
	u16 h;
	asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h) : "f"(f));
	return h;
}
// shfl_bfly: the value of lane ^ mask; shfl_idx: the value of lane src.
DEV float shfl_bfly(float v, int mask) {
	float t;
	asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(t) : "f"(v), "r"(mask));
	return t;
}
DEV float shfl_idx(float v, int src) {
	float t;
	asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(t) : "f"(v), "r"(src));
	return t;
}
DEV int shfl_idx_i(int v, int src) {
	int t;
	asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(t) : "r"(v), "r"(src));
	return t;
}
DEV void sync_threads() { asm volatile("bar.sync 0;" ::: "memory"); }
DEV void sync_warp() { asm volatile("bar.warp.sync 0xffffffff;" ::: "memory"); }
// NO_CONTRACT keeps a product rounded: the compiler may not fuse it into a
// later add.
#define NO_CONTRACT(x) asm("" : "+f"(x))
#else
#define DEV static inline
#include <math.h>
static inline float h2f(u16 h) { // exact for every half, for the host test
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
	return h >> 15 ? -v : v;
}
#endif

#define WARP 32
#define MMV_MAXM 8   // activation rows per mmv launch
#define MAX_HEAD_DIM 256

// ---- scalar helpers -------------------------------------------------------

DEV float bits2f(u32 b) {
	union { u32 u; float f; } c;
	c.u = b;
	return c.f;
}
DEV u32 f2bits(float f) {
	union { u32 u; float f; } c;
	c.f = f;
	return c.u;
}
DEV float bf2f(u16 h) { return bits2f((u32)h << 16); }

DEV u16 ld16(const u8* p) { return (u16)(p[0] | (p[1] << 8)); }

// ---- dequantization: the g-th group of 32 values of a row -----------------
// For K-quants a group is one 32-value sub-block of a 256-value super-block.
// Each function writes v[0..31] as ggml's dequantize_row_* does.

DEV void dq_f32(const u8* row, int g, float* v) {
	const float* p = (const float*)row + g * 32;
	for (int i = 0; i < 32; i++) v[i] = p[i];
}
DEV void dq_f16(const u8* row, int g, float* v) {
	const u16* p = (const u16*)row + g * 32;
	for (int i = 0; i < 32; i++) v[i] = h2f(p[i]);
}
DEV void dq_bf16(const u8* row, int g, float* v) {
	const u16* p = (const u16*)row + g * 32;
	for (int i = 0; i < 32; i++) v[i] = bf2f(p[i]);
}
DEV void dq_q4_0(const u8* row, int g, float* v) {
	const u8* b = row + g * 18;
	float d = h2f(ld16(b));
	for (int j = 0; j < 16; j++) {
		v[j] = ((b[2 + j] & 0xF) - 8) * d;
		v[j + 16] = ((b[2 + j] >> 4) - 8) * d;
	}
}
DEV void dq_q4_1(const u8* row, int g, float* v) {
	const u8* b = row + g * 20;
	float d = h2f(ld16(b)), m = h2f(ld16(b + 2));
	for (int j = 0; j < 16; j++) {
		v[j] = (b[4 + j] & 0xF) * d + m;
		v[j + 16] = (b[4 + j] >> 4) * d + m;
	}
}
DEV void dq_q5_0(const u8* row, int g, float* v) {
	const u8* b = row + g * 22;
	float d = h2f(ld16(b));
	u32 qh = b[2] | (b[3] << 8) | (b[4] << 16) | ((u32)b[5] << 24);
	for (int j = 0; j < 16; j++) {
		int x0 = (b[6 + j] & 0xF) | (((qh >> j) << 4) & 0x10);
		int x1 = (b[6 + j] >> 4) | ((qh >> (j + 12)) & 0x10);
		v[j] = (x0 - 16) * d;
		v[j + 16] = (x1 - 16) * d;
	}
}
DEV void dq_q5_1(const u8* row, int g, float* v) {
	const u8* b = row + g * 24;
	float d = h2f(ld16(b)), m = h2f(ld16(b + 2));
	u32 qh = b[4] | (b[5] << 8) | (b[6] << 16) | ((u32)b[7] << 24);
	for (int j = 0; j < 16; j++) {
		int x0 = (b[8 + j] & 0xF) | (((qh >> j) << 4) & 0x10);
		int x1 = (b[8 + j] >> 4) | ((qh >> (j + 12)) & 0x10);
		v[j] = x0 * d + m;
		v[j + 16] = x1 * d + m;
	}
}
DEV void dq_q8_0(const u8* row, int g, float* v) {
	const u8* b = row + g * 34;
	float d = h2f(ld16(b));
	for (int j = 0; j < 32; j++) v[j] = (i8)b[2 + j] * d;
}
// Q2_K: scales[16], qs[64], d, dmin (84 bytes).
DEV void dq_q2_k(const u8* row, int g, float* v) {
	const u8* b = row + (g >> 3) * 84;
	int s = g & 7, half = s >> 2, j = s & 3;
	float d = h2f(ld16(b + 80)), mn = h2f(ld16(b + 82));
	const u8* q = b + 16 + half * 32;
	for (int k = 0; k < 2; k++) {
		u8 sc = b[half * 8 + 2 * j + k];
		float dl = d * (sc & 0xF), ml = mn * (sc >> 4);
		for (int l = 0; l < 16; l++) v[k * 16 + l] = dl * ((q[k * 16 + l] >> (2 * j)) & 3) - ml;
	}
}
// Q3_K: hmask[32], qs[64], scales[12], d (110 bytes).
DEV int q3k_scale(const u8* sc, int i) {
	// ggml's kmask unpacking of 16 6-bit scales, one at a time.
	int lo = i < 8 ? (sc[i] & 0xF) : (sc[i - 8] >> 4);
	int hi = (sc[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
	return (lo | (hi << 4)) - 32;
}
DEV void dq_q3_k(const u8* row, int g, float* v) {
	const u8* b = row + (g >> 3) * 110;
	int s = g & 7, half = s >> 2, j = s & 3;
	float d = h2f(ld16(b + 108));
	const u8* hm = b;
	const u8* q = b + 32 + half * 32;
	u8 m = (u8)(1 << (half * 4 + j));
	for (int k = 0; k < 2; k++) {
		float dl = d * q3k_scale(b + 96, half * 8 + 2 * j + k);
		for (int l = 0; l < 16; l++) {
			int x = ((q[k * 16 + l] >> (2 * j)) & 3) - ((hm[k * 16 + l] & m) ? 0 : 4);
			v[k * 16 + l] = dl * x;
		}
	}
}
DEV void k4_scale_min(int j, const u8* q, int* sc, int* m) {
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
		*m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
}
// Q4_K: d, dmin, scales[12], qs[128] (144 bytes).
DEV void dq_q4_k(const u8* row, int g, float* v) {
	const u8* b = row + (g >> 3) * 144;
	int s = g & 7, sc, m;
	k4_scale_min(s, b + 4, &sc, &m);
	float d = h2f(ld16(b)) * sc, mn = h2f(ld16(b + 2)) * m;
	const u8* q = b + 16 + (s >> 1) * 32;
	int shift = (s & 1) * 4;
	for (int l = 0; l < 32; l++) v[l] = d * ((q[l] >> shift) & 0xF) - mn;
}
// Q5_K: d, dmin, scales[12], qh[32], qs[128] (176 bytes).
DEV void dq_q5_k(const u8* row, int g, float* v) {
	const u8* b = row + (g >> 3) * 176;
	int s = g & 7, sc, m;
	k4_scale_min(s, b + 4, &sc, &m);
	float d = h2f(ld16(b)) * sc, mn = h2f(ld16(b + 2)) * m;
	const u8* qh = b + 16;
	const u8* q = b + 48 + (s >> 1) * 32;
	int shift = (s & 1) * 4;
	for (int l = 0; l < 32; l++) v[l] = d * (((q[l] >> shift) & 0xF) + ((qh[l] >> s) & 1 ? 16 : 0)) - mn;
}
// Q6_K: ql[128], qh[64], scales[16] (int8), d (210 bytes).
DEV void dq_q6_k(const u8* row, int g, float* v) {
	const u8* b = row + (g >> 3) * 210;
	int s = g & 7, half = s >> 2, k = s & 3;
	float d = h2f(ld16(b + 208));
	const u8* ql = b + half * 64 + (k & 1) * 32;
	const u8* qh = b + 128 + half * 32;
	const i8* sc = (const i8*)(b + 192 + half * 8);
	int shift = (k >> 1) * 4;
	for (int l = 0; l < 32; l++) {
		int q = (((ql[l] >> shift) & 0xF) | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
		v[l] = d * sc[l / 16 + 2 * k] * q;
	}
}
