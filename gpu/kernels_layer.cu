// troupe's CUDA kernels, part 3 of 3 (see kernels_dequant.cu): norms,
// element-wise kernels, RoPE, the KV cache, attention and argmax. Joined
// after kernels_matmul.cu.

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
