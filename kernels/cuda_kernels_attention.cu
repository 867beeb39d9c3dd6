/* Attention of a chunk of query rows over the K/V cache with a tree mask;
 * one kernel for decode (1 row) and verification (many rows).
 *
 * Row gi (= r0 + r of the call) sees a virtual sequence of keys: the
 * committed slots [0, n_past), then its ancestors in the batch root first,
 * then itself, i.e. the sequence it would see had its ancestors been
 * committed. One block per (query head, row); warp w takes the keys whose
 * virtual index t has t % ATT_WARPS == w, runs an online softmax in F32, and
 * the warps' partial results are merged in warp order. The split depends on
 * t only, so a row gets the same bits whether it is verified in a tree or
 * decoded alone after its ancestors were committed (batch invariance).
 * With a q8_0 cache the query is rounded to Q8_0 blocks first, as the CPU
 * backend rounds it, and each key and value element is its block's int8
 * times the block's scale. */
#include <cuda_fp16.h>
#include <math.h>

#include "cuda_device.cuh"
#include "cuda_kernels.h"

#define ATT_WARPS 8
#define DPL (CUDA_MAX_HEAD_DIM / 32) /* head dims per lane, at most */

/* Element lane + 32 j of head g in a cache row (d < hd): an F16 value, or
 * byte `lane` of Q8_0 block g hd / 32 + j times its scale. */
__device__ static float kv_elem(const uint16_t *row, int q8, int g, int hd, int lane, int j)
{
	if (!q8)
		return __half2float(((const __half *)row)[(size_t)g * hd + lane + 32 * j]);
	return q8_elem((const unsigned char *)row + 34 * ((size_t)g * hd / 32 + j), lane);
}

__global__ static void __launch_bounds__(ATT_WARPS * 32) k_attention(struct cuda_attn_args a)
{
	__shared__ int32_t anc[CUDA_MAX_ANC];
	__shared__ int n_anc;
	__shared__ float part_m[ATT_WARPS], part_l[ATT_WARPS];
	__shared__ float part_o[ATT_WARPS][CUDA_MAX_HEAD_DIM];

	int h = blockIdx.x, r = blockIdx.y, gi = a.r0 + r;
	int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int hd = a.hd, g = h / (a.n_head / a.n_kv);
	int n_past = *a.n_past;

	/* ancestors root first (explicit parents only; a chain needs no list) */
	if (threadIdx.x == 0) {
		int na = 0;
		if (a.parent) {
			for (int p = a.parent[gi]; p >= 0 && na < CUDA_MAX_ANC; p = a.parent[p])
				na++;
			int i = na;
			for (int p = a.parent[gi]; p >= 0 && i > 0; p = a.parent[p])
				anc[--i] = p;
		} else {
			na = gi;
		}
		n_anc = na;
	}
	__syncthreads();
	int na = n_anc, nk = n_past + na + 1;

	size_t kvr = (size_t)a.kv_row;
	const uint16_t *kb = a.k_scr, *vb = a.v_scr; /* batch row 0 */
	if (a.kv_write) {
		kb = a.k_cache + (size_t)n_past * kvr;
		vb = a.v_cache + (size_t)n_past * kvr;
	}

	const float *qr = a.q + (size_t)r * a.q_stride + (size_t)h * hd;
	float q[DPL], o[DPL];
#pragma unroll
	for (int j = 0; j < DPL; j++) {
		int d = lane + 32 * j;
		q[j] = d < hd ? qr[d] : 0.0f;
		o[j] = 0.0f;
	}
	if (a.kv_q8) /* hd % 32 == 0: whole blocks, one per j */
		for (int j = 0; j < hd / 32; j++) {
			__half d;
			float v = (float)q8_round(q[j], &d);
			q[j] = __half2float(d) * v;
		}
	float m = -INFINITY, l = 0.0f;

	for (int t = warp; t < nk; t += ATT_WARPS) {
		const uint16_t *kp, *vp;
		if (t < n_past) {
			kp = a.k_cache + (size_t)t * kvr;
			vp = a.v_cache + (size_t)t * kvr;
		} else {
			int b = t - n_past; /* index into ancestors, na = self */
			int row = b < na ? (a.parent ? anc[b] : b) : gi;
			kp = kb + (size_t)row * kvr;
			vp = vb + (size_t)row * kvr;
		}
		float s = 0.0f;
#pragma unroll
		for (int j = 0; j < DPL; j++) {
			int d = lane + 32 * j;
			if (d < hd)
				s = fmaf(q[j], kv_elem(kp, a.kv_q8, g, hd, lane, j), s);
		}
		s += __shfl_xor_sync(0xffffffffu, s, 16);
		s += __shfl_xor_sync(0xffffffffu, s, 8);
		s += __shfl_xor_sync(0xffffffffu, s, 4);
		s += __shfl_xor_sync(0xffffffffu, s, 2);
		s += __shfl_xor_sync(0xffffffffu, s, 1);
		s *= a.scale;
		float mn = fmaxf(m, s);
		float corr = expf(m - mn), p = expf(s - mn); /* m = -inf first: corr = 0 */
		l = l * corr + p;
#pragma unroll
		for (int j = 0; j < DPL; j++) {
			int d = lane + 32 * j;
			if (d < hd)
				o[j] = o[j] * corr + p * kv_elem(vp, a.kv_q8, g, hd, lane, j);
		}
		m = mn;
	}
	if (lane == 0) {
		part_m[warp] = m;
		part_l[warp] = l;
	}
#pragma unroll
	for (int j = 0; j < DPL; j++) {
		int d = lane + 32 * j;
		if (d < hd)
			part_o[warp][d] = o[j];
	}
	__syncthreads();
	/* merge in warp order; warps that saw no key have l = 0 and are skipped */
	float M = -INFINITY;
	for (int w = 0; w < ATT_WARPS; w++)
		if (part_l[w] > 0.0f)
			M = fmaxf(M, part_m[w]);
	float L = 0.0f;
	for (int w = 0; w < ATT_WARPS; w++)
		if (part_l[w] > 0.0f)
			L += part_l[w] * expf(part_m[w] - M);
	float *out = a.out + (size_t)r * a.n_head * hd + (size_t)h * hd;
	for (int d = threadIdx.x; d < hd; d += blockDim.x) {
		float acc = 0.0f;
		for (int w = 0; w < ATT_WARPS; w++)
			if (part_l[w] > 0.0f)
				acc += part_o[w][d] * expf(part_m[w] - M);
		out[d] = acc / L;
	}
}

extern "C" cudaError_t cuda_attention(const struct cuda_attn_args *a, cudaStream_t st)
{
	if (a->nr <= 0)
		return cudaSuccess;
	if (a->hd > CUDA_MAX_HEAD_DIM || a->n_kv <= 0 || a->n_head % a->n_kv)
		return cudaErrorInvalidValue;
	dim3 grid((unsigned)a->n_head, (unsigned)a->nr);
	k_attention<<<grid, ATT_WARPS * 32, 0, st>>>(*a);
	return cudaGetLastError();
}
