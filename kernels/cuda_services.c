/* The backend's services besides forward: K/V compaction and reads, one
 * sub-layer on caller-given states, head argmax, the draft head's subset,
 * sub-layer timing with CUDA events, and the device-to-device bandwidth
 * figure for benchmarks. */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

static struct cuda_backend *cuda(struct skipper_backend *be)
{
	return (struct cuda_backend *)be;
}

int cuda_be_kv_move(struct skipper_backend *base, int seq, const int32_t *src, const int32_t *dst, int n,
                    struct skipper_error *err)
{
	(void)seq; /* one sequence: the core allows only 0 */
	struct cuda_backend *be = cuda(base);
	int rc;

	CU_TRY(cudaSetDevice(be->dev), "cudaSetDevice");
	/* the pinned slot list may still feed an earlier move */
	CU_TRY(cudaStreamSynchronize(be->st), "kv_move");
	if (n > be->idx_cap) {
		cudaFree(be->idx_d);
		cudaFreeHost(be->idx_h);
		be->idx_d = NULL;
		be->idx_h = NULL;
		be->idx_cap = 0;
		if ((rc = cuda_dalloc(be, (void **)&be->idx_d, 2 * (size_t)n * 4, "kv_move", err)))
			return rc;
		CU_TRY(cudaHostAlloc((void **)&be->idx_h, 2 * (size_t)n * 4, cudaHostAllocDefault),
		       "pinned kv_move");
		be->idx_cap = n;
	}
	memcpy(be->idx_h, src, (size_t)n * 4);
	memcpy(be->idx_h + n, dst, (size_t)n * 4);
	CU_TRY(cudaMemcpyAsync(be->idx_d, be->idx_h, 2 * (size_t)n * 4, cudaMemcpyHostToDevice, be->st),
	       "copy kv_move slots");
	CU_TRY(cuda_kv_move(be->k_cache, be->v_cache, be->n_layer, base->n_ctx, be->kv_row, be->idx_d, n,
	                    be->st),
	       "kv_move");
	CU_TRY(cudaStreamSynchronize(be->st), "kv_move");
	return 0;
}

int cuda_be_kv_read(struct skipper_backend *base, int seq, int layer, int slot, float *k, float *v,
                    struct skipper_error *err)
{
	(void)seq; /* one sequence: the core allows only 0 */
	struct cuda_backend *be = cuda(base);
	size_t kvd = (size_t)be->kv_dim;

	CU_TRY(cudaSetDevice(be->dev), "cudaSetDevice");
	size_t off = ((size_t)layer * base->n_ctx + (size_t)slot) * be->kv_row;
	int type = be->kv_q8 ? SKIPPER_Q8_0 : SKIPPER_F16;
	CU_TRY(cuda_to_f32(type, be->k_cache + off, (int64_t)kvd, be->kvr, be->st), "kv_read");
	CU_TRY(cuda_to_f32(type, be->v_cache + off, (int64_t)kvd, be->kvr + kvd, be->st), "kv_read");
	CU_TRY(cudaMemcpyAsync(be->kvr_h, be->kvr, 2 * kvd * 4, cudaMemcpyDeviceToHost, be->st),
	       "kv_read");
	CU_TRY(cudaStreamSynchronize(be->st), "kv_read");
	if (k)
		memcpy(k, be->kvr_h, kvd * 4);
	if (v)
		memcpy(v, be->kvr_h + kvd, kvd * 4);
	return 0;
}

/* Enqueue one sub-layer on the nr rows in be->h (chunk r0 of a chain of
 * read-only rows); params must hold n_past and positions. */
static int run_sublayer(struct cuda_backend *be, int kind, int layer, int r0, int nr,
                        struct skipper_error *err)
{
	struct cuda_batch b = { .kv_write = 0, .parent_d = NULL };
	CU_TRY(cudaMemcpyAsync(be->prm_d, be->prm_h, CUDA_PARAMS_INTS(CUDA_CHUNK) * 4,
	                       cudaMemcpyHostToDevice, be->st),
	       "copy parameters");
	return kind == SKIPPER_ATTN ? cuda_attn_block(be, &b, layer, r0, nr, err)
	                            : cuda_mlp_block(be, layer, nr, err);
}

