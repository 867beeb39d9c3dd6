/* The forward pass on the device: sub-layer blocks, the head, the forward
 * loop over chunks of rows, and the CUDA graphs of the one-token step.
 *
 * Projections: the skinny GEMM for chunks of at most CUDA_SKINNY_MAX rows
 * (bit-identical per row whatever the row count), cuBLAS for bigger chunks
 * (prefill, shared by autoregressive and speculative decoding). A forward
 * call of up to 64 rows is one chunk, so every draft and verify batch runs
 * the batch-invariant kernels. */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

/* ---------------------------------------------------------------- GEMM */

/* Y[nr][w->n] (+)= X[nr][w->k] . W^T */
static int gemm(struct cuda_backend *be, const struct cuda_w *w, const float *X, int ldx, int nr,
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

/* -------------------------------------------------------------- blocks */

int cuda_attn_block(struct cuda_backend *be, const struct cuda_batch *b, int layer, int r0, int nr,
                    struct skipper_error *err)
{
	const struct cuda_layer *D = &be->L[layer];
	size_t ne = (size_t)be->n_embd, n_ctx = (size_t)be->base.n_ctx, kvd = (size_t)be->kv_dim;
	int rc;

	CU_TRY(cuda_rmsnorm(be->h, ne, NULL, be->norm_attn + layer * ne, be->n_embd, be->rms_eps,
	                    be->xn, (size_t)be->xn_w, nr, be->st),
	       "attention norm");
	if ((rc = gemm(be, &D->qkv, be->xn, be->xn_w, nr, be->qkv, be->qkv_w, 0, err)))
		return rc;
	float *q = be->qkv, *k = q + be->q_dim, *v = k + be->kv_dim;

	uint16_t *kc = be->k_cache + (size_t)layer * n_ctx * kvd;
	uint16_t *vc = be->v_cache + (size_t)layer * n_ctx * kvd;
	uint16_t *ks = be->k_scr + (size_t)layer * be->scr_cap * kvd;
	uint16_t *vs = be->v_scr + (size_t)layer * be->scr_cap * kvd;
	struct cuda_rope_args ra = {
		.q = q, .k = k, .v = v, .stride = be->qkv_w, .nr = nr, .r0 = r0, .n_head = be->n_head,
		.n_kv = be->n_kv, .hd = be->hd, .rope_dim = be->rope_dim, .pairs = be->pairs,
		.freq = be->freq, .pos = CUDA_P_POS(be->prm_d, CUDA_CHUNK), .n_past = be->prm_d,
		.kv_write = b->kv_write, .k_cache = kc, .v_cache = vc, .k_scr = ks, .v_scr = vs,
	};
	CU_TRY(cuda_rope_store(&ra, be->st), "RoPE");
	struct cuda_attn_args aa = {
		.q = q, .q_stride = be->qkv_w, .out = be->att, .nr = nr, .r0 = r0, .n_head = be->n_head,
		.n_kv = be->n_kv, .hd = be->hd, .scale = be->attn_scale, .n_past = be->prm_d, .parent = b->parent_d,
		.kv_write = b->kv_write, .k_cache = kc, .v_cache = vc, .k_scr = ks, .v_scr = vs,
	};
	CU_TRY(cuda_attention(&aa, be->st), "attention");
	/* residual add fused into the output projection */
	return gemm(be, &D->wo, be->att, be->q_dim, nr, be->h, be->n_embd, 1, err);
}

int cuda_mlp_block(struct cuda_backend *be, int layer, int nr, struct skipper_error *err)
{
	const struct cuda_layer *D = &be->L[layer];
	size_t ne = (size_t)be->n_embd;
	int rc;

	CU_TRY(cuda_rmsnorm(be->h, ne, NULL, be->norm_ffn + layer * ne, be->n_embd, be->rms_eps, be->xn,
	                    (size_t)be->xn_w, nr, be->st),
	       "MLP norm");
	if ((rc = gemm(be, &D->gateup, be->xn, be->xn_w, nr, be->gu, 2 * be->n_ff, 0, err)))
		return rc;
	CU_TRY(cuda_swiglu(be->gu, be->gu + be->n_ff, 2 * (size_t)be->n_ff, nr, be->n_ff, be->xn,
	                   (size_t)be->xn_w, be->st),
	       "SwiGLU");
	return gemm(be, &D->down, be->xn, be->xn_w, nr, be->h, be->n_embd, 1, err);
}

int cuda_head(struct cuda_backend *be, const int32_t *rows_d, int m, int k, int want_probs,
              int want_logits, struct skipper_error *err)
{
	int rc;
	if (m <= 0)
		return 0;
	CU_TRY(cuda_rmsnorm(be->h, (size_t)be->n_embd, rows_d, be->norm_out, be->n_embd, be->rms_eps,
	                    be->hx, (size_t)be->n_embd, m, be->st),
	       "output norm");
	if ((rc = gemm(be, &be->out, be->hx, be->n_embd, m, be->logits, be->n_vocab, 0, err)))
		return rc;
	if (k > 0) {
		CU_TRY(cuda_topk(be->logits, m, be->n_vocab, k, be->top_ids, want_probs ? be->top_probs : NULL,
		                 be->st),
		       "top-k");
		CU_TRY(cudaMemcpyAsync(be->top_ids_h, be->top_ids, (size_t)m * k * 4, cudaMemcpyDeviceToHost,
		                       be->st),
		       "copy top-k ids");
		if (want_probs)
			CU_TRY(cudaMemcpyAsync(be->top_probs_h, be->top_probs, (size_t)m * k * 4,
			                       cudaMemcpyDeviceToHost, be->st),
			       "copy top-k probabilities");
	}
	if (want_logits)
		CU_TRY(cudaMemcpyAsync(be->logits_h, be->logits, (size_t)m * be->n_vocab * 4,
		                       cudaMemcpyDeviceToHost, be->st),
		       "copy logits");
	return 0;
}

/* ------------------------------------------------------------ parents */

/* Parents as the kernels want them: NULL for a chain (including an explicit
 * one), else no deeper than CUDA_MAX_ANC (what the attention kernel follows;
 * the core has checked the rest of the request). */
static int parents_mode(const struct skipper_forward *fw, int *chain, struct skipper_error *err)
{
	*chain = 1;
	if (!fw->parent)
		return 0;
	for (int i = 0; i < fw->n && *chain; i++)
		if (fw->parent[i] != i - 1)
			*chain = 0;
	if (*chain)
		return 0;
	for (int i = 0; i < fw->n; i++) {
		int d = 0;
		for (int p = fw->parent[i]; p >= 0; p = fw->parent[p])
			if (++d >= CUDA_MAX_ANC)
				return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
				                  "cuda backend: tree row %d is deeper than %d ancestors", i,
				                  CUDA_MAX_ANC);
	}
	return 0;
}

