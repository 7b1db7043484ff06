// troupe's CUDA kernels, compiled at run time by NVRTC (no CUDA toolkit at
// build time). Every kernel is extern "C" so the driver finds it by name.
// No header is included: half conversions and warp shuffles are inline PTX,
// so the file also compiles with clang (--cuda-device-only, see
// kernels_test.go).
//
// Layouts follow the CPU path: activations are float32 rows; a weight
// matrix is its GGUF bytes, row after row (row_bytes each); the KV cache of
// a layer is (num_blocks * block_size, kv_dim) halves, slot = block *
// block_size + position % block_size.
//
// The arithmetic is ggml's CPU backend's wherever llama.cpp's logits depend
// on it (see doc.go): quantize_act and mmvq for matrix products with
// quantized weights, rms_norm, silu_mul and attention.

// Three builds of this file:
//   NVRTC (__CUDACC_RTC__) or clang's CUDA front end: the real kernels;
//   TROUPE_EMU: host C++ over testdata/emu/emu.h, which runs each block's
//     threads as cooperative fibers (the CUDA emulator the tests use where
//     there is no GPU); it supplies the qualifiers, the built-in variables,
//     the math functions and the primitives below;
//   TROUPE_HOST: the dequantizers alone, for the bit-exactness test.
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

#ifndef TROUPE_HOST
DEV float warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += shfl_bfly(v, o);
	return v;
}
DEV float warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, shfl_bfly(v, o));
	return v;
}
#endif

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

#ifndef TROUPE_HOST

// ---- rows of a weight matrix --------------------------------------------------
// dqn_T: the first n (< 32) values of group g, for a row that ends inside
// it. Only rows of a float type can (stories260K's FFN is 172 wide);
// quantized rows are whole blocks of 32 or 256 values, so for those types
// get_rows never calls it.
DEV void dqn_f32(const u8* row, int g, float* v, int n) {
	const float* p = (const float*)row + g * 32;
	for (int i = 0; i < n; i++) v[i] = p[i];
}
DEV void dqn_f16(const u8* row, int g, float* v, int n) {
	const u16* p = (const u16*)row + g * 32;
	for (int i = 0; i < n; i++) v[i] = h2f(p[i]);
}
DEV void dqn_bf16(const u8* row, int g, float* v, int n) {
	const u16* p = (const u16*)row + g * 32;
	for (int i = 0; i < n; i++) v[i] = bf2f(p[i]);
}
#define DEFINE_DQN_WHOLE(T) \
	DEV void dqn_##T(const u8* row, int g, float* v, int) { dq_##T(row, g, v); }
DEFINE_DQN_WHOLE(q4_0)
DEFINE_DQN_WHOLE(q4_1)
DEFINE_DQN_WHOLE(q5_0)
DEFINE_DQN_WHOLE(q5_1)
DEFINE_DQN_WHOLE(q8_0)
DEFINE_DQN_WHOLE(q2_k)
DEFINE_DQN_WHOLE(q3_k)
DEFINE_DQN_WHOLE(q4_k)
DEFINE_DQN_WHOLE(q5_k)
DEFINE_DQN_WHOLE(q6_k)

// get_rows: rows[i] of W (or rows row0.. when idx is null) dequantized to
// out, (n_rows, k).
#define DEFINE_GET_ROWS(T)                                                                \
	extern "C" __global__ void get_rows_##T(const u8* w, unsigned long long row_bytes,    \
	                                        const int* idx, int row0, float* out, int k) { \
		int r = blockIdx.x;                                                               \
		long long src = idx ? idx[r] : row0 + r;                                          \
		const u8* row = w + (unsigned long long)src * row_bytes;                          \
		float v[32];                                                                      \
		for (int g = threadIdx.x; g < k / 32; g += blockDim.x) {                          \
			dq_##T(row, g, v);                                                            \
			for (int i = 0; i < 32; i++) out[(long long)r * k + g * 32 + i] = v[i];       \
		}                                                                                 \
		if (k % 32 && threadIdx.x == k / 32 % blockDim.x) { /* the partial last group */  \
			int g = k / 32;                                                               \
			dqn_##T(row, g, v, k % 32);                                                   \
			for (int i = 0; i < k % 32; i++) out[(long long)r * k + g * 32 + i] = v[i];   \
		}                                                                                 \
	}
