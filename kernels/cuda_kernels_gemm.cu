/* The skinny GEMM: projections for up to CUDA_SKINNY_MAX rows, every row
 * against every weight row, streaming each BF16 weight row from memory once
 * per launch (rows of activations come from L1/L2).
 *
 * Shape: each warp owns COLS output columns j (= weight rows j; 1 for
 * decode, 4 from three batch rows on), 8 warps a block. Lane l takes the 8-element chunks c = l, l + 32, ... of the K dimension
 * (16-byte loads of weights and 2 x 16-byte loads of activations), keeps one
 * F32 partial per batch row (fused multiply-adds in chunk order), and the
 * warp sums the 32 partials with a fixed xor-shuffle tree. A row's result
 * therefore depends on its own activations and the weights only: the same
 * bits whether the launch has 1 row or 64 (the batch-invariance contract).
 * Rows are taken 8 at a time so the partials stay in registers. */
#include <cuda_bf16.h>

#include "cuda_kernels.h"

#define SK_WARPS 8
#define SK_ROWS 8

__device__ static inline void bf16x8(uint4 w, float f[8])
{
	/* BF16 -> F32 is exact: the 16 bits become the high half */
	f[0] = __uint_as_float(w.x << 16);
	f[1] = __uint_as_float(w.x & 0xffff0000u);
	f[2] = __uint_as_float(w.y << 16);
	f[3] = __uint_as_float(w.y & 0xffff0000u);
	f[4] = __uint_as_float(w.z << 16);
	f[5] = __uint_as_float(w.z & 0xffff0000u);
	f[6] = __uint_as_float(w.w << 16);
	f[7] = __uint_as_float(w.w & 0xffff0000u);
}

__device__ static inline float dot8(const float w[8], const float *x, float acc)
{
	float4 a = *(const float4 *)x, b = *(const float4 *)(x + 4);
	acc = fmaf(w[0], a.x, acc);
	acc = fmaf(w[1], a.y, acc);
	acc = fmaf(w[2], a.z, acc);
	acc = fmaf(w[3], a.w, acc);
	acc = fmaf(w[4], b.x, acc);
	acc = fmaf(w[5], b.y, acc);
	acc = fmaf(w[6], b.z, acc);
	acc = fmaf(w[7], b.w, acc);
	return acc;
}

/* COLS weight rows per warp (each activation chunk loaded once serves all
 * of them: the L1 traffic per weight byte drops COLS-fold, which matters
 * from a few batch rows on), DEPTH chunks of each in flight per lane. The
 * per-output arithmetic does not depend on COLS or DEPTH: every (row, column)
 * accumulates its chunks in increasing chunk order with the same fmaf chain,
 * then the same shuffle tree, so the choice below may follow the shape. */
