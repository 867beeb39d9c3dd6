/* The model's weights on the device: the model checked against what the
 * kernels run, and every weight uploaded once at creation. Matrices become
 * BF16 (F32/F16/BF16 converted, the block types dequantised by a kernel
 * from the raw blocks), Q/K/V and gate/up stacked into one matrix each;
 * norm weights, Q/K/V biases (qwen2) and per-head Q/K norms (qwen3) F32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

/* vector: a norm or bias, which stays F32 (converted from F32/F16/BF16) */
static int weight_ok(const struct skipper_weight *w, int64_t ne0, int64_t ne1, int vector)
{
	if (!w->data || w->ne0 != ne0 || w->ne1 != ne1)
		return 0;
	int be = cuda_dequant_block(w->type);
	if (vector)
		return be == 1 && w->row_bytes >= (size_t)ne0 * (w->type == SKIPPER_F32 ? 4 : 2);
	return be > 0 && ne0 % be == 0;
}

int cuda_check_model(const struct skipper_model_view *m, struct skipper_error *err)
{
	const struct skipper_hparams *hp = &m->hp;
	int64_t ne = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim,
		kvd = (int64_t)hp->n_head_kv * hp->head_dim;

	if (m->arch_id != SKIPPER_ARCH_LLAMA && m->arch_id != SKIPPER_ARCH_QWEN2 &&
	    m->arch_id != SKIPPER_ARCH_QWEN3)
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
		                  "cuda backend: architecture %s is not supported (llama, qwen2 and qwen3 "
		                  "are); use [model] backend = cpu",
		                  m->arch);
	/* multiples of 8 for the 16-byte loads of the skinny GEMM */
	if (hp->n_embd <= 0 || hp->n_embd % 8 || hp->n_ff <= 0 || hp->n_ff % 8 || hp->n_head <= 0 ||
	    hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv || hp->head_dim <= 0 ||
	    hp->head_dim > CUDA_MAX_HEAD_DIM || qd % 8 || hp->n_layer <= 0 || hp->n_vocab <= 0 ||
	    hp->rope_dim < 0 || hp->rope_dim % 2 || hp->rope_dim > hp->head_dim)
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
		                  "cuda backend: unsupported hyper-parameters (n_embd %d, n_ff %d, heads "
		                  "%d/%d, head_dim %d, rope_dim %d)",
		                  hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim,
		                  hp->rope_dim);
	int ok = weight_ok(&m->tok_embd, ne, hp->n_vocab, 0) && weight_ok(&m->output, ne, hp->n_vocab, 0) &&
	         weight_ok(&m->out_norm, ne, 1, 1);
	for (int l = 0; ok && l < hp->n_layer; l++) {
		const struct skipper_layer *L = &m->layers[l];
		ok = weight_ok(&L->attn_norm, ne, 1, 1) && weight_ok(&L->ffn_norm, ne, 1, 1) &&
		     weight_ok(&L->wq, ne, qd, 0) && weight_ok(&L->wk, ne, kvd, 0) &&
		     weight_ok(&L->wv, ne, kvd, 0) && weight_ok(&L->wo, qd, ne, 0) &&
		     weight_ok(&L->w_gate, ne, hp->n_ff, 0) && weight_ok(&L->w_up, ne, hp->n_ff, 0) &&
		     weight_ok(&L->w_down, hp->n_ff, ne, 0);
		/* the CPU backend adds biases and norms wherever the model has them */
		if (ok && (L->bq.data || L->bk.data || L->bv.data))
			ok = weight_ok(&L->bq, qd, 1, 1) && weight_ok(&L->bk, kvd, 1, 1) &&
			     weight_ok(&L->bv, kvd, 1, 1);
		if (ok && (L->q_norm.data || L->k_norm.data))
			ok = weight_ok(&L->q_norm, hp->head_dim, 1, 1) && weight_ok(&L->k_norm, hp->head_dim, 1, 1);
		if (ok && l > 0)
			ok = !L->bq.data == !m->layers[0].bq.data && !L->q_norm.data == !m->layers[0].q_norm.data;
	}
	if (!ok)
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
		                  "cuda backend: a weight is missing, of an unexpected shape or of an "
		                  "unsupported type (norms and biases must be F32/F16/BF16, and in every "
		                  "layer or none)");
	return 0;
}

static int tied(const struct skipper_model_view *m)
{
	return m->tied_embeddings || m->output.data == m->tok_embd.data;
}

static size_t wbytes(const struct skipper_weight *w)
{
	return (size_t)w->ne0 * (size_t)w->ne1 * 2;
}

size_t cuda_weights_bytes(const struct skipper_model_view *m)
{
	size_t ne = (size_t)m->hp.n_embd, L = (size_t)m->hp.n_layer;
	size_t n = wbytes(&m->tok_embd) + (tied(m) ? 0 : wbytes(&m->output)) + (2 * L + 1) * ne * 4;
	const struct skipper_layer *L0 = &m->layers[0];
	if (L0->bq.data)
		n += L * (size_t)(L0->bq.ne0 + L0->bk.ne0 + L0->bv.ne0) * 4;
	if (L0->q_norm.data)
		n += L * 2 * (size_t)m->hp.head_dim * 4;
	for (int l = 0; l < m->hp.n_layer; l++) {
		const struct skipper_layer *Ly = &m->layers[l];
		n += wbytes(&Ly->wq) + wbytes(&Ly->wk) + wbytes(&Ly->wv) + wbytes(&Ly->wo) + wbytes(&Ly->w_gate) +
		     wbytes(&Ly->w_up) + wbytes(&Ly->w_down);
	}
	return n;
}

/* Upload one weight as BF16 rows at dst (device) through the staging
 * buffer: raw rows go up as they are, a kernel converts them. */