DEFINE_GET_ROWS(f32)
DEFINE_GET_ROWS(f16)
DEFINE_GET_ROWS(bf16)
DEFINE_GET_ROWS(q4_0)
DEFINE_GET_ROWS(q4_1)
DEFINE_GET_ROWS(q5_0)
DEFINE_GET_ROWS(q5_1)
DEFINE_GET_ROWS(q8_0)
DEFINE_GET_ROWS(q2_k)
DEFINE_GET_ROWS(q3_k)
DEFINE_GET_ROWS(q4_k)
DEFINE_GET_ROWS(q5_k)
DEFINE_GET_ROWS(q6_k)

// ---- activations for a matrix product ------------------------------------------
// Before a weight's dot products ggml's CPU backend, which made the
// reference logits, converts the activations to the weight type's
// vec_dot_type: Q8_0 blocks of 32 for Q4_0, Q5_0 and Q8_0 weights, Q8_1 for
// Q4_1 and Q5_1 (Q8_0 plus s, each block's sum), Q8_K super-blocks of 256
// for the K-quants, f16 (bf16) values for F16 (BF16). quantize_act does the
// same, as compute's quantizers (quantize_act.go): Q8_0 d = amax/127 held
// as f16, q = round-half-even(x*127/amax), s = f16(d*sum q) with the
// unrounded d; Q8_K iscale = -127/max over the first value of largest
// magnitude, q = min(127, round(iscale*x)), d = 1/iscale, and bsums, the
// sums of each 16 q. Row r of x (k values) goes to row r of the outputs:
// q int8 (k a row), d and s floats (a block), bsums ints (16 values);
// f16/bf16 values as floats to xf.
#define ACT_Q8_0 1
#define ACT_Q8_K 2
#define ACT_F16 3
#define ACT_BF16 4

DEV float round_bf16(float f) {
	u32 u = f2bits(f);
	if ((u & 0x7fffffff) > 0x7f800000) return bits2f((u | 0x400000) & 0xffff0000); // NaN, quieted
	return bits2f((u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000);
}

// quantize_act: block r converts row r, a warp per block of 32 or 256.
extern "C" __global__ void quantize_act(const float* x, float* xf, i8* aq, float* ad, float* as, int* ab, int k,
                                        int mode) {
	long long r = blockIdx.x;
	const float* xr = x + r * k;
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
	if (mode == ACT_F16 || mode == ACT_BF16) {
		for (int i = threadIdx.x; i < k; i += blockDim.x)
			xf[r * k + i] = mode == ACT_F16 ? h2f(f2h(xr[i])) : round_bf16(xr[i]);
	} else if (mode == ACT_Q8_0) {
		for (int b = warp; b < k / 32; b += warps) {
			float v = xr[b * 32 + lane];
			float amax = warp_max(fabsf(v));
			float d = amax / 127.f, id = amax != 0.f ? 127.f / amax : 0.f;
			float q = fminf(fmaxf(rintf(v * id), -128.f), 127.f);
			float sum = warp_sum(q); // exact: integers below 2^12
			aq[r * k + b * 32 + lane] = (i8)q;
			if (lane == 0) {
				ad[r * (k / 32) + b] = h2f(f2h(d));
				as[r * (k / 32) + b] = h2f(f2h(d * sum));
			}
		}
	} else if (mode == ACT_Q8_K) {
		for (int b = warp; b < k / 256; b += warps) {
			const float* xb = xr + b * 256;
			i8* qb = aq + r * k + b * 256;
			float amax = 0.f;
			int at = 0; // the first index of the largest magnitude
			for (int j = 0; j < 8; j++) {
				float a = fabsf(xb[lane + 32 * j]);
				if (a > amax) amax = a, at = lane + 32 * j;
			}
			for (int o = 16; o > 0; o >>= 1) {
				float oa = shfl_bfly(amax, o);
				int oi = shfl_idx_i(at, lane ^ o);
				if (oa > amax || (oa == amax && oi < at)) amax = oa, at = oi;
			}
			float iscale = amax != 0.f ? -127.f / xb[at] : 0.f;
			for (int j = 0; j < 8; j++) qb[lane + 32 * j] = (i8)fminf(rintf(iscale * xb[lane + 32 * j]), 127.f);
			if (lane == 0) ad[r * (k / 256) + b] = amax != 0.f ? 1.f / iscale : 0.f;
			sync_warp(); // the quants are read back by other lanes
			if (lane < 16) {
				int s = 0;
				for (int i = 0; i < 16; i++) s += qb[16 * lane + i];
				ab[r * (k / 16) + b * 16 + lane] = s;
			}
		}
	}
}

// ---- matrix-vector products: float weights -------------------------------------
// y[r*n + o] = sum_j W[o, j] * x[r*k + j] for r < m <= MMV_MAXM, for F32,
// F16 and BF16 weights (x as quantize_act rounded it for F16 and BF16). A
// warp per output row; lane l takes groups l, l+32, ... (the last one
// partial when k is not a multiple of 32); each group's products are
// summed in order, then the lanes' sums by a fixed butterfly. The
// arithmetic of one (r, o) depends only on row r of x and row o of W, never
// on m, so the product is batch-invariant. (ggml sums these in other
// orders; nothing quantizes their results before F16 and F32 layers read
// them, so the difference stays at float rounding.)
#define MMV_WARPS 4
#define DEFINE_MMV(T)                                                                     \
	extern "C" __global__ void mmv_##T(const u8* w, unsigned long long row_bytes,         \
	                                   const float* x, float* y, int k, int n, int m) {   \
		int lane = threadIdx.x & 31;                                                      \
		int o = blockIdx.x * MMV_WARPS + (threadIdx.x >> 5);                              \
		if (o >= n) return;                                                               \
		const u8* row = w + (unsigned long long)o * row_bytes;                            \
		float acc[MMV_MAXM];                                                              \
		for (int r = 0; r < MMV_MAXM; r++) acc[r] = 0.f;                                  \
		float v[32];                                                                      \
		for (int g = lane; g < (k + 31) / 32; g += WARP) {                                \
			int cnt = k - g * 32 < 32 ? k - g * 32 : 32;                                  \
			if (cnt == 32)                                                                \
				dq_##T(row, g, v);                                                        \
			else                                                                          \
				dqn_##T(row, g, v, cnt);                                                  \
			_Pragma("unroll") for (int r = 0; r < MMV_MAXM; r++) {                        \
				if (r < m) {                                                              \
					const float* xr = x + (long long)r * k + g * 32;                      \
					float s = 0.f;                                                        \
					if (cnt == 32)                                                        \
						for (int i = 0; i < 32; i++) s = fmaf(v[i], xr[i], s);            \
					else                                                                  \
						for (int i = 0; i < cnt; i++) s = fmaf(v[i], xr[i], s);           \
					acc[r] += s;                                                          \
				}                                                                         \
			}                                                                             \
		}                                                                                 \
		_Pragma("unroll") for (int r = 0; r < MMV_MAXM; r++) {                            \
			if (r < m) { /* m is the same for every lane: they all take part */           \
				float s = warp_sum(acc[r]);                                               \
				if (lane == 0) y[(long long)r * n + o] = s;                               \
			}                                                                             \
		}                                                                                 \
	}
