/* Reductions over the vocabulary on the device, so only n_out * top_k ids
 * and probabilities cross PCIe per step: max, softmax normaliser, and the
 * top k by repeated selection. One block per logits row.
 *
 * Order: (v, id) comes before (v', id') when v > v' or v == v' and id < id'
 * (descending probability, ties by lower id: the CPU backend's rule). Round
 * j picks the first element, in that order, after round j-1's pick; each
 * round is a full pass over the row (k <= 64, vocabularies ~150k: cheap
 * next to the LM head itself). */
#include <math.h>
#include <stdint.h>

#include "cuda_kernels.h"

#define TK_THREADS 1024
#define TK_WARPS (TK_THREADS / 32)

__device__ static inline int before(float v, int id, float v2, int id2)
{
	return v > v2 || (v == v2 && id < id2);
}

/* Block-wide pick of the first (v, id) in the order; all threads get it. */
__device__ static void block_best(float *v, int *id, float *sv, int *sid)
{
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (int o = 16; o > 0; o >>= 1) {
		float v2 = __shfl_xor_sync(0xffffffffu, *v, o);
		int id2 = __shfl_xor_sync(0xffffffffu, *id, o);
		if (before(v2, id2, *v, *id)) {
			*v = v2;
			*id = id2;
		}
	}
	if (lane == 0) {
		sv[warp] = *v;
		sid[warp] = *id;
	}
	__syncthreads();
	if (warp == 0) {
		*v = sv[lane];
		*id = sid[lane];
		for (int o = 16; o > 0; o >>= 1) {
			float v2 = __shfl_xor_sync(0xffffffffu, *v, o);
			int id2 = __shfl_xor_sync(0xffffffffu, *id, o);
			if (before(v2, id2, *v, *id)) {
				*v = v2;
				*id = id2;
			}
		}
		if (lane == 0) {
			sv[0] = *v;
			sid[0] = *id;
		}
	}
	__syncthreads();
	*v = sv[0];
	*id = sid[0];
	__syncthreads(); /* sv/sid are reused by the next call */
}

__global__ static void __launch_bounds__(TK_THREADS)
k_topk(const float *logits, int n_vocab, int k, int32_t *ids, float *probs)
{
	__shared__ float sv[TK_WARPS];
	__shared__ int sid[TK_WARPS];
	__shared__ float sz[TK_THREADS];
	int r = blockIdx.x;
	const float *l = logits + (size_t)r * n_vocab;

	float pv = INFINITY; /* previous pick: nothing comes before (+inf, -1) */
	int pid = -1;
	float mx = 0.0f, z = 1.0f;
	for (int j = 0; j < k; j++) {
		float bv = -INFINITY;
		int bid = INT32_MAX;
		for (int i = threadIdx.x; i < n_vocab; i += TK_THREADS) {
			float v = l[i];
			if (before(pv, pid, v, i) && before(v, i, bv, bid)) {
				bv = v;
				bid = i;
			}
		}
		block_best(&bv, &bid, sv, sid);
		if (bid == INT32_MAX) /* only NaNs left: nothing to rank */
			bid = 0;
		if (j == 0 && probs) {
			/* softmax normaliser: per-thread sums in index order, then a
			 * fixed tree */
			mx = bv;
			float s = 0.0f;
			for (int i = threadIdx.x; i < n_vocab; i += TK_THREADS)
				s += expf(l[i] - mx);
			sz[threadIdx.x] = s;
			__syncthreads();
			for (int h = TK_THREADS / 2; h > 0; h >>= 1) {
				if (threadIdx.x < h)
					sz[threadIdx.x] += sz[threadIdx.x + h];
				__syncthreads();
			}
			z = sz[0];
		}
		if (threadIdx.x == 0) {
			/* a top logit that is not finite (a row of NaNs, an overflow)
			 * is marked -1: the host fails the pass, as the CPU backend does */
			ids[(size_t)r * k + j] = j == 0 && !isfinite(bv) ? -1 : bid;
			if (probs)
				probs[(size_t)r * k + j] = expf(bv - mx) / z;
		}
		pv = bv;
		pid = bid;
	}
}

extern "C" cudaError_t cuda_topk(const float *logits, int nr, int n_vocab, int k, int32_t *ids,
                                 float *probs, cudaStream_t st)
{
	if (nr <= 0 || k <= 0)
		return cudaSuccess;
	if (k > CUDA_MAX_TOPK || k > n_vocab)
		return cudaErrorInvalidValue;
	k_topk<<<nr, TK_THREADS, 0, st>>>(logits, n_vocab, k, ids, probs);
	return cudaGetLastError();
}
