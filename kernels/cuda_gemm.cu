/* The skinny GEMM: projections for up to CUDA_SKINNY_MAX rows, every row
 * against every weight row, streaming each BF16 weight row from memory once
 * per launch (rows of activations come from L1/L2).
 *
 * Shape: one warp per output column j (= weight row j), 8 warps a block.
 * Lane l takes the 8-element chunks c = l, l + 32, ... of the K dimension
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
#define SK_DEPTH 8 /* weight loads in flight per lane */

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

__global__ static void __launch_bounds__(SK_WARPS * 32)
k_skinny(const uint4 *__restrict__ W, int k, int n, const float *__restrict__ X, int ldx, int nr,
         float *__restrict__ Y, int ldy, int accumulate)
{
	int j = blockIdx.x * SK_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
	if (j >= n)
		return; /* whole warps only: no shuffle below misses a lane */
	int nch = k / 8;
	const uint4 *w = W + (size_t)j * nch;

	for (int r0 = 0; r0 < nr; r0 += SK_ROWS) {
		int rn = nr - r0 < SK_ROWS ? nr - r0 : SK_ROWS;
		const float *x = X + (size_t)r0 * ldx;
		float acc[SK_ROWS];
#pragma unroll
		for (int r = 0; r < SK_ROWS; r++)
			acc[r] = 0.0f;
		/* the weight stream: SK_DEPTH independent 16-byte loads in flight
		 * per lane (decode is bound by how many bytes are in flight), then
		 * the same chunk-order accumulation as the tail loop below */
		int c = lane;
		for (; c + 32 * (SK_DEPTH - 1) < nch; c += 32 * SK_DEPTH) {
			uint4 wv[SK_DEPTH];
#pragma unroll
			for (int u = 0; u < SK_DEPTH; u++)
				wv[u] = __ldg(w + c + 32 * u);
#pragma unroll
			for (int u = 0; u < SK_DEPTH; u++) {
				float f[8];
				bf16x8(wv[u], f);
#pragma unroll
				for (int r = 0; r < SK_ROWS; r++)
					if (r < rn)
						acc[r] = dot8(f, x + (size_t)r * ldx + (size_t)(c + 32 * u) * 8, acc[r]);
			}
		}
		for (; c < nch; c += 32) {
			float f[8];
			bf16x8(__ldg(w + c), f);
#pragma unroll
			for (int r = 0; r < SK_ROWS; r++)
				if (r < rn)
					acc[r] = dot8(f, x + (size_t)r * ldx + (size_t)c * 8, acc[r]);
		}
#pragma unroll
		for (int r = 0; r < SK_ROWS; r++) {
			float s = acc[r];
			/* fixed tree: lane l ends with the same sum for every l */
			s += __shfl_xor_sync(0xffffffffu, s, 16);
			s += __shfl_xor_sync(0xffffffffu, s, 8);
			s += __shfl_xor_sync(0xffffffffu, s, 4);
			s += __shfl_xor_sync(0xffffffffu, s, 2);
			s += __shfl_xor_sync(0xffffffffu, s, 1);
			if (lane == 0 && r < rn) {
				float *y = Y + (size_t)(r0 + r) * ldy + j;
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
	unsigned blocks = (unsigned)((n + SK_WARPS - 1) / SK_WARPS);
	k_skinny<<<blocks, SK_WARPS * 32, 0, st>>>((const uint4 *)W, k, n, X, ldx, nr, Y, ldy, accumulate);
	return cudaGetLastError();
}