DEFINE_MMV(f32)
DEFINE_MMV(f16)
DEFINE_MMV(bf16)

// ---- matrix-vector products: quantized weights -----------------------------------
// y[r*n + o] = the dot product of weight row o with activation row r (as
// quantize_act made it) for r < m <= MMV_MAXM, with ggml's arithmetic, as
// compute's block dot products (vecdot.go, vecdot_k.go): exact integer sums
// of q_w*q_x inside a block, and the float work in the order of the x86
// kernels that made the reference logits, which decides the last bits (and
// the next layer's activation quants can turn a last bit into a whole
// quantization step). Two forms:
//   lanes: eight float accumulators; lane l adds, per block in order, the
//     integer sum of the products at positions p with (p mod 32)/4 == l,
//     times the block scale, by FMA; hsum8 adds the lanes at the end.
//     Thread l of a row's eight threads is lane l.
//   sequential: one accumulator, acc = FMA(isum, d_w*d_x, acc) per block in
//     order (and accm for the K-quants' mins). Thread l computes the
//     integer sums of blocks l, l+8, ...; each block's reach every thread
//     by shuffle, and they all run the chain.
// MMVQ_ROWS output rows a block of 128 threads, 8 threads a row.
#define MMVQ_ROWS 16

DEV float hsum8(const float* a) {
	float r0 = a[4] + a[0], r1 = a[5] + a[1], r2 = a[6] + a[2], r3 = a[7] + a[3];
	return (r0 + r2) + (r1 + r3);
}
DEV int nib(const u8* qs, int p) { return p < 16 ? qs[p] & 0xF : qs[p - 16] >> 4; } // 32-value block
DEV int q5(const u8* qs, u32 qh, int p) { return nib(qs, p) | (((qh >> p) & 1) << 4); }
DEV u32 ld32(const u8* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | ((u32)p[3] << 24); }

