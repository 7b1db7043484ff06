// troupe's CUDA kernels, part 2 of 3 (see kernels_dequant.cu): weight rows,
// activations for a matrix product and the matrix-vector products. Joined
// after kernels_dequant.cu, whose primitives and dequantizers it uses.

// ---- warp reductions ---------------------------------------------------------

DEV float warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += shfl_bfly(v, o);
	return v;
}
DEV float warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, shfl_bfly(v, o));
	return v;
}

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