template <int COLS, int DEPTH>
__global__ static void __launch_bounds__(SK_WARPS * 32)
k_skinny(const uint4 *__restrict__ W, int k, int n, const float *__restrict__ X, int ldx, int nr,
         float *__restrict__ Y, int ldy, int accumulate)
{
	int j0 = (blockIdx.x * SK_WARPS + (threadIdx.x >> 5)) * COLS, lane = threadIdx.x & 31;
	if (j0 >= n)
		return; /* whole warps only: no shuffle below misses a lane */
	int nch = k / 8, ncol = n - j0 < COLS ? n - j0 : COLS;
	const uint4 *w[COLS];
#pragma unroll
	for (int cc = 0; cc < COLS; cc++)
		w[cc] = W + (size_t)(j0 + (cc < ncol ? cc : 0)) * nch; /* spare columns re-read column 0 */

	for (int r0 = 0; r0 < nr; r0 += SK_ROWS) {
		int rn = nr - r0 < SK_ROWS ? nr - r0 : SK_ROWS;
		const float *x = X + (size_t)r0 * ldx;
		float acc[COLS][SK_ROWS];
#pragma unroll
		for (int cc = 0; cc < COLS; cc++)
#pragma unroll
			for (int r = 0; r < SK_ROWS; r++)
				acc[cc][r] = 0.0f;
		int c = lane;
		for (; c + 32 * (DEPTH - 1) < nch; c += 32 * DEPTH) {
			uint4 wv[COLS][DEPTH];
#pragma unroll
			for (int cc = 0; cc < COLS; cc++)
#pragma unroll
				for (int u = 0; u < DEPTH; u++)
					wv[cc][u] = __ldg(w[cc] + c + 32 * u);
#pragma unroll
			for (int u = 0; u < DEPTH; u++) {
				float f[COLS][8];
#pragma unroll
				for (int cc = 0; cc < COLS; cc++)
					bf16x8(wv[cc][u], f[cc]);
#pragma unroll
				for (int r = 0; r < SK_ROWS; r++)
					if (r < rn) {
						const float *xr = x + (size_t)r * ldx + (size_t)(c + 32 * u) * 8;
#pragma unroll
						for (int cc = 0; cc < COLS; cc++)
							acc[cc][r] = dot8(f[cc], xr, acc[cc][r]);
					}
			}
		}
		for (; c < nch; c += 32) {
			float f[COLS][8];
#pragma unroll
			for (int cc = 0; cc < COLS; cc++)
				bf16x8(__ldg(w[cc] + c), f[cc]);
#pragma unroll
			for (int r = 0; r < SK_ROWS; r++)
				if (r < rn) {
					const float *xr = x + (size_t)r * ldx + (size_t)c * 8;
#pragma unroll
					for (int cc = 0; cc < COLS; cc++)
						acc[cc][r] = dot8(f[cc], xr, acc[cc][r]);
				}
		}
#pragma unroll
		for (int cc = 0; cc < COLS; cc++)
#pragma unroll
			for (int r = 0; r < SK_ROWS; r++) {
				if (r >= rn)
					continue; /* rn is the same in every lane: no shuffle is split */
				float s = acc[cc][r];
				/* fixed tree: lane l ends with the same sum for every l */
				s += __shfl_xor_sync(0xffffffffu, s, 16);
				s += __shfl_xor_sync(0xffffffffu, s, 8);
				s += __shfl_xor_sync(0xffffffffu, s, 4);
				s += __shfl_xor_sync(0xffffffffu, s, 2);
				s += __shfl_xor_sync(0xffffffffu, s, 1);
				if (lane == 0 && cc < ncol) {
					float *y = Y + (size_t)(r0 + r) * ldy + j0 + cc;
					*y = accumulate ? *y + s : s;
				}
			}
	}
}

extern "C" cudaError_t cuda_skinny_gemm(const uint16_t *W, int k, int n, const float *X, int ldx,
                                        int nr, float *Y, int ldy, int accumulate, cudaStream_t st)
{
	if (nr <= 0 || n <= 0)
		return cudaSuccess;
	if (k % 8 || ldx % 4 || nr > CUDA_SKINNY_MAX || ((uintptr_t)W | (uintptr_t)X) % 16)
		return cudaErrorInvalidValue;
	/* one or two rows (decode): one weight row per warp, the most warps
	 * streaming; more rows: four weight rows per warp share the activation
	 * loads. Bits are the same either way (see k_skinny). */
	if (nr <= 2) {
		unsigned blocks = (unsigned)((n + SK_WARPS - 1) / SK_WARPS);
		k_skinny<1, 8><<<blocks, SK_WARPS * 32, 0, st>>>((const uint4 *)W, k, n, X, ldx, nr, Y, ldy,
		                                                 accumulate);
	} else {
		unsigned blocks = (unsigned)((n + 4 * SK_WARPS - 1) / (4 * SK_WARPS));
		k_skinny<4, 2><<<blocks, SK_WARPS * 32, 0, st>>>((const uint4 *)W, k, n, X, ldx, nr, Y, ldy,
		                                                 accumulate);
	}
	return cudaGetLastError();
}