// The lanes form: blk_T adds block b's part for lane l into acc (and summs).
// x: the block's activation quants; xd, xs: its d and s; bs: its bsums.
DEV void blk_q4_1(const u8* b, const i8* x, float xd, float xs, const int*, int l, float* acc, float* summs) {
	*summs = fmaf(h2f(ld16(b + 2)), xs, *summs);
	int s = 0;
	for (int p = 4 * l; p < 4 * l + 4; p++) s += nib(b + 4, p) * x[p];
	*acc = fmaf(h2f(ld16(b)) * xd, (float)s, *acc);
}
DEV void blk_q5_0(const u8* b, const i8* x, float xd, float, const int*, int l, float* acc, float*) {
	int s = 0;
	for (int p = 4 * l; p < 4 * l + 4; p++) s += (q5(b + 6, ld32(b + 2), p) - 16) * x[p];
	*acc = fmaf(h2f(ld16(b)) * xd, (float)s, *acc);
}
DEV void blk_q5_1(const u8* b, const i8* x, float xd, float xs, const int*, int l, float* acc, float* summs) {
	*summs = fmaf(h2f(ld16(b + 2)), xs, *summs);
	int s = 0;
	for (int p = 4 * l; p < 4 * l + 4; p++) s += q5(b + 8, ld32(b + 4), p) * x[p];
	*acc = fmaf(h2f(ld16(b)) * xd, (float)s, *acc);
}
DEV void blk_q8_0(const u8* b, const i8* x, float xd, float, const int*, int l, float* acc, float*) {
	int s = 0;
	for (int p = 4 * l; p < 4 * l + 4; p++) s += (i8)b[2 + p] * x[p];
	*acc = fmaf(h2f(ld16(b)) * xd, (float)s, *acc);
}
// K-quant lane l: positions 4l + 32t + i (t < 8, i < 4), each run of four
// times its sub-block's scale.
DEV int q3k_w(const u8* b, int p) {
	int q = (b[32 + p / 128 * 32 + p % 32] >> (2 * (p % 128 / 32))) & 3;
	return b[p % 32] & (1 << (p / 32)) ? q : q - 4;
}
DEV void blk_q3_k(const u8* b, const i8* x, float xd, float, const int*, int l, float* acc, float*) {
	int s = 0;
	for (int t = 0; t < 8; t++) {
		int p0 = 4 * l + 32 * t, part = 0;
		for (int p = p0; p < p0 + 4; p++) part += q3k_w(b, p) * x[p];
		s += q3k_scale(b + 96, p0 / 16) * part;
	}
	*acc = fmaf(xd * h2f(ld16(b + 108)), (float)s, *acc);
}
DEV int q5k_w(const u8* b, int p) {
	int j = p / 64, hi = p % 64 / 32, l = p % 32, q = b[48 + 32 * j + l];
	return (hi ? q >> 4 : q & 0xF) + (b[16 + l] & (1 << (2 * j + hi)) ? 16 : 0);
}
DEV void blk_q5_k(const u8* b, const i8* x, float xd, float, const int* bs, int l, float* acc, float* summs) {
	int imin = 0, s = 0, sc, m;
	for (int j = 0; j < 8; j++) {
		k4_scale_min(j, b + 4, &sc, &m);
		imin += m * (bs[2 * j] + bs[2 * j + 1]);
	}
	*summs = fmaf(-xd * h2f(ld16(b + 2)), (float)imin, *summs);
	for (int t = 0; t < 8; t++) {
		int p0 = 4 * l + 32 * t, part = 0;
		for (int p = p0; p < p0 + 4; p++) part += q5k_w(b, p) * x[p];
		k4_scale_min(p0 / 32, b + 4, &sc, &m);
		s += sc * part;
	}
	*acc = fmaf(xd * h2f(ld16(b)), (float)s, *acc);
}
DEV int q6k_w(const u8* b, int p) { // unsigned: 0..63
	int n = p / 128, quad = p % 128 / 32, l = p % 32;
	const u8* ql = b + 64 * n + (quad & 1) * 32;
	int lo = quad < 2 ? ql[l] & 0xF : ql[l] >> 4;
	return lo | (((b[128 + 32 * n + l] >> (2 * quad)) & 3) << 4);
}
DEV void blk_q6_k(const u8* b, const i8* x, float xd, float, const int* bs, int l, float* acc, float*) {
	const i8* sc = (const i8*)(b + 192);
	int s = 0;
	for (int t = 0; t < 8; t++) {
		int p0 = 4 * l + 32 * t, part = 0;
		for (int p = p0; p < p0 + 4; p++) part += q6k_w(b, p) * x[p];
		s += sc[p0 / 16] * part;
	}
	s -= 32 * (bs[2 * l] * sc[2 * l] + bs[2 * l + 1] * sc[2 * l + 1]);
	*acc = fmaf(xd * h2f(ld16(b + 208)), (float)s, *acc);
}

