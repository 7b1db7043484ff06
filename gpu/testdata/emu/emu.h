// emu.h: the device side of troupe's CUDA emulator, a TEST emulator that runs
// CUDA kernels on the CPU so gpu's GPU tests run where there is no GPU
// (internal/cudaemu sets it up).
//
// gpu's kernels (kernels_dequant.cu) include it when built with
// -DTROUPE_EMU (the fake NVRTC in libnvrtc.cc does so, with
// -ffp-contract=off, and forces it on other sources). It supplies what a CUDA compiler would: the qualifiers, the
// built-in variables threadIdx, blockIdx, blockDim and gridDim, math (the
// host's <math.h>), and the kernels' device primitives (half conversions,
// warp shuffles, barriers). emu_runtime.cc runs every thread of a block as
// a cooperative fiber, blocks one after another, so a run is deterministic.
//
// What it checks: logic and arithmetic, bit for bit where the GPU's is
// IEEE (no contraction, as NVRTC with --fmad=false); barriers and shuffles
// (lanes of a warp that diverge at a warp-wide operation, shuffle with an
// exited lane or deadlock fail the launch); with libcuda.cc, device memory
// bounds (a guard page after each allocation) and reads of memory never
// written (it starts as NaN bytes).
//
// What it does not: GPU timing, occupancy or memory coalescing; races
// between blocks, or between threads of a block that the fixed order of
// the fibers happens to serialize (a missing barrier may go unnoticed);
// shared memory's initial contents (a block sees the previous block's
// values, not garbage) and its bounds; the GPU's own exp, sqrt and other
// library functions where they are not correctly rounded (exp(double) has
// 1 ulp on the GPU); and what NVRTC fuses into FMAs with --fmad=true.
#ifndef TROUPE_EMU_H
#define TROUPE_EMU_H

#include <math.h>
#include <stddef.h>
#include <string.h>
#include <utility>

// ---- qualifiers ---------------------------------------------------------
// TROUPE_EMU_SCAN is the fake NVRTC's preprocessing pass: kernels then read
// `extern "C" __troupe_emu_global__ void NAME(`, which it scans for.
#ifdef TROUPE_EMU_SCAN
#define __global__ __troupe_emu_global__
#else
#define __global__
#endif
#define __device__
#define __host__
#define __forceinline__
#define __restrict__ __restrict
// Blocks run one at a time, so a function-static array is the block's.
#define __shared__ static

// ---- built-in variables ---------------------------------------------------
struct emu_dim3 {
	unsigned x, y, z;
};
// The fiber running now; its first member is its threadIdx.
struct emu_fiber_pub {
	emu_dim3 tid;
};
// Shuffle kinds: all lanes at one warp-wide operation must agree on it.
enum { EMU_SHFL_BFLY = 1, EMU_SHFL_IDX = 2, EMU_SYNC_WARP = 3 };
// emu_runtime.cc's state and entry points, hidden in the module (each
// module has its own). The barriers are calls the compiler cannot see
// into, so it assumes they read and write shared memory.
#pragma GCC visibility push(hidden)
extern "C" {
extern emu_fiber_pub* emu_self;
extern emu_dim3 emu_block_idx, emu_block_dim, emu_grid_dim;
void emu_sync_threads(void);
void emu_sync_warp(void);
// emu_shfl deposits v, waits for the warp and returns the deposit of lane
// b ^ lane (EMU_SHFL_BFLY) or b (EMU_SHFL_IDX), b taken mod 32.
unsigned emu_shfl(unsigned v, int b, int kind);
}
#pragma GCC visibility pop
#define threadIdx ((const emu_dim3&)emu_self->tid)
#define blockIdx ((const emu_dim3&)emu_block_idx)
#define blockDim ((const emu_dim3&)emu_block_dim)
#define gridDim ((const emu_dim3&)emu_grid_dim)
#define warpSize 32

// ---- the kernels' primitives ----------------------------------------------
static inline unsigned emu_f2u(float f) {
	unsigned u;
	memcpy(&u, &f, 4);
	return u;
}
static inline float emu_u2f(unsigned u) {
	float f;
	memcpy(&f, &u, 4);
	return f;
}

// h2f: a half's exact float value (a NaN keeps its payload, quieted).
static inline float h2f(unsigned short h) {
	unsigned sign = (unsigned)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	if (e == 0) { // zero or subnormal: m * 2^-24, exact in float
		float v = (float)m * 5.9604644775390625e-8f;
		return emu_u2f(emu_f2u(v) | sign);
	}
	if (e == 31) return emu_u2f(sign | 0x7f800000 | (m ? 0x400000 | (m << 13) : 0));
	return emu_u2f(sign | ((e + 112) << 23) | (m << 13));
}