/* ------------------------------------------------------------ captures */

static int want_captures(const struct skipper_forward *fw)
{
	return fw->n_cap_layers > 0 && fw->n_cap_rows > 0;
}

/* Enqueue copies of the rows of chunk [r0, r0 + nr) captured at point `at`
 * (cap_layers numbering of this call) into the pinned capture buffer. */
static int capture(struct cuda_backend *be, const struct skipper_forward *fw, int at, int r0, int nr,
                   struct skipper_error *err)
{
	size_t ne = (size_t)be->n_embd;
	for (int c = 0; c < fw->n_cap_layers; c++) {
		if (fw->cap_layers[c] != at)
			continue;
		for (int i = 0; i < fw->n_cap_rows; i++) {
			int r = fw->cap_rows[i] - r0;
			if (r >= 0 && r < nr)
				CU_TRY(cudaMemcpyAsync(be->cap_h + ((size_t)i * fw->n_cap_layers + c) * ne,
				                       be->h + (size_t)r * ne, ne * sizeof(float),
				                       cudaMemcpyDeviceToHost, be->st),
				       "copy capture");
		}
	}
	return 0;
}

static int grow_captures(struct cuda_backend *be, const struct skipper_forward *fw,
                         struct skipper_error *err)
{
	size_t need = (size_t)fw->n_cap_rows * fw->n_cap_layers * be->n_embd * sizeof(float);
	if (need <= be->cap_h_size)
		return 0;
	CU_TRY(cudaStreamSynchronize(be->st), "capture buffer");
	cudaFreeHost(be->cap_h);
	be->cap_h = NULL;
	be->cap_h_size = 0;
	CU_TRY(cudaHostAlloc((void **)&be->cap_h, need, cudaHostAllocDefault), "pinned capture buffer");
	be->cap_h_size = need;
	return 0;
}

/* -------------------------------------------------------- the layers */

/* Enqueue everything for rows [r0, r0 + nr) of the call after the params
 * block (already filled on the host) is copied up: embeddings, layers with
 * captures, and the first head pass of m rows. Graph-capturable when no
 * captures are asked for and nr <= CUDA_SKINNY_MAX. */
static int enqueue_chunk(struct cuda_backend *be, const struct skipper_forward *fw,
                         const struct cuda_batch *b, int r0, int nr, int m, int want_logits,
                         struct skipper_error *err)
{
	int caps = want_captures(fw), sub = fw->cap_sublayers, rc;