#define DEFINE_MMVQ_LANES(T, QK, BYTES)                                                         \
	extern "C" __global__ void mmvq_##T(const u8* w, unsigned long long row_bytes, const i8* aq, \
	                                    const float* ad, const float* as, const int* ab, float* y, \
	                                    int k, int n, int m) {                                   \
		int l = threadIdx.x & 7, base = threadIdx.x & 24, nb = k / QK;                           \
		int o = blockIdx.x * MMVQ_ROWS + (threadIdx.x >> 3);                                     \
		const u8* row = w + (unsigned long long)(o < n ? o : 0) * row_bytes;                     \
		float acc[MMV_MAXM], summs[MMV_MAXM];                                                    \
		for (int r = 0; r < MMV_MAXM; r++) acc[r] = summs[r] = 0.f;                              \
		for (int b = 0; b < nb; b++) {                                                           \
			_Pragma("unroll") for (int r = 0; r < MMV_MAXM; r++) {                               \
				if (r < m)                                                                       \
					blk_##T(row + b * BYTES, aq + (long long)r * k + b * QK, ad[r * nb + b],     \
					        QK == 32 ? as[r * nb + b] : 0.f, ab + (long long)r * (k / 16) + b * (QK / 16), \
					        l, &acc[r], &summs[r]);                                              \
			}                                                                                    \
		}                                                                                        \
		_Pragma("unroll") for (int r = 0; r < MMV_MAXM; r++) {                                   \
			if (r < m) { /* m is the same for every lane: they all take part */                  \
				float a[8];                                                                      \
				for (int i = 0; i < 8; i++) a[i] = shfl_idx(acc[r], base + i);                   \
				float s = hsum8(a) + summs[r];                                                   \
				if (o < n && l == 0) y[(long long)r * n + o] = s;                                \
			}                                                                                    \
		}                                                                                        \
	}
DEFINE_MMVQ_LANES(q4_1, 32, 20)
DEFINE_MMVQ_LANES(q5_0, 32, 22)
DEFINE_MMVQ_LANES(q5_1, 32, 24)
DEFINE_MMVQ_LANES(q8_0, 32, 34)
DEFINE_MMVQ_LANES(q3_k, 256, 110)
DEFINE_MMVQ_LANES(q5_k, 256, 176)
DEFINE_MMVQ_LANES(q6_k, 256, 210)

// The sequential form: sums_T computes block b's integer sums (isum, imin),
// acc_T runs its FMAs.
DEV void sums_q4_0(const u8* b, const i8* x, const int*, int* isum, int* imin) {
	int s = 0;
	for (int p = 0; p < 32; p++) s += (nib(b + 2, p) - 8) * x[p];
	*isum = s, *imin = 0;
}
DEV void acc_q4_0(const u8* b, float xd, int isum, int, float* acc, float*) {
	*acc = fmaf((float)isum, h2f(ld16(b)) * xd, *acc);
}
// Q2_K: sixteen sub-blocks of 16, scale (low nibble) and min (high) each.
DEV void sums_q2_k(const u8* b, const i8* x, const int* bs, int* isum, int* imin) {
	int s = 0, mn = 0;
	for (int j = 0; j < 16; j++) {
		int part = 0;
		for (int p = 16 * j; p < 16 * j + 16; p++)
			part += ((b[16 + p / 128 * 32 + p % 32] >> (2 * (p % 128 / 32))) & 3) * x[p];
		s += (b[j] & 0xF) * part;
		mn += bs[j] * (b[j] >> 4);
	}
	*isum = s, *imin = mn;
}
DEV void acc_q2_k(const u8* b, float xd, int isum, int imin, float* acc, float* accm) {
	*acc = fmaf((float)isum, h2f(ld16(b + 80)) * xd, *acc);
	*accm = fmaf((float)imin, h2f(ld16(b + 82)) * xd, *accm);
}
// Q4_K: eight sub-blocks of 32.
DEV void sums_q4_k(const u8* b, const i8* x, const int* bs, int* isum, int* imin) {
	int s = 0, mn = 0, sc, m;
	for (int j = 0; j < 8; j++) {
		k4_scale_min(j, b + 4, &sc, &m);
		const u8* q = b + 16 + j / 2 * 32;
		int part = 0;
		for (int l = 0; l < 32; l++) part += (j & 1 ? q[l] >> 4 : q[l] & 0xF) * x[32 * j + l];
		s += sc * part;
		mn += m * (bs[2 * j] + bs[2 * j + 1]);
	}
	*isum = s, *imin = mn;
}
DEV void acc_q4_k(const u8* b, float xd, int isum, int imin, float* acc, float* accm) {
	*acc = fmaf((float)isum, h2f(ld16(b)) * xd, *acc);
	*accm = fmaf((float)imin, h2f(ld16(b + 2)) * xd, *accm);
}

