/* Row-wise kernels: embedding gather, RMSNorm, SwiGLU, RoPE with the K/V
 * store (F16 or Q8_0), and K/V slot moves. One block per row where a row needs a
 * reduction, so the reduction order is fixed by the row width alone. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_device.cuh"
#include "cuda_kernels.h"

#define ROW_THREADS 256

__global__ static void k_embed(const __nv_bfloat16 *table, const int32_t *tok, int ne, float *h)
{
	int r = blockIdx.x;
	const __nv_bfloat16 *e = table + (size_t)tok[r] * ne;
	for (int i = threadIdx.x; i < ne; i += blockDim.x)
		h[(size_t)r * ne + i] = __bfloat162float(e[i]);
}

extern "C" cudaError_t cuda_embed(const uint16_t *table, const int32_t *tok, int nr, int ne, float *h,
                                  cudaStream_t st)
{
	if (nr <= 0)
		return cudaSuccess;
	k_embed<<<nr, ROW_THREADS, 0, st>>>((const __nv_bfloat16 *)table, tok, ne, h);
	return cudaGetLastError();
}

/* Squares summed per thread in index order, then a fixed tree over the
 * block; the mean and scale in F32 as the CPU backend does. */
__global__ static void k_rmsnorm(const float *x, size_t xs, const int32_t *rows, const float *w,
                                 int ne, float eps, float *out, size_t os)
{
	__shared__ float part[ROW_THREADS];
	int r = blockIdx.x;
	const float *xr = x + (size_t)(rows ? rows[r] : r) * xs;
	float s = 0.0f;
	for (int i = threadIdx.x; i < ne; i += ROW_THREADS)
		s = fmaf(xr[i], xr[i], s);
	part[threadIdx.x] = s;
	__syncthreads();
	for (int h = ROW_THREADS / 2; h > 0; h >>= 1) {
		if (threadIdx.x < h)
			part[threadIdx.x] += part[threadIdx.x + h];
		__syncthreads();
	}
	float scale = 1.0f / sqrtf(part[0] / (float)ne + eps);
	float *o = out + (size_t)r * os;
	for (int i = threadIdx.x; i < ne; i += ROW_THREADS)
		o[i] = (xr[i] * scale) * w[i];
}

extern "C" cudaError_t cuda_rmsnorm(const float *x, size_t xs, const int32_t *rows, const float *w,
                                    int ne, float eps, float *out, size_t os, int nr, cudaStream_t st)
{
	if (nr <= 0)
		return cudaSuccess;
	k_rmsnorm<<<nr, ROW_THREADS, 0, st>>>(x, xs, rows, w, ne, eps, out, os);
	return cudaGetLastError();
}

__global__ static void k_swiglu(const float *g, const float *u, size_t gs, int nr, int nf, float *a,
                                size_t as)
{
	int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= (int64_t)nr * nf)
		return;
	int64_t r = t / nf, i = t % nf;
	float gv = g[(size_t)r * gs + i];
	a[(size_t)r * as + i] = (gv / (1.0f + expf(-gv))) * u[(size_t)r * gs + i];
}

extern "C" cudaError_t cuda_swiglu(const float *g, const float *u, size_t gs, int nr, int nf, float *a,
                                   size_t as, cudaStream_t st)
{
	int64_t n = (int64_t)nr * nf;
	if (n <= 0)
		return cudaSuccess;
	k_swiglu<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(g, u, gs, nr, nf, a, as);
	return cudaGetLastError();
}

/* Each head's squares summed by one warp (lane order, then a fixed
 * shuffle tree), scaled as k_rmsnorm scales a row. */
__device__ static void head_norm(float *x, const float *w, int hd, float eps)
{
	int lane = threadIdx.x % 32;
	float s = 0.0f;
	for (int i = lane; i < hd; i += 32)
		s = fmaf(x[i], x[i], s);
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	float scale = 1.0f / sqrtf(s / (float)hd + eps);
	for (int i = lane; i < hd; i += 32)
		x[i] = (x[i] * scale) * w[i];
}

/* Lane `lane` of a warp holds element `lane` of a 32-value block: the Q8_0
 * block at o (f16 scale, then 32 int8), as the CPU backend's q8_0 cache
 * stores it. */
__device__ static void q8_store(float x, unsigned char *o, int lane)
{
	__half d;
	o[2 + lane] = (unsigned char)(signed char)q8_round(x, &d);
	if (lane == 0) {
		unsigned short u = __half_as_ushort(d);
		o[0] = (unsigned char)(u & 255);
		o[1] = (unsigned char)(u >> 8);
	}
}

/* One block per row. Angles in double like the CPU backend's table, so both
 * backends rotate by the same F32 cos/sin. */