static int upload_rows(struct cuda_backend *be, const struct skipper_weight *w, void *stage,
                       uint16_t *dst, const char *what, struct skipper_error *err)
{
	int64_t per = (int64_t)(CUDA_STAGE_BYTES / w->row_bytes);
	if (per < 1)
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED, "cuda backend: %s: rows of %zu bytes",
		                  what, w->row_bytes);
	for (int64_t r = 0; r < w->ne1; r += per) {
		int64_t nr = w->ne1 - r < per ? w->ne1 - r : per;
		/* pageable source: returns once the bytes are staged, and the
		 * stream orders it after the previous conversion */
		CU_TRY(cudaMemcpyAsync(stage, (const char *)w->data + (size_t)r * w->row_bytes,
		                       (size_t)nr * w->row_bytes, cudaMemcpyHostToDevice, be->st),
		       "upload weights");
		CU_TRY(cuda_to_bf16(w->type, stage, w->row_bytes, w->ne0, nr, dst + (size_t)r * w->ne0, be->st),
		       "convert weights to BF16");
	}
	return 0;
}

/* Upload weights w[0..n) (same row length) stacked into one BF16 matrix,
 * w[0]'s rows first. dst->p owned by the backend. */
static int upload_w(struct cuda_backend *be, const struct skipper_weight *const *w, int n, void *stage,
                    struct cuda_w *dst, const char *what, struct skipper_error *err)
{
	size_t bytes = 0, row = 0;
	int rc;
	dst->k = (int)w[0]->ne0;
	dst->n = 0;
	for (int i = 0; i < n; i++) {
		dst->n += (int)w[i]->ne1;
		bytes += wbytes(w[i]);
	}
	if ((rc = cuda_dalloc(be, (void **)&dst->p, bytes, what, err)))
		return rc;
	for (int i = 0; i < n; i++) {
		if ((rc = upload_rows(be, w[i], stage, dst->p + row * (size_t)dst->k, what, err)))
			return rc;
		row += (size_t)w[i]->ne1;
	}
	return 0;
}

static int upload_norm(struct cuda_backend *be, const struct skipper_weight *w, void *stage,
                       float *dst, struct skipper_error *err)
{
	CU_TRY(cudaMemcpyAsync(stage, w->data, w->row_bytes, cudaMemcpyHostToDevice, be->st),
	       "upload norm weights");
	CU_TRY(cuda_to_f32(w->type, stage, w->ne0, dst, be->st), "convert norm weights");
	return 0;
}

int cuda_upload_weights(struct cuda_backend *be, const struct skipper_model_view *m,
                        struct skipper_error *err)
{
	void *stage = NULL;
	size_t ne = (size_t)be->n_embd;
	int rc;
	char what[64];

	size_t nl = (size_t)be->n_layer, hd = (size_t)be->hd;
	if (m->layers[0].bq.data && (rc = cuda_dalloc(be, (void **)&be->bias, nl * be->qkv_w * 4, "biases", err)))
		return rc;
	if (m->layers[0].q_norm.data && (rc = cuda_dalloc(be, (void **)&be->qk_norm, nl * 2 * hd * 4, "norms", err)))
		return rc;
	if ((rc = cuda_dalloc(be, &stage, CUDA_STAGE_BYTES, "upload staging", err)))
		return rc;
	const struct skipper_weight *tok = &m->tok_embd, *out = &m->output;
	rc = upload_w(be, &tok, 1, stage, &be->tok, "token_embd", err);
	if (!rc && tied(m))
		be->out = be->tok;
	else if (!rc)
		rc = upload_w(be, &out, 1, stage, &be->out, "output", err);
	if (!rc)
		rc = upload_norm(be, &m->out_norm, stage, be->norm_out, err);
	for (int l = 0; !rc && l < be->n_layer; l++) {
		const struct skipper_layer *L = &m->layers[l];
		struct cuda_layer *D = &be->L[l];
		const struct skipper_weight *qkv[] = { &L->wq, &L->wk, &L->wv };
		const struct skipper_weight *gu[] = { &L->w_gate, &L->w_up }, *wo = &L->wo, *down = &L->w_down;
		snprintf(what, sizeof what, "layer %d weights", l);
		if ((rc = upload_norm(be, &L->attn_norm, stage, be->norm_attn + l * ne, err)) ||
		    (rc = upload_norm(be, &L->ffn_norm, stage, be->norm_ffn + l * ne, err)) ||
		    (rc = upload_w(be, qkv, 3, stage, &D->qkv, what, err)) ||
		    (rc = upload_w(be, &wo, 1, stage, &D->wo, what, err)) ||
		    (rc = upload_w(be, gu, 2, stage, &D->gateup, what, err)) ||
		    (rc = upload_w(be, &down, 1, stage, &D->down, what, err)))
			break;
		if (be->bias) {
			float *b = be->bias + l * (size_t)be->qkv_w;
			if ((rc = upload_norm(be, &L->bq, stage, b, err)) ||
			    (rc = upload_norm(be, &L->bk, stage, b + be->q_dim, err)) ||
			    (rc = upload_norm(be, &L->bv, stage, b + be->q_dim + be->kv_dim, err)))
				break;
		}
		if (be->qk_norm && ((rc = upload_norm(be, &L->q_norm, stage, be->qk_norm + l * 2 * hd, err)) ||
		                    (rc = upload_norm(be, &L->k_norm, stage, be->qk_norm + l * 2 * hd + hd, err))))
			break;
	}
	/* the staging buffer is only freed once the conversions are done */
	cudaError_t e = cudaStreamSynchronize(be->st);
	cudaFree(stage);
	if (!rc && e != cudaSuccess)
		rc = cuda_fail(err, "weight upload", e);
	return rc;
}