#define DEFINE_MMVQ_SEQ(T, QK, BYTES, MINS)                                                     \
	extern "C" __global__ void mmvq_##T(const u8* w, unsigned long long row_bytes, const i8* aq, \
	                                    const float* ad, const float*, const int* ab, float* y,    \
	                                    int k, int n, int m) {                                   \
		int l = threadIdx.x & 7, base = threadIdx.x & 24, nb = k / QK;                           \
		int o = blockIdx.x * MMVQ_ROWS + (threadIdx.x >> 3);                                     \
		const u8* row = w + (unsigned long long)(o < n ? o : 0) * row_bytes;                     \
		float acc[MMV_MAXM], accm[MMV_MAXM];                                                     \
		for (int r = 0; r < MMV_MAXM; r++) acc[r] = accm[r] = 0.f;                               \
		for (int b0 = 0; b0 < nb; b0 += 8) {                                                     \
			int b = b0 + l, cnt = nb - b0 < 8 ? nb - b0 : 8;                                     \
			_Pragma("unroll") for (int r = 0; r < MMV_MAXM; r++) {                               \
				if (r < m) {                                                                     \
					int isum = 0, imin = 0;                                                      \
					if (b < nb)                                                                  \
						sums_##T(row + b * BYTES, aq + (long long)r * k + b * QK,                \
						         ab + (long long)r * (k / 16) + b * (QK / 16), &isum, &imin);     \
					for (int i = 0; i < cnt; i++) { /* in block order, on every thread */        \
						int s = shfl_idx_i(isum, base + i), mn = MINS ? shfl_idx_i(imin, base + i) : 0; \
						acc_##T(row + (b0 + i) * BYTES, ad[r * nb + b0 + i], s, mn, &acc[r], &accm[r]); \
					}                                                                            \
				}                                                                                \
			}                                                                                    \
		}                                                                                        \
		_Pragma("unroll") for (int r = 0; r < MMV_MAXM; r++)                                     \
			if (r < m && o < n && l == 0) y[(long long)r * n + o] = acc[r] - accm[r];            \
	}
DEFINE_MMVQ_SEQ(q4_0, 32, 18, 0)
DEFINE_MMVQ_SEQ(q2_k, 256, 84, 1)
DEFINE_MMVQ_SEQ(q4_k, 256, 144, 1)

// ---- element-wise and row kernels -------------------------------------------

// rms_norm: y row r = x row (idx ? idx[r] : r) * w / sqrt(mean(x^2) + eps),
// as ggml computes it: the float squares summed in double, the mean
// rounded to float, scale = 1.0f/sqrtf(mean + eps). One block of 256
// threads per row; y may be x.
extern "C" __global__ void rms_norm(const float* x, const float* w, float* y, const int* idx,
                                    int width, int x_stride, int y_stride, float eps) {
	__shared__ double part[256];
	__shared__ float scale_s;
	int r = blockIdx.x;
	const float* xr = x + (long long)(idx ? idx[r] : r) * x_stride;
	float* yr = y + (long long)r * y_stride;
	double s = 0.0;
	for (int i = threadIdx.x; i < width; i += blockDim.x) s += (double)(xr[i] * xr[i]);
	part[threadIdx.x] = s;
	sync_threads();
	if (threadIdx.x == 0) {
		for (int i = 1; i < (int)blockDim.x; i++) s += part[i];
		scale_s = 1.0f / sqrtf((float)(s / width) + eps);
	}
	sync_threads();
	float scale = scale_s;
	for (int i = threadIdx.x; i < width; i += blockDim.x) yr[i] = xr[i] * scale * w[i];
}