__global__ static void k_rope_store(struct cuda_rope_args a)
{
	int r = blockIdx.x, np = a.rope_dim / 2;
	int qd = a.n_head * a.hd, kvd = a.n_kv * a.hd;
	double p = (double)a.pos[r];
	float *q = a.q + (size_t)r * a.stride, *k = a.k + (size_t)r * a.stride, *v = a.v + (size_t)r * a.stride;

	if (a.bias) {
		for (int i = threadIdx.x; i < qd; i += blockDim.x)
			q[i] += a.bias[i];
		for (int i = threadIdx.x; i < kvd; i += blockDim.x) {
			k[i] += a.bias[qd + i];
			v[i] += a.bias[qd + kvd + i];
		}
		__syncthreads();
	}
	if (a.q_norm) {
		/* warp-uniform loop: every lane of a warp takes the same heads */
		for (int h = threadIdx.x / 32; h < a.n_head + a.n_kv; h += blockDim.x / 32) {
			if (h < a.n_head)
				head_norm(q + (size_t)h * a.hd, a.q_norm, a.hd, a.eps);
			else
				head_norm(k + (size_t)(h - a.n_head) * a.hd, a.k_norm, a.hd, a.eps);
		}
		__syncthreads();
	}
	for (int t = threadIdx.x; t < (a.n_head + a.n_kv) * np; t += blockDim.x) {
		int h = t / np, i = t % np;
		float *x = h < a.n_head ? q + (size_t)h * a.hd : k + (size_t)(h - a.n_head) * a.hd;
		int ia = a.pairs ? 2 * i : i, ib = a.pairs ? 2 * i + 1 : i + np;
		double th = p * a.freq[i];
		float c = (float)cos(th), s = (float)sin(th);
		float x0 = x[ia], x1 = x[ib];
		x[ia] = x0 * c - x1 * s;
		x[ib] = x0 * s + x1 * c;
	}
	__syncthreads();
	/* stored in the cache's type before attention reads them, so batch
	 * rows and cached rows look the same to attention */
	size_t slot = (size_t)(a.r0 + r);
	uint16_t *kd = a.k_scr, *vd = a.v_scr;
	if (a.kv_write) {
		slot += (size_t)*a.n_past;
		kd = a.k_cache;
		vd = a.v_cache;
	}
	kd += slot * a.kv_row;
	vd += slot * a.kv_row;
	if (!a.kv_q8) {
		for (int i = threadIdx.x; i < kvd; i += blockDim.x) {
			((__half *)kd)[i] = __float2half_rn(k[i]);
			((__half *)vd)[i] = __float2half_rn(v[i]);
		}
		return;
	}
	/* a warp per Q8_0 block (K's, then V's) */
	int nb = kvd / 32, lane = threadIdx.x % 32;
	for (int bi = threadIdx.x / 32; bi < 2 * nb; bi += blockDim.x / 32) {
		const float *x = bi < nb ? k + 32 * bi : v + 32 * (bi - nb);
		unsigned char *o = (unsigned char *)(bi < nb ? kd : vd) + 34 * (bi % nb);
		q8_store(x[lane], o, lane);
	}
}

extern "C" cudaError_t cuda_rope_store(const struct cuda_rope_args *a, cudaStream_t st)
{
	if (a->nr <= 0)
		return cudaSuccess;
	k_rope_store<<<a->nr, ROW_THREADS, 0, st>>>(*a);
	return cudaGetLastError();
}

__global__ static void k_gather_rows(const __nv_bfloat16 *src, const int32_t *ids, int k, __nv_bfloat16 *dst)
{
	const __nv_bfloat16 *s = src + (size_t)ids[blockIdx.x] * k;
	for (int i = threadIdx.x; i < k; i += blockDim.x)
		dst[(size_t)blockIdx.x * k + i] = s[i];
}

extern "C" cudaError_t cuda_gather_rows(const uint16_t *src, const int32_t *ids, int n, int k, uint16_t *dst,
                                        cudaStream_t st)
{
	if (n <= 0)
		return cudaSuccess;
	k_gather_rows<<<n, ROW_THREADS, 0, st>>>((const __nv_bfloat16 *)src, ids, k, (__nv_bfloat16 *)dst);
	return cudaGetLastError();
}

/* Thread e of layer l moves element e of every listed slot in list order:
 * the moves of one element never race with each other, and the order gives
 * the sequential semantics of kv_move. */
__global__ static void k_kv_move(unsigned short *k, unsigned short *v, int n_ctx, int kv_row,
                                 const int32_t *idx, int n)
{
	int e = blockIdx.x * blockDim.x + threadIdx.x, l = blockIdx.y;
	if (e >= kv_row)
		return;
	size_t base = (size_t)l * n_ctx * kv_row + e;
	for (int i = 0; i < n; i++) {
		size_t s = base + (size_t)idx[i] * kv_row, d = base + (size_t)idx[n + i] * kv_row;
		k[d] = k[s];
		v[d] = v[s];
	}
}

extern "C" cudaError_t cuda_kv_move(uint16_t *k, uint16_t *v, int n_layer, int n_ctx, int kv_row,
                                    const int32_t *idx, int n, cudaStream_t st)
{
	if (n <= 0)
		return cudaSuccess;
	dim3 grid((unsigned)((kv_row + 255) / 256), (unsigned)n_layer);
	k_kv_move<<<grid, 256, 0, st>>>(k, v, n_ctx, kv_row, idx, n);
	return cudaGetLastError();
}