int cuda_be_sublayer(struct skipper_backend *base, int seq, int kind, int layer, int n, float *states,
                     const int32_t *pos, int n_past, struct skipper_error *err)
{
	(void)seq; /* one sequence: the core allows only 0 */
	struct cuda_backend *be = cuda(base);
	size_t ne = (size_t)be->n_embd;
	int rc;

	CU_TRY(cudaSetDevice(be->dev), "cudaSetDevice");
	if ((rc = cuda_grow_scratch(be, n, err)))
		return rc;
	CU_TRY(cudaStreamSynchronize(be->st), "sublayer"); /* params block is free */
	for (int r0 = 0; r0 < n; r0 += CUDA_CHUNK) {
		int nr = n - r0 < CUDA_CHUNK ? n - r0 : CUDA_CHUNK;
		be->prm_h[0] = n_past;
		for (int r = 0; r < nr; r++)
			CUDA_P_POS(be->prm_h, CUDA_CHUNK)[r] = pos ? pos[r0 + r] : n_past + r0 + r;
		CU_TRY(cudaMemcpyAsync(be->h, states + (size_t)r0 * ne, (size_t)nr * ne * 4,
		                       cudaMemcpyHostToDevice, be->st),
		       "copy states");
		if ((rc = run_sublayer(be, kind, layer, r0, nr, err)))
			return rc;
		CU_TRY(cudaMemcpyAsync(states + (size_t)r0 * ne, be->h, (size_t)nr * ne * 4,
		                       cudaMemcpyDeviceToHost, be->st),
		       "copy states");
		CU_TRY(cudaStreamSynchronize(be->st), "sublayer");
	}
	return 0;
}

int cuda_be_head_argmax(struct skipper_backend *base, int n, const float *states, int32_t *ids,
                        struct skipper_error *err)
{
	struct cuda_backend *be = cuda(base);
	size_t ne = (size_t)be->n_embd;
	int rc;

	CU_TRY(cudaSetDevice(be->dev), "cudaSetDevice");
	for (int r0 = 0; r0 < n; r0 += CUDA_HEAD_CHUNK) {
		int m = n - r0 < CUDA_HEAD_CHUNK ? n - r0 : CUDA_HEAD_CHUNK;
		CU_TRY(cudaMemcpyAsync(be->h, states + (size_t)r0 * ne, (size_t)m * ne * 4,
		                       cudaMemcpyHostToDevice, be->st),
		       "copy states");
		if ((rc = cuda_head(be, NULL, m, 1, 0, 0, 0, err)))
			return rc;
		CU_TRY(cudaStreamSynchronize(be->st), "head_argmax");
		for (int j = 0; j < m; j++)
			if (be->top_ids_h[j] < 0)
				return cuda_nonfinite(be, err);
		memcpy(ids + r0, be->top_ids_h, (size_t)m * 4);
	}
	return 0;
}

int cuda_be_set_head_subset(struct skipper_backend *base, const int32_t *ids, int n,
                            struct skipper_error *err)
{
	struct cuda_backend *be = cuda(base);
	int32_t *ids_d = NULL, *copy = NULL;
	int rc;

	CU_TRY(cudaSetDevice(be->dev), "cudaSetDevice");
	/* captured graphs hold the old matrix; nothing may still read it */
	CU_TRY(cudaStreamSynchronize(be->st), "head subset");
	cuda_graphs_clear(be);
	cudaFree(be->sub.p);
	be->sub.p = NULL;
	free(be->sub_ids);
	be->sub_ids = NULL;
	if (n == 0)
		return 0;
	if (!(copy = malloc(sizeof *copy * (size_t)n)))
		return cuda_failf(err, SKIPPER_ERR_NOMEM, "cuda backend: head subset of %d rows", n);
	memcpy(copy, ids, sizeof *copy * (size_t)n);
	uint16_t *rows = NULL;
	if ((rc = cuda_dalloc(be, (void **)&rows, (size_t)n * be->n_embd * 2, "draft head", err)) ||
	    (rc = cuda_dalloc(be, (void **)&ids_d, (size_t)n * 4, "draft head ids", err))) {
		cudaFree(rows);
		free(copy);
		return rc;
	}
	cudaError_t e = cudaMemcpyAsync(ids_d, ids, (size_t)n * 4, cudaMemcpyHostToDevice, be->st);
	if (e == cudaSuccess)
		e = cuda_gather_rows(be->out.p, ids_d, n, be->n_embd, rows, be->st);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(be->st);
	cudaFree(ids_d);
	if (e != cudaSuccess) {
		cudaFree(rows);
		free(copy);
		return cuda_fail(err, "draft head", e);
	}
	be->sub.p = rows;
	be->sub.k = be->n_embd;
	be->sub.n = n;
	be->sub_ids = copy;
	return 0;
}