// add_bias: x[i] += b[i % width] over total values.
extern "C" __global__ void add_bias(float* x, const float* b, int width, int total) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < total) x[i] += b[i % width];
}

// add: x[i] += y[i].
extern "C" __global__ void add(float* x, const float* y, int total) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < total) x[i] += y[i];
}

// v_expf is ggml_v_expf (its AVX512 form, as compute's vExpf) for one
// value: e^x from a degree-5 polynomial on the reduced argument, times 2^n.
DEV float v_expf(float x) {
	const float r = bits2f(0x4b400000u); // 0x1.8p23
	float z = fmaf(x, bits2f(0x3fb8aa3bu), r);
	float n = z - r;
	float b = fmaf(-n, bits2f(0x35bfbe8eu), fmaf(-n, bits2f(0x3f317200u), x));
	if (fabsf(n) > 192.f) return n <= 0.f ? 0.f : bits2f(0x7f800000u);
	float u = b * b;
	float j = fmaf(fmaf(fmaf(bits2f(0x3c072010u), b, bits2f(0x3d2b9f17u)), u, fmaf(bits2f(0x3e2aaf33u), b, bits2f(0x3efffedbu))), u,
	               fmaf(bits2f(0x3f7ffff6u), b, 1.f));
	return ldexpf(j, (int)n);
}

// silu_mul: g[i] = silu(g[i]) * u[i] over rows of width values, as ggml's
// swiglu: g / (1 + e^-g) * u, with v_expf for the whole groups of 16 of a
// row and float(exp(double)) for the rest.
extern "C" __global__ void silu_mul(float* g, const float* u, int total, int width) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < total) {
		float a = g[i];
		float e = i % width < width - width % 16 ? v_expf(-a) : (float)exp((double)-a);
		g[i] = a / (1.0f + e) * u[i];
	}
}

// rope: rotates the first rope_dim values of each head of token t (block
// (t, h)) by the angles cs[t*rope_dim + 2i] (cos), [2i+1] (sin) that the
// host computed as the CPU path does; neox pairs (i, i+rope_dim/2), else
// (2i, 2i+1). The products are rounded before the fused add, as on the CPU.
extern "C" __global__ void rope(float* x, const float* cs, int hd, int rope_dim, int neox, int row_stride) {
	int t = blockIdx.x, h = blockIdx.y, half = rope_dim / 2;
	float* xh = x + (long long)t * row_stride + h * hd;
	const float* c = cs + (long long)t * rope_dim;
	for (int i = threadIdx.x; i < half; i += blockDim.x) {
		int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
		float co = c[2 * i], si = c[2 * i + 1], x0 = xh[a], x1 = xh[b];
		float p1 = x1 * si, p2 = x1 * co;
		NO_CONTRACT(p1);
		NO_CONTRACT(p2);
		xh[a] = fmaf(x0, co, -p1);
		xh[b] = fmaf(x0, si, p2);
	}
}

// kv_store: token t's keys and values (rows of kv_dim) into the layer's cache
// at slots[t], rounded to half.
extern "C" __global__ void kv_store(const float* k, const float* v, u16* kc, u16* vc, const int* slots, int kv_dim) {
	int t = blockIdx.x;
	long long dst = (long long)slots[t] * kv_dim;
	for (int d = threadIdx.x; d < kv_dim; d += blockDim.x) {
		kc[dst + d] = f2h(k[(long long)t * kv_dim + d]);
		vc[dst + d] = f2h(v[(long long)t * kv_dim + d]);
	}
}

