/* One transformer block's sub-layers over a chunk of rows on the device,
 * and the projection they and the head run: the skinny GEMM for at most
 * CUDA_SKINNY_MAX rows (bit-identical per row whatever the row count),
 * cuBLAS beyond (prefill). */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

/* Y[nr][w->n] (+)= X[nr][w->k] . W^T */
int cuda_matmul(struct cuda_backend *be, const struct cuda_w *w, const float *X, int ldx, int nr,
                float *Y, int ldy, int accumulate, struct skipper_error *err)
{
	if (nr <= CUDA_SKINNY_MAX) {
		CU_TRY(cuda_skinny_gemm(w->p, w->k, w->n, X, ldx, nr, Y, ldy, accumulate, be->st),
		       "skinny GEMM");
		return 0;
	}
	/* cuBLAS wants both inputs BF16: round the activations once */
	CU_TRY(cuda_f32_to_bf16(X, nr, w->k, (size_t)ldx, be->xb, (size_t)w->k, be->st),
	       "activations to BF16");
	/* column-major view: Y^T[n][nr] = W^T^T . Xb^T, i.e. C = op(A) B with
	 * A = W seen as k x n (lda k) transposed, B = Xb as k x nr (ldb k) */
	float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
	cublasStatus_t s = cublasGemmEx(be->blas, CUBLAS_OP_T, CUBLAS_OP_N, w->n, nr, w->k, &alpha,
	                                w->p, CUDA_R_16BF, w->k, be->xb, CUDA_R_16BF, w->k, &beta, Y,
	                                CUDA_R_32F, ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (s != CUBLAS_STATUS_SUCCESS)
		return cublas_fail(err, "cublasGemmEx", s);
	return 0;
}

int cuda_attn_block(struct cuda_backend *be, const struct cuda_batch *b, int layer, int r0, int nr,
                    struct skipper_error *err)
{
	const struct cuda_layer *D = &be->L[layer];
	size_t ne = (size_t)be->n_embd, n_ctx = (size_t)be->base.n_ctx, kvr = (size_t)be->kv_row;
	int rc;

	CU_TRY(cuda_rmsnorm(be->h, ne, NULL, be->norm_attn + layer * ne, be->n_embd, be->rms_eps,
	                    be->xn, (size_t)be->xn_w, nr, be->st),
	       "attention norm");
	if ((rc = cuda_matmul(be, &D->qkv, be->xn, be->xn_w, nr, be->qkv, be->qkv_w, 0, err)))
		return rc;
	float *q = be->qkv, *k = q + be->q_dim, *v = k + be->kv_dim;

	uint16_t *kc = be->k_cache + (size_t)layer * n_ctx * kvr;
	uint16_t *vc = be->v_cache + (size_t)layer * n_ctx * kvr;
	uint16_t *ks = be->k_scr + (size_t)layer * be->scr_cap * kvr;
	uint16_t *vs = be->v_scr + (size_t)layer * be->scr_cap * kvr;
	struct cuda_rope_args ra = {
		.q = q, .k = k, .v = v, .stride = be->qkv_w, .nr = nr, .r0 = r0, .n_head = be->n_head,
		.n_kv = be->n_kv, .hd = be->hd, .rope_dim = be->rope_dim, .pairs = be->pairs,
		.bias = be->bias ? be->bias + (size_t)layer * be->qkv_w : NULL,
		.q_norm = be->qk_norm ? be->qk_norm + (size_t)layer * 2 * be->hd : NULL,
		.k_norm = be->qk_norm ? be->qk_norm + (size_t)layer * 2 * be->hd + be->hd : NULL,
		.eps = be->rms_eps, .freq = be->freq, .pos = CUDA_P_POS(be->prm_d, CUDA_CHUNK), .n_past = be->prm_d,
		.kv_write = b->kv_write, .kv_q8 = be->kv_q8, .kv_row = be->kv_row,
		.k_cache = kc, .v_cache = vc, .k_scr = ks, .v_scr = vs,
	};
	CU_TRY(cuda_rope_store(&ra, be->st), "RoPE");
	struct cuda_attn_args aa = {
		.q = q, .q_stride = be->qkv_w, .out = be->att, .nr = nr, .r0 = r0, .n_head = be->n_head,
		.n_kv = be->n_kv, .hd = be->hd, .scale = be->attn_scale, .n_past = be->prm_d, .parent = b->parent_d,
		.kv_write = b->kv_write, .kv_q8 = be->kv_q8, .kv_row = be->kv_row,
		.k_cache = kc, .v_cache = vc, .k_scr = ks, .v_scr = vs,
	};
	CU_TRY(cuda_attention(&aa, be->st), "attention");
	/* residual add fused into the output projection */
	return cuda_matmul(be, &D->wo, be->att, be->q_dim, nr, be->h, be->n_embd, 1, err);
}

int cuda_mlp_block(struct cuda_backend *be, int layer, int nr, struct skipper_error *err)
{
	const struct cuda_layer *D = &be->L[layer];
	size_t ne = (size_t)be->n_embd;
	int rc;

	CU_TRY(cuda_rmsnorm(be->h, ne, NULL, be->norm_ffn + layer * ne, be->n_embd, be->rms_eps, be->xn,
	                    (size_t)be->xn_w, nr, be->st),
	       "MLP norm");
	if ((rc = cuda_matmul(be, &D->gateup, be->xn, be->xn_w, nr, be->gu, 2 * be->n_ff, 0, err)))
		return rc;
	CU_TRY(cuda_swiglu(be->gu, be->gu + be->n_ff, 2 * (size_t)be->n_ff, nr, be->n_ff, be->xn,
	                   (size_t)be->xn_w, be->st),
	       "SwiGLU");
	return cuda_matmul(be, &D->down, be->xn, be->xn_w, nr, be->h, be->n_embd, 1, err);
}