	CU_TRY(cudaMemcpyAsync(be->prm_d, be->prm_h, CUDA_PARAMS_INTS(CUDA_CHUNK) * 4,
	                       cudaMemcpyHostToDevice, be->st),
	       "copy parameters");
	CU_TRY(cuda_embed(be->tok.p, CUDA_P_TOK(be->prm_d), nr, be->n_embd, be->h, be->st), "embedding");
	if (caps && (rc = capture(be, fw, -1, r0, nr, err)))
		return rc;
	for (int l = 0; l < be->n_layer; l++) {
		if (!(b->skip_attn && b->skip_attn[l]) && (rc = cuda_attn_block(be, b, l, r0, nr, err)))
			return rc;
		if (caps && sub && (rc = capture(be, fw, 2 * l, r0, nr, err)))
			return rc;
		if (!(b->skip_mlp && b->skip_mlp[l]) && (rc = cuda_mlp_block(be, l, nr, err)))
			return rc;
		if (caps && (rc = capture(be, fw, sub ? 2 * l + 1 : l, r0, nr, err)))
			return rc;
	}
	return cuda_head(be, CUDA_P_HEAD(be->prm_d, CUDA_CHUNK), m, fw->top_k, fw->top_probs != NULL, want_logits,
	                 err);
}

/* Copy the head results of the last pass (m rows, out indices be->hidx) to
 * the caller, after the stream was synchronised; a row whose top logit was
 * not finite fails the pass. */
static int scatter_head(struct cuda_backend *be, const struct skipper_forward *fw, int m,
                        struct skipper_error *err)
{
	size_t nv = (size_t)be->n_vocab, k = (size_t)fw->top_k;
	for (int j = 0; j < m; j++) {
		int o = be->hidx[j];
		if (k > 0) {
			if (be->top_ids_h[(size_t)j * k] < 0)
				return cuda_nonfinite(be, err);
			memcpy(fw->top_ids + (size_t)o * k, be->top_ids_h + (size_t)j * k, k * 4);
			if (fw->top_probs)
				memcpy(fw->top_probs + (size_t)o * k, be->top_probs_h + (size_t)j * k, k * 4);
		}
		if (fw->logits)
			memcpy(fw->logits + (size_t)o * nv, be->logits_h + (size_t)j * nv, nv * 4);
	}
	return 0;
}

/* Next up to CUDA_HEAD_CHUNK out rows falling in [r0, r0 + nr), from out
 * index *cur on: local rows into the params block, out indices into hidx. */
static int gather_head(struct cuda_backend *be, const struct skipper_forward *fw, int r0, int nr,
                       int *cur)
{
	int32_t *hr = CUDA_P_HEAD(be->prm_h, CUDA_CHUNK);
	int m = 0;
	for (; *cur < fw->n_out && m < CUDA_HEAD_CHUNK; (*cur)++) {
		int r = fw->out_rows[*cur] - r0;
		if (r >= 0 && r < nr) {
			hr[m] = r;
			be->hidx[m++] = *cur;
		}
	}
	be->prm_h[1] = m;
	return m;
}

/* ------------------------------------------------------------ graphs */

static void graph_key(struct cuda_backend *be, const struct skipper_forward *fw, int m)
{
	size_t L = (size_t)be->n_layer;
	uint8_t *k = be->graph_key;
	for (size_t l = 0; l < L; l++) {
		k[l] = fw->skip_attn && fw->skip_attn[l] ? 1 : 0;
		k[L + l] = fw->skip_mlp && fw->skip_mlp[l] ? 1 : 0;
	}
	int32_t flags[4] = { fw->kv_write ? 1 : 0, m, fw->top_k, fw->logits ? 1 : 0 };
	memcpy(k + 2 * L, flags, sizeof flags);
}

/* Replay (capturing first if needed) the one-token step. Returns 1 when the
 * graph ran, 0 when graphs gave up (the caller runs the step directly), or
 * a negative status. Any failure to capture switches graphs off for this
 * backend rather than failing the call. */
static int run_graph(struct cuda_backend *be, const struct skipper_forward *fw,
                     const struct cuda_batch *b, int m, struct skipper_error *err)
{
	struct cuda_graph *g = NULL, *victim = &be->graphs[0];
	int rc;

	graph_key(be, fw, m);
	for (int i = 0; i < CUDA_GRAPHS; i++) {
		struct cuda_graph *e = &be->graphs[i];
		if (e->exec && memcmp(e->key, be->graph_key, be->graph_key_len) == 0) {
			g = e;
			break;
		}
		if (!e->exec || (victim->exec && e->used < victim->used))
			victim = e;
	}
	if (!g) {
		cudaGraph_t graph = NULL;
		cudaGraphExec_t exec = NULL;
		if (victim->exec) {
			cudaGraphExecDestroy(victim->exec);
			victim->exec = NULL;
		}
		cudaError_t e = cudaStreamBeginCapture(be->st, cudaStreamCaptureModeThreadLocal);
		if (e != cudaSuccess) {
			cudaGetLastError();
			be->graphs_on = 0;
			return 0;
		}
		rc = enqueue_chunk(be, fw, b, 0, 1, m, fw->logits != NULL, err);
		e = cudaStreamEndCapture(be->st, &graph);
		if (!rc && e == cudaSuccess)
			e = cudaGraphInstantiate(&exec, graph, 0);
		if (graph)
			cudaGraphDestroy(graph);
		if (rc || e != cudaSuccess) {
			/* give up on graphs; the direct path reports real errors */
			cudaGetLastError();
			be->graphs_on = 0;
			cuda_graphs_clear(be);
			return 0;
		}
		victim->exec = exec;
		memcpy(victim->key, be->graph_key, be->graph_key_len);
		g = victim;
	}
	g->used = ++be->tick;
	CU_TRY(cudaGraphLaunch(g->exec, be->st), "cudaGraphLaunch");
	return 1;
}