// attention: attention of token t, head h (block (t, h), one warp) over
// positions 0..ends[t]-1 of its sequence (causal: its own position plus
// one; past it for the rows of a span that attend both ways, an image's
// in Gemma 3, as model.Batch.AttendTo says), read through its block
// table (block_tables[bt_off[seq[t]] ...]), with the arithmetic of ggml's
// CPU flash attention, which made the reference logits (model's CPU path
// does the same, see attendRange): q rounded to f16; a position's score is
// its (exact) f16 products summed in double, times scale; an online softmax
// over the positions in order: where the score s exceeds the running max M
// the accumulator is rescaled by e^(M-s) and s weighs 1, else it weighs
// e^(s-M) (exponentials in double, rounded to float); the weights' sum
// S = fma(S, rescale, weight) in float; the values accumulate in f16,
// acc = f16(fma(v, weight, f16(acc * rescale))); the output is acc / S.
// (ggml sums the products of heads 64 wide or more in float lanes, which
// differs from the double sum by float rounding.) Lane j scores position
// c+j of each chunk c of 32 positions; lane l accumulates output dims l,
// l+32, ... .
extern "C" __global__ void attention(const float* q, const u16* kc, const u16* vc, float* out,
                                     const int* ends, const int* seq, const int* bt_off,
                                     const int* block_tables, int heads, int kv_heads, int hd,
                                     int block_size, float scale) {
	__shared__ float qs[MAX_HEAD_DIM];
	int t = blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
	int kv_dim = kv_heads * hd, kvh = h / (heads / kv_heads);
	const float* qh = q + (long long)t * heads * hd + h * hd;
	for (int d = lane; d < hd; d += WARP) qs[d] = h2f(f2h(qh[d]));
	sync_warp();
	const int* table = block_tables + bt_off[seq[t]];
	int n = ends[t];
	float acc[MAX_HEAD_DIM / WARP]; // dims lane + i*32 (those below hd)
	for (int i = 0; i < MAX_HEAD_DIM / WARP; i++) acc[i] = 0.f;
	int nd = (hd + WARP - 1) / WARP;
	float M = bits2f(0xff800000u), S = 0.f; // M = -infinity
	for (int c = 0; c < n; c += WARP) {
		int p = c + lane;
		int slot = 0;
		float s = 0.f;
		if (p < n) {
			slot = table[p / block_size] * block_size + p % block_size;
			const u16* kr = kc + (long long)slot * kv_dim + kvh * hd;
			double dot = 0.0;
			for (int d = 0; d < hd; d++) dot += (double)(qs[d] * h2f(kr[d]));
			s = (float)dot * scale;
		}
		int cnt = n - c < WARP ? n - c : WARP;
		for (int j = 0; j < cnt; j++) { // every lane follows the softmax of each position
			float sj = shfl_idx(s, j), ms = 1.f, vs;
			const u16* vr = vc + (long long)shfl_idx_i(slot, j) * kv_dim + kvh * hd;
			if (sj > M) {
				ms = (float)exp((double)(M - sj));
				vs = 1.f;
				M = sj;
			} else {
				vs = (float)exp((double)(sj - M));
			}
			S = fmaf(S, ms, vs);
			for (int i = 0; i < nd; i++)
				if (lane + i * WARP < hd) {
					float o = h2f(f2h(acc[i] * ms));
					acc[i] = h2f(f2h(fmaf(h2f(vr[lane + i * WARP]), vs, o)));
				}
		}
	}
	float inv = S != 0.f ? 1.0f / S : 0.f;
	float* o = out + (long long)t * heads * hd + h * hd;
	for (int i = 0; i < nd; i++)
		if (lane + i * WARP < hd) o[lane + i * WARP] = acc[i] * inv;
}

// argmax: per row of logits (block r of rows, vocab values), the lowest
// index of the largest value, which is the host sampler's greedy pick; or
// -1 when the row holds a NaN or +Inf, or only -Inf (the host sampler then
// reports what is wrong). Blocks of 256 threads.
extern "C" __global__ void argmax(const float* logits, int vocab, int* out) {
	__shared__ float bv[8];
	__shared__ int bi[8], bb[8];
	const float* x = logits + (long long)blockIdx.x * vocab;
	const float inf = bits2f(0x7f800000u);
	float best = -inf;
	int idx = 0x7fffffff, bad = 0, lane = threadIdx.x & 31;
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
		float v = x[i];
		if (v != v || v == inf) bad = 1;
		else if (v > best) best = v, idx = i;
	}
	for (int o = 16; o > 0; o >>= 1) {
		float ov = shfl_bfly(best, o);
		int oi = shfl_idx_i(idx, lane ^ o), ob = shfl_idx_i(bad, lane ^ o);
		if (ov > best || (ov == best && oi < idx)) best = ov, idx = oi;
		bad |= ob;
	}
	if (lane == 0) bv[threadIdx.x >> 5] = best, bi[threadIdx.x >> 5] = idx, bb[threadIdx.x >> 5] = bad;
	sync_threads();
	if (threadIdx.x == 0) {
		for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
			if (bv[w] > best || (bv[w] == best && bi[w] < idx)) best = bv[w], idx = bi[w];
			bad |= bb[w];
		}
		out[blockIdx.x] = bad || best == -inf ? -1 : idx;
	}
}

#endif // TROUPE_HOST