// f2h: f rounded to the nearest half, ties to even, as cvt.rn.f16.f32:
// overflow gives infinity, tiny values subnormals or zero, NaN a quiet NaN.
static inline unsigned short f2h(float f) {
	unsigned x = emu_f2u(f), sign = (x >> 16) & 0x8000;
	x &= 0x7fffffff;
	if (x > 0x7f800000) return (unsigned short)(sign | 0x7e00 | ((x >> 13) & 0x3ff)); // NaN
	if (x >= 0x477ff000) return (unsigned short)(sign | 0x7c00); // >= 65520: infinity
	if (x < 0x38800000) { // below 2^-14: a subnormal half (or zero, or the smallest normal)
		// Adding 0.5 leaves the value's bits at the half subnormal's
		// resolution (2^-24), rounded to nearest even by the FPU.
		float t = emu_u2f(x) + 0.5f;
		return (unsigned short)(sign | (emu_f2u(t) - 0x3f000000));
	}
	x += 0xc8000fffu + ((x >> 13) & 1); // rebias the exponent, round to nearest even
	return (unsigned short)(sign | (x >> 13));
}

// As shfl.sync.{bfly,idx}.b32 with c = 0x1f and a full member mask.
static inline float shfl_bfly(float v, int mask) { return emu_u2f(emu_shfl(emu_f2u(v), mask, EMU_SHFL_BFLY)); }
static inline float shfl_idx(float v, int src) { return emu_u2f(emu_shfl(emu_f2u(v), src, EMU_SHFL_IDX)); }
static inline int shfl_idx_i(int v, int src) { return (int)emu_shfl((unsigned)v, src, EMU_SHFL_IDX); }
static inline void sync_threads(void) { emu_sync_threads(); }
static inline void sync_warp(void) { emu_sync_warp(); }
// The build uses -ffp-contract=off: no product is fused into an add.
#define NO_CONTRACT(x) ((void)0)

// ---- a few CUDA intrinsics, for sources other than gpu's kernels --------
static inline void __syncthreads(void) { emu_sync_threads(); }
static inline void __syncwarp(unsigned = 0xffffffffu) { emu_sync_warp(); }
static inline unsigned __float_as_uint(float f) { return emu_f2u(f); }
static inline float __uint_as_float(unsigned u) { return emu_u2f(u); }
static inline long long __double_as_longlong(double d) {
	long long l;
	memcpy(&l, &d, 8);
	return l;
}

// ---- launching: what the fake NVRTC's generated trampolines call ----------
typedef void (*emu_body)(void* const* params);
extern "C" __attribute__((visibility("hidden"))) int emu_run(const char* name, emu_body body, void* const* params, const unsigned* grid,
                       const unsigned* block);

// emu_call calls kernel k with parameter i read from *(Ai*)params[i], as
// cuLaunchKernel's kernelParams are laid out.
template <class... A, size_t... I>
static inline void emu_call_at(void (*k)(A...), void* const* p, std::index_sequence<I...>) {
	k(*(A*)p[I]...);
}
template <class... A>
static inline void emu_call(void (*k)(A...), void* const* p) {
	emu_call_at(k, p, std::index_sequence_for<A...>{});
}
// emu_param_sizes writes the size of each of k's parameters (at most max)
// and returns how many it has.
template <class... A>
static inline int emu_param_sizes(void (*)(A...), size_t* sizes, int max) {
	const size_t s[] = {sizeof(A)..., 0};
	int n = (int)sizeof...(A);
	for (int i = 0; i < n && i < max; i++) sizes[i] = s[i];
	return n;
}

// EMU_KERNEL(name) exports emu_launch_<name> and emu_params_<name>, which
// the fake libcuda looks up by name (cuModuleGetFunction).
#define EMU_KERNEL(name)                                                                          \
	static void emu_body_##name(void* const* p) { emu_call(name, p); }                            \
	extern "C" __attribute__((visibility("default"))) int emu_launch_##name(                      \
	    void* const* p, const unsigned* grid, const unsigned* block) {                            \
		return emu_run(#name, emu_body_##name, p, grid, block);                                   \
	}                                                                                             \
	extern "C" __attribute__((visibility("default"))) int emu_params_##name(size_t* s, int max) { \
		return emu_param_sizes(name, s, max);                                                     \
	}

#endif // TROUPE_EMU_H