int cuda_be_time_sublayer(struct skipper_backend *base, int kind, int layer, int ctx_len,
                          double *seconds, struct skipper_error *err)
{
	struct cuda_backend *be = cuda(base);
	size_t ne = (size_t)be->n_embd;
	float *st;
	float ms = 0.0f;
	int rc, reps = 20;

	CU_TRY(cudaSetDevice(be->dev), "cudaSetDevice");
	CU_TRY(cudaStreamSynchronize(be->st), "time_sublayer");
	st = malloc(ne * sizeof *st); /* owned here, freed below */
	if (!st)
		return cuda_failf(err, SKIPPER_ERR_NOMEM, "cuda backend: out of memory");
	/* a unit-scale state: the norm makes the magnitude irrelevant for time;
	 * kept in row 1 of hx and copied to h before every run */
	for (size_t i = 0; i < ne; i++)
		st[i] = (float)((int)(i * 37 % 17) - 8) / 8.0f;
	cudaError_t e = cudaMemcpy(be->hx + ne, st, ne * 4, cudaMemcpyHostToDevice);
	free(st);
	CU_TRY(e, "time_sublayer");
	be->prm_h[0] = ctx_len;
	CUDA_P_POS(be->prm_h, CUDA_CHUNK)[0] = ctx_len;
	for (int i = -1; i < reps; i++) {
		if (i == 0)
			CU_TRY(cudaEventRecord(be->ev0, be->st), "cudaEventRecord");
		CU_TRY(cudaMemcpyAsync(be->h, be->hx + ne, ne * 4, cudaMemcpyDeviceToDevice, be->st),
		       "time_sublayer");
		if ((rc = run_sublayer(be, kind, layer, 0, 1, err)))
			return rc;
	}
	CU_TRY(cudaEventRecord(be->ev1, be->st), "cudaEventRecord");
	CU_TRY(cudaEventSynchronize(be->ev1), "cudaEventSynchronize");
	CU_TRY(cudaEventElapsedTime(&ms, be->ev0, be->ev1), "cudaEventElapsedTime");
	*seconds = (double)ms * 1e-3 / reps;
	return 0;
}

int cuda_d2d_bandwidth(int device, size_t bytes, double *bytes_per_s, struct skipper_error *err)
{
	void *a = NULL, *b = NULL;
	cudaEvent_t e0 = NULL, e1 = NULL;
	cudaError_t e;
	float ms = 0.0f;
	int reps = 10;

	if (!bytes_per_s || bytes == 0)
		return cuda_failf(err, SKIPPER_ERR_ARG, "cuda backend: d2d_bandwidth bad arguments");
	CU_TRY(cudaSetDevice(device), "cudaSetDevice");
	/* every resource is released at `out`, whatever failed */
	if ((e = cudaMalloc(&a, bytes)) != cudaSuccess || (e = cudaMalloc(&b, bytes)) != cudaSuccess ||
	    (e = cudaEventCreate(&e0)) != cudaSuccess || (e = cudaEventCreate(&e1)) != cudaSuccess ||
	    (e = cudaMemset(a, 1, bytes)) != cudaSuccess ||
	    (e = cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice)) != cudaSuccess ||
	    (e = cudaEventRecord(e0, 0)) != cudaSuccess)
		goto out;
	for (int i = 0; i < reps; i++)
		if ((e = cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, 0)) !=
		    cudaSuccess)
			goto out;
	if ((e = cudaEventRecord(e1, 0)) != cudaSuccess || (e = cudaEventSynchronize(e1)) != cudaSuccess ||
	    (e = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess)
		goto out;
	/* each copy reads and writes `bytes` */
	*bytes_per_s = ms > 0.0f ? 2.0 * (double)bytes * reps / ((double)ms * 1e-3) : 0.0;
out:
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	cudaFree(a);
	cudaFree(b);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return cuda_fail(err, "d2d_bandwidth", e);
	}
	return 0;
}
