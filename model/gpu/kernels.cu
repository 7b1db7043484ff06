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

// Three builds of this file:
//   NVRTC (__CUDACC_RTC__) or clang's CUDA front end: the real kernels;
//   TROUPE_EMU: host C++ over testdata/emu/emu.h, which runs each block's
//     threads as cooperative fibers (the CUDA emulator the tests use where
//     there is no GPU); it supplies the qualifiers, the built-in variables
//     and the primitives below;
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
extern "C" __device__ float expf(float);
extern "C" __device__ float sqrtf(float);
extern "C" __device__ float fmaf(float, float, float);
extern "C" __device__ float fmaxf(float, float);
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

// ---- matrix-vector products -------------------------------------------------
// y[r*n + o] = sum_j W[o, j] * x[r*k + j] for r < m <= MMV_MAXM. A warp per
// output row; lane l takes groups l, l+32, ...; each group's 32 products are
// summed in order, then the lanes' sums by a fixed butterfly. The arithmetic
// of one (r, o) depends only on row r of x and row o of W, never on m, so
// the product is batch-invariant.
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
		for (int g = lane; g < k / 32; g += WARP) {                                       \
			dq_##T(row, g, v);                                                            \
			_Pragma("unroll") for (int r = 0; r < MMV_MAXM; r++) {                        \
				if (r < m) {                                                              \
					const float* xr = x + (long long)r * k + g * 32;                      \
					float s = 0.f;                                                        \
					for (int i = 0; i < 32; i++) s = fmaf(v[i], xr[i], s);                \
					acc[r] += s;                                                          \
				}                                                                         \
			}                                                                             \
		}                                                                                 \
		_Pragma("unroll") for (int r = 0; r < MMV_MAXM; r++) {                            \
			float s = warp_sum(acc[r]); /* every lane takes part in the shuffles */       \
			if (lane == 0 && r < m) y[(long long)r * n + o] = s;                          \
		}                                                                                 \
	}                                                                                     \
	/* rows[i] of W (or rows row0.. when idx is null) dequantized to out, (n_rows, k) */  \
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
	}

DEFINE_MMV(f32)
DEFINE_MMV(f16)
DEFINE_MMV(bf16)
DEFINE_MMV(q4_0)
DEFINE_MMV(q4_1)
DEFINE_MMV(q5_0)
DEFINE_MMV(q5_1)
DEFINE_MMV(q8_0)
DEFINE_MMV(q2_k)
DEFINE_MMV(q3_k)
DEFINE_MMV(q4_k)
DEFINE_MMV(q5_k)
DEFINE_MMV(q6_k)

// ---- element-wise and row kernels -------------------------------------------

// rms_norm: y row r = x row (idx ? idx[r] : r) * w / sqrt(mean(x^2) + eps).
// One block of 256 threads per row; y may be x.
extern "C" __global__ void rms_norm(const float* x, const float* w, float* y, const int* idx,
                                    int width, int x_stride, int y_stride, float eps) {
	__shared__ float part[8];
	int r = blockIdx.x;
	const float* xr = x + (long long)(idx ? idx[r] : r) * x_stride;
	float* yr = y + (long long)r * y_stride;
	float s = 0.f;
	for (int i = threadIdx.x; i < width; i += blockDim.x) s = fmaf(xr[i], xr[i], s);
	s = warp_sum(s);
	if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
	sync_threads();
	s = 0.f;
	for (int i = 0; i < (int)(blockDim.x >> 5); i++) s += part[i];
	float scale = 1.0f / sqrtf(s / width + eps);
	sync_threads();
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

// silu_mul: g[i] = silu(g[i]) * u[i].
extern "C" __global__ void silu_mul(float* g, const float* u, int total) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < total) {
		float a = g[i];
		g[i] = a / (1.0f + expf(-a)) * u[i];
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

// attention: causal attention of token t, head h (block (t, h), one warp)
// over positions 0..positions[t] of its sequence, read through its block
// table (block_tables[bt_off[seq[t]] ...]). 32 positions at a time: lane j
// scores position c+j, the warp updates a running max and sum (online
// softmax, float32), and lane l accumulates output dims l, l+32, ... .
extern "C" __global__ void attention(const float* q, const u16* kc, const u16* vc, float* out,
                                     const int* positions, const int* seq, const int* bt_off,
                                     const int* block_tables, int heads, int kv_heads, int hd,
                                     int block_size, float scale) {
	__shared__ float qs[MAX_HEAD_DIM];
	int t = blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
	int kv_dim = kv_heads * hd, kvh = h / (heads / kv_heads);
	const float* qh = q + (long long)t * heads * hd + h * hd;
	for (int d = lane; d < hd; d += WARP) qs[d] = qh[d];
	sync_warp();
	const int* table = block_tables + bt_off[seq[t]];
	int n = positions[t] + 1;
	float acc[MAX_HEAD_DIM / WARP]; // dims lane + i*32 (those below hd)
	for (int i = 0; i < MAX_HEAD_DIM / WARP; i++) acc[i] = 0.f;
	int nd = (hd + WARP - 1) / WARP;
	float M = -3.402823466e38f, S = 0.f;
	for (int c = 0; c < n; c += WARP) {
		int p = c + lane;
		int slot = 0;
		float s = -3.402823466e38f;
		if (p < n) {
			slot = table[p / block_size] * block_size + p % block_size;
			const u16* kr = kc + (long long)slot * kv_dim + kvh * hd;
			float dot = 0.f;
			for (int d = 0; d < hd; d++) dot = fmaf(qs[d], h2f(kr[d]), dot);
			s = dot * scale;
		}
		float cm = warp_max(s), Mn = fmaxf(M, cm);
		float ms = expf(M - Mn);
		float w = p < n ? expf(s - Mn) : 0.f;
		S = S * ms + warp_sum(w);
		for (int i = 0; i < nd; i++) acc[i] *= ms;
		int cnt = n - c < WARP ? n - c : WARP;
		for (int j = 0; j < cnt; j++) {
			float wj = shfl_idx(w, j);
			const u16* vr = vc + (long long)shfl_idx_i(slot, j) * kv_dim + kvh * hd;
			for (int i = 0; i < nd; i++)
				if (lane + i * WARP < hd) acc[i] = fmaf(wj, h2f(vr[lane + i * WARP]), acc[i]);
		}
		M = Mn;
	}
	float inv = S > 0.f ? 1.0f / S : 0.f;
	float* o = out + (long long)t * heads * hd + h * hd;
	for (int i = 0; i < nd; i++)
		if (lane + i * WARP < hd) o[lane + i * WARP] = acc[i] * inv;
}

#endif // TROUPE_HOST