/* ------------------------------------------------------------ forward */

int cuda_be_forward(struct skipper_backend *base, const struct skipper_forward *fw,
                    struct skipper_error *err)
{
	struct cuda_backend *be = (struct cuda_backend *)base;
	int chain, rc;

	CU_TRY(cudaSetDevice(be->dev), "cudaSetDevice");
	if ((rc = parents_mode(fw, &chain, err)))
		return rc;
	if (!fw->kv_write && (rc = cuda_grow_scratch(be, fw->n, err)))
		return rc;
	if (want_captures(fw) && (rc = grow_captures(be, fw, err)))
		return rc;
	if (fw->logits && !be->logits_h) {
		CU_TRY(cudaHostAlloc((void **)&be->logits_h, (size_t)CUDA_HEAD_CHUNK * be->n_vocab * 4,
		                     cudaHostAllocDefault),
		       "pinned logits");
	}
	struct cuda_batch b = {
		.kv_write = fw->kv_write, .parent_d = NULL, .skip_attn = fw->skip_attn,
		.skip_mlp = fw->skip_mlp,
	};
	if (!chain) {
		if (fw->n > be->par_cap) {
			CU_TRY(cudaStreamSynchronize(be->st), "parents");
			cudaFree(be->par_d);
			be->par_d = NULL;
			be->par_cap = 0;
			if ((rc = cuda_dalloc(be, (void **)&be->par_d, (size_t)fw->n * 4, "parents", err)))
				return rc;
			be->par_cap = fw->n;
		}
		/* pageable source: staged before the call returns */
		CU_TRY(cudaMemcpyAsync(be->par_d, fw->parent, (size_t)fw->n * 4, cudaMemcpyHostToDevice,
		                       be->st),
		       "copy parents");
		b.parent_d = be->par_d;
	}

	for (int r0 = 0; r0 < fw->n; r0 += CUDA_CHUNK) {
		int nr = fw->n - r0 < CUDA_CHUNK ? fw->n - r0 : CUDA_CHUNK, cur = 0;
		/* the previous chunk's copies of the params block are done:
		 * every chunk ends with a synchronisation below */
		be->prm_h[0] = fw->n_past;
		for (int r = 0; r < nr; r++) {
			CUDA_P_TOK(be->prm_h)[r] = fw->tokens[r0 + r];
			CUDA_P_POS(be->prm_h, CUDA_CHUNK)[r] = fw->pos ? fw->pos[r0 + r] : fw->n_past + r0 + r;
		}
		int m = gather_head(be, fw, r0, nr, &cur);
		int done = 0;
		if (be->graphs_on && fw->n == 1 && !want_captures(fw)) {
			if ((rc = run_graph(be, fw, &b, m, err)) < 0)
				return rc;
			done = rc;
		}
		if (!done && (rc = enqueue_chunk(be, fw, &b, r0, nr, m, fw->logits != NULL, err)))
			return rc;
		for (;;) {
			CU_TRY(cudaStreamSynchronize(be->st), "forward");
			if (m > 0 && (rc = scatter_head(be, fw, m, err)))
				return rc;
			if ((m = gather_head(be, fw, r0, nr, &cur)) == 0)
				break;
			/* more out rows in this chunk than one head pass takes */
			CU_TRY(cudaMemcpyAsync(be->prm_d, be->prm_h, CUDA_PARAMS_INTS(CUDA_CHUNK) * 4,
			                       cudaMemcpyHostToDevice, be->st),
			       "copy parameters");
			if ((rc = cuda_head(be, CUDA_P_HEAD(be->prm_d, CUDA_CHUNK), m, fw->top_k, fw->top_probs != NULL,
			                    fw->logits != NULL, err)))
				return rc;
		}
	}
	if (want_captures(fw))
		memcpy(fw->captures, be->cap_h,
		       (size_t)fw->n_cap_rows * fw->n_cap_layers * be->n_embd * sizeof(float));
	return 0;
}
