/* The CUDA backend module: its entry point (the only exported symbol), the
 * device probe, creation and destruction, the vtable and the forward loop
 * (chunks of rows through the layers, then the head; calls of up to
 * CUDA_GRAPH_ROWS rows replayed as CUDA graphs, cuda_graphs.c). The other operations live in
 * cuda_services.c, the weights in cuda_weights.c, the blocks in
 * cuda_layer.c, the head in cuda_head.c, the kernels in cuda_kernels_*.cu.
 *
 * Projections: the skinny GEMM for chunks of at most CUDA_SKINNY_MAX rows
 * (bit-identical per row whatever the row count), cuBLAS for bigger chunks
 * (prefill, shared by autoregressive and speculative decoding). A forward
 * call of up to 64 rows is one chunk, so every draft and verify batch runs
 * the batch-invariant kernels. The K/V cache is F16 like the CPU
 * backend's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

#ifndef SKIPPER_MODULE_VERSION
#error "SKIPPER_MODULE_VERSION must be defined by the build"
#endif

#define MIB(x) ((double)(x) / (1024.0 * 1024.0))

/* ---------------------------------------------------------------- errors */

int cuda_failf(struct skipper_error *err, int status, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		err->status = status;
	}
	return status;
}

int cuda_fail(struct skipper_error *err, const char *what, cudaError_t e)
{
	return cuda_failf(err, SKIPPER_ERR_BACKEND, "cuda: %s: %s", what, cudaGetErrorString(e));
}

int cublas_fail(struct skipper_error *err, const char *what, cublasStatus_t s)
{
	return cuda_failf(err, SKIPPER_ERR_BACKEND, "cuda: %s: cuBLAS status %d", what, (int)s);
}

int cuda_nonfinite(const struct cuda_backend *be, struct skipper_error *err)
{
	return cuda_failf(err, SKIPPER_ERR_BACKEND, "%s: " SKIPPER_BACKEND_NONFINITE, be->base.model->name);
}

int cuda_dalloc(struct cuda_backend *be, void **p, size_t bytes, const char *what,
                struct skipper_error *err)
{
	cudaError_t e = cudaMalloc(p, bytes ? bytes : 16);
	if (e == cudaSuccess)
		return 0;
	*p = NULL;
	cudaGetLastError(); /* not sticky, but keep it out of later checks */
	return cuda_failf(err, e == cudaErrorMemoryAllocation ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_BACKEND,
	                  "cuda: cudaMalloc %s (%.1f MiB): %s; model needs %.1f MiB + KV %.1f MiB + "
	                  "work %.1f MiB, device had %.1f MiB free",
	                  what, MIB(bytes), cudaGetErrorString(e), MIB(be->need_model),
	                  MIB(be->need_kv), MIB(be->need_work), MIB(be->dev_free));
}

/* ----------------------------------------------------------------- probe */

static int cuda_probe(int device, struct skipper_error *err)
{
	int n = 0, drv = 0, rt = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e == cudaErrorInsufficientDriver) {
		cudaDriverGetVersion(&drv);
		cudaRuntimeGetVersion(&rt);
		cudaGetLastError();
		if (drv == 0)
			return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
			                  "backend cuda: no CUDA device (no NVIDIA driver: libcuda.so "
			                  "cannot be loaded)");
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
		                  "backend cuda: the NVIDIA driver (CUDA %d.%d) is older than the CUDA "
		                  "runtime the module was built with (%d.%d): update the driver",
		                  drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
	}
	if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
		cudaGetLastError();
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED, "backend cuda: no CUDA device found");
	}
	if (e != cudaSuccess) {
		cudaGetLastError();
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED, "backend cuda: no usable CUDA device: %s",
		                  cudaGetErrorString(e));
	}
	if (device < 0 || device >= n)
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
		                  "backend cuda: device %d not present (%d device%s)", device, n,
		                  n == 1 ? "" : "s");
	return 0;
}

/* ------------------------------------------------------------- lifetime */

static void cuda_destroy(struct skipper_backend *base)
{
	struct cuda_backend *be = (struct cuda_backend *)base;
	if (!be)
		return;
	cudaSetDevice(be->dev);
	if (be->st)
		cudaStreamSynchronize(be->st);
	cuda_graphs_clear(be);
	for (int i = 0; i < CUDA_GRAPHS; i++)
		free(be->graphs[i].key);
	free(be->graph_key);
	if (be->L) {
		for (int l = 0; l < be->n_layer; l++) {
			struct cuda_layer *D = &be->L[l];
			cudaFree(D->qkv.p);
			cudaFree(D->wo.p);
			cudaFree(D->gateup.p);
			cudaFree(D->down.p);
		}
		free(be->L);
	}
	if (be->out.p != be->tok.p)
		cudaFree(be->out.p);
	cudaFree(be->sub.p);
	free(be->sub_ids);
	cudaFree(be->tok.p);
	void *dev[] = { be->norm_attn, be->norm_ffn, be->norm_out, be->bias, be->qk_norm, be->freq,
	                be->k_cache, be->v_cache, be->k_scr, be->v_scr, be->h, be->xn, be->xb, be->qkv, be->att, be->gu, be->hx,
	                be->logits, be->top_ids, be->top_probs, be->kvr, be->prm_d, be->par_d, be->idx_d };
	for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
		cudaFree(dev[i]);
	void *host[] = { be->prm_h, be->idx_h, be->top_ids_h, be->top_probs_h, be->logits_h,
	                 be->kvr_h, be->cap_h };
	for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
		cudaFreeHost(host[i]);
	if (be->blas)
		cublasDestroy(be->blas);
	if (be->ev0)
		cudaEventDestroy(be->ev0);
	if (be->ev1)
		cudaEventDestroy(be->ev1);
	if (be->st)
		cudaStreamDestroy(be->st);
	free(be->base.kv_rec);
	free(be);
}

int cuda_grow_scratch(struct cuda_backend *be, int n, struct skipper_error *err)
{
	if (n <= be->scr_cap)
		return 0;
	size_t sz = (size_t)be->n_layer * (size_t)n * be->kv_row * sizeof(uint16_t);
	int rc;
	/* kernels in flight may still read the old scratch */
	CU_TRY(cudaStreamSynchronize(be->st), "scratch K/V");
	cuda_graphs_clear(be); /* captured graphs point at the old buffers */
	cudaFree(be->k_scr);
	cudaFree(be->v_scr);
	be->k_scr = be->v_scr = NULL;
	be->scr_cap = 0;
	if ((rc = cuda_dalloc(be, (void **)&be->k_scr, sz, "scratch K", err)) ||
	    (rc = cuda_dalloc(be, (void **)&be->v_scr, sz, "scratch V", err)))
		return rc;
	be->scr_cap = n;
	return 0;
}

static const struct skipper_backend_ops cuda_ops;

static int alloc_work(struct cuda_backend *be, int n_ctx, struct skipper_error *err)
{
	size_t C = CUDA_CHUNK, H = CUDA_HEAD_CHUNK, ne = (size_t)be->n_embd, L = (size_t)be->n_layer;
	size_t kvsz = L * (size_t)n_ctx * be->kv_row * sizeof(uint16_t);
	int rc;
	struct { void **p; size_t bytes; const char *what; } d[] = {
		{ (void **)&be->norm_attn, L * ne * 4, "norms" },
		{ (void **)&be->norm_ffn, L * ne * 4, "norms" },
		{ (void **)&be->norm_out, ne * 4, "norms" },
		{ (void **)&be->freq, sizeof(double) * (size_t)(be->rope_dim / 2 + 1), "RoPE table" },
		{ (void **)&be->k_cache, kvsz, "K cache" },
		{ (void **)&be->v_cache, kvsz, "V cache" },
		{ (void **)&be->h, C * ne * 4, "activations" },
		{ (void **)&be->xn, C * be->xn_w * 4, "activations" },
		{ (void **)&be->xb, C * be->xn_w * 2, "activations" },
		{ (void **)&be->qkv, C * be->qkv_w * 4, "activations" },
		{ (void **)&be->att, C * be->q_dim * 4, "activations" },
		{ (void **)&be->gu, C * 2 * be->n_ff * 4, "activations" },
		{ (void **)&be->hx, H * ne * 4, "head" },
		{ (void **)&be->logits, H * be->n_vocab * 4, "logits" },
		{ (void **)&be->top_ids, H * CUDA_MAX_TOPK * 4, "top-k" },
		{ (void **)&be->top_probs, H * CUDA_MAX_TOPK * 4, "top-k" },
		{ (void **)&be->kvr, 2 * (size_t)be->kv_dim * 4, "kv_read" },
		{ (void **)&be->prm_d, CUDA_PARAMS_INTS(CUDA_CHUNK) * 4, "parameters" },
		{ (void **)&be->par_d, C * 4, "parents" },
		{ (void **)&be->idx_d, 2 * C * 4, "kv_move" },
	};
	for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
		if ((rc = cuda_dalloc(be, d[i].p, d[i].bytes, d[i].what, err)))
			return rc;
	be->par_cap = CUDA_CHUNK;
	be->idx_cap = CUDA_CHUNK;
	/* zeroed so that timing runs over never-written slots read finite values */
	CU_TRY(cudaMemsetAsync(be->k_cache, 0, kvsz, be->st), "clear K cache");
	CU_TRY(cudaMemsetAsync(be->v_cache, 0, kvsz, be->st), "clear V cache");
	CU_TRY(cudaHostAlloc((void **)&be->prm_h, CUDA_PARAMS_INTS(CUDA_CHUNK) * 4, cudaHostAllocDefault),
	       "pinned parameters");
	memset(be->prm_h, 0, CUDA_PARAMS_INTS(CUDA_CHUNK) * 4);
	CU_TRY(cudaHostAlloc((void **)&be->idx_h, 2 * C * 4, cudaHostAllocDefault), "pinned kv_move");
	CU_TRY(cudaHostAlloc((void **)&be->top_ids_h, H * CUDA_MAX_TOPK * 4, cudaHostAllocDefault),
	       "pinned top-k");
	CU_TRY(cudaHostAlloc((void **)&be->top_probs_h, H * CUDA_MAX_TOPK * 4, cudaHostAllocDefault),
	       "pinned top-k");
	CU_TRY(cudaHostAlloc((void **)&be->kvr_h, 2 * (size_t)be->kv_dim * 4, cudaHostAllocDefault),
	       "pinned kv_read");
	return cuda_grow_scratch(be, CUDA_CHUNK, err);
}

static int cuda_create(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
                       struct skipper_backend **out, struct skipper_error *err)
{
	struct cuda_backend *be;
	struct cudaDeviceProp prop;
	size_t total = 0;
	int rc;

	*out = NULL;
	if (!m || !o || o->n_ctx <= 0)
		return cuda_failf(err, SKIPPER_ERR_ARG, "cuda backend: n_ctx must be positive");
	if (o->kv_type != SKIPPER_KV_F16 && o->kv_type != SKIPPER_KV_Q8_0)
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED, "cuda backend: K/V cache type %d", o->kv_type);
	if (o->kv_type == SKIPPER_KV_Q8_0 && m->hp.head_dim % 32)
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
		                  "cuda backend: a q8_0 K/V cache needs a head size that is a multiple of 32 "
		                  "(this model's is %d)", m->hp.head_dim);
	if ((rc = cuda_check_model(m, err)) || (rc = cuda_probe(o->device, err)))
		return rc;
	CU_TRY(cudaSetDevice(o->device), "cudaSetDevice");
	CU_TRY(cudaGetDeviceProperties(&prop, o->device), "cudaGetDeviceProperties");
	be = calloc(1, sizeof *be);
	if (!be)
		return cuda_failf(err, SKIPPER_ERR_NOMEM, "cuda backend: out of memory");
	const struct skipper_hparams *hp = &m->hp;
	be->base.ops = &cuda_ops;
	be->base.model = m;
	be->base.n_ctx = o->n_ctx;
	be->base.kv_type = o->kv_type;
	be->base.n_seq = 1; /* no set_sequences: one request at a time */
	be->dev = o->device;
	snprintf(be->device_name, sizeof be->device_name, "%.200s (device %d, sm_%d%d)", prop.name,
	         o->device, prop.major, prop.minor);
	be->base.device = be->device_name;
	be->n_embd = hp->n_embd;
	be->n_head = hp->n_head;
	be->n_kv = hp->n_head_kv;
	be->hd = hp->head_dim;
	be->q_dim = hp->n_head * hp->head_dim;
	be->kv_dim = hp->n_head_kv * hp->head_dim;
	be->kv_q8 = o->kv_type == SKIPPER_KV_Q8_0;
	be->kv_row = be->kv_q8 ? be->kv_dim / 32 * 17 : be->kv_dim;
	be->n_ff = hp->n_ff;
	be->n_layer = hp->n_layer;
	be->n_vocab = hp->n_vocab;
	be->rope_dim = hp->rope_dim ? hp->rope_dim : hp->head_dim;
	be->pairs = hp->rope_style == SKIPPER_ROPE_PAIRS;
	be->rms_eps = hp->rms_eps;
	be->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
	be->qkv_w = be->q_dim + 2 * be->kv_dim;
	be->xn_w = be->n_embd;
	if (be->n_ff > be->xn_w)
		be->xn_w = be->n_ff;
	if (be->q_dim > be->xn_w)
		be->xn_w = be->q_dim;
	be->graphs_on = !(getenv("SKIPPER_CUDA_GRAPHS") && strcmp(getenv("SKIPPER_CUDA_GRAPHS"), "0") == 0);

	/* what it takes, for the messages; refuse early when it cannot fit */
	size_t ne = (size_t)be->n_embd, L = (size_t)be->n_layer, C = CUDA_CHUNK;
	be->need_model = cuda_weights_bytes(m);
	be->need_kv = 2 * L * ((size_t)o->n_ctx + C) * be->kv_row * sizeof(uint16_t);
	be->need_work = CUDA_STAGE_BYTES + C * (ne + (size_t)be->xn_w * 3 / 2 + 2 * (size_t)be->q_dim +
	                                   2 * (size_t)be->kv_dim + 2 * (size_t)be->n_ff) * 4 +
	                (size_t)CUDA_HEAD_CHUNK * ((size_t)be->n_vocab + ne) * 4;
	cudaError_t e = cudaMemGetInfo(&be->dev_free, &total);
	if (e != cudaSuccess) {
		cuda_destroy(&be->base);
		return cuda_fail(err, "cudaMemGetInfo", e);
	}
	if (be->need_model + be->need_kv + be->need_work > be->dev_free) {
		rc = cuda_failf(err, SKIPPER_ERR_NOMEM,
		                "cuda backend: model needs %.1f MiB + KV %.1f MiB (n_ctx %d) + work %.1f "
		                "MiB, device %s has %.1f MiB free",
		                MIB(be->need_model), MIB(be->need_kv), o->n_ctx, MIB(be->need_work),
		                be->device_name, MIB(be->dev_free));
		cuda_destroy(&be->base);
		return rc;
	}

#define CREATE_TRY(call, what)                               \
	do {                                                 \
		cudaError_t e_ = (call);                     \
		if (e_ != cudaSuccess) {                     \
			rc = cuda_fail(err, (what), e_);     \
			goto fail;                           \
		}                                            \
	} while (0)
	CREATE_TRY(cudaStreamCreateWithFlags(&be->st, cudaStreamNonBlocking), "cudaStreamCreate");
	CREATE_TRY(cudaEventCreate(&be->ev0), "cudaEventCreate");
	CREATE_TRY(cudaEventCreate(&be->ev1), "cudaEventCreate");
	cublasStatus_t bs = cublasCreate(&be->blas);
	if (bs != CUBLAS_STATUS_SUCCESS) {
		be->blas = NULL;
		rc = cublas_fail(err, "cublasCreate", bs);
		goto fail;
	}
	if ((bs = cublasSetStream(be->blas, be->st)) != CUBLAS_STATUS_SUCCESS) {
		rc = cublas_fail(err, "cublasSetStream", bs);
		goto fail;
	}
	be->graph_key_len = 2 * L + CUDA_GRAPH_FLAGS * sizeof(int32_t);
	if (!(be->L = calloc(L, sizeof *be->L)) || !(be->graph_key = calloc(1, be->graph_key_len))) {
		rc = cuda_failf(err, SKIPPER_ERR_NOMEM, "cuda backend: out of memory");
		goto fail;
	}
	for (int i = 0; i < CUDA_GRAPHS; i++)
		if (!(be->graphs[i].key = calloc(1, be->graph_key_len))) {
			rc = cuda_failf(err, SKIPPER_ERR_NOMEM, "cuda backend: out of memory");
			goto fail;
		}
	if ((rc = alloc_work(be, o->n_ctx, err)) || (rc = cuda_upload_weights(be, m, err)))
		goto fail;
	{
		size_t nf = (size_t)(be->rope_dim / 2);
		double *f = malloc(sizeof(double) * (nf + 1)); /* freed below */
		if (!f) {
			rc = cuda_failf(err, SKIPPER_ERR_NOMEM, "cuda backend: out of memory");
			goto fail;
		}
		skipper_rope_freqs(m, be->rope_dim, f);
		e = cudaMemcpy(be->freq, f, sizeof(double) * nf, cudaMemcpyHostToDevice);
		free(f);
		CREATE_TRY(e, "upload RoPE table");
	}
	CREATE_TRY(cudaStreamSynchronize(be->st), "backend setup");
#undef CREATE_TRY
	*out = &be->base;
	return 0;
fail:
	cuda_destroy(&be->base);
	return rc;
}

/* ------------------------------------------------------------ forward */

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

/* ---------------------------------------------------- a chunk of rows */

/* cuda_backend.h says what it enqueues (cuda_graphs.c captures it). */
int cuda_enqueue_chunk(struct cuda_backend *be, const struct skipper_forward *fw, const struct cuda_batch *b, int r0,
                       int nr, int m, int want_logits, struct skipper_error *err)
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
	                 cuda_subset(be, fw), err);
}

/* Copy the head results of the last pass (m rows, out indices be->hidx) to
 * the caller, after the stream was synchronised, the draft head's ids
 * mapped back to vocabulary ids; a row whose top logit was not finite fails
 * the pass. */
static int scatter_head(struct cuda_backend *be, const struct skipper_forward *fw, int m,
                        struct skipper_error *err)
{
	int subset = cuda_subset(be, fw);
	size_t nv = subset ? (size_t)be->sub.n : (size_t)be->n_vocab, k = (size_t)fw->top_k;
	for (int j = 0; j < m; j++) {
		int o = be->hidx[j];
		if (k > 0) {
			if (be->top_ids_h[(size_t)j * k] < 0)
				return cuda_nonfinite(be, err);
			int32_t *ids = fw->top_ids + (size_t)o * k;
			memcpy(ids, be->top_ids_h + (size_t)j * k, k * 4);
			for (size_t i = 0; subset && i < k; i++)
				ids[i] = be->sub_ids[ids[i]];
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

static int cuda_forward(struct skipper_backend *base, const struct skipper_forward *fw, struct skipper_error *err)
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
			cuda_graphs_clear(be); /* captured graphs read the old buffer */
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
		if (be->graphs_on && fw->n <= CUDA_GRAPH_ROWS && !want_captures(fw)) {
			if ((rc = cuda_run_graph(be, fw, &b, nr, m, err)) < 0)
				return rc;
			done = rc;
		}
		if (!done && (rc = cuda_enqueue_chunk(be, fw, &b, r0, nr, m, fw->logits != NULL, err)))
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
			                    fw->logits != NULL, cuda_subset(be, fw), err)))
				return rc;
		}
	}
	if (want_captures(fw))
		memcpy(fw->captures, be->cap_h,
		       (size_t)fw->n_cap_rows * fw->n_cap_layers * be->n_embd * sizeof(float));
	return 0;
}

/* The device (its name, number and compute capability) is what a pass's
 * cost depends on. */
static void cuda_identity(struct skipper_backend *base, char *buf, size_t n)
{
	snprintf(buf, n, "cuda|%s", ((struct cuda_backend *)base)->device_name);
}

static const struct skipper_backend_ops cuda_ops = {
	.name = "cuda",
	.forward = cuda_forward,
	.kv_move = cuda_be_kv_move,
	.kv_read = cuda_be_kv_read,
	.sublayer = cuda_be_sublayer,
	.head_argmax = cuda_be_head_argmax,
	.time_sublayer = cuda_be_time_sublayer,
	.set_head_subset = cuda_be_set_head_subset,
	.identity = cuda_identity,
	.destroy = cuda_destroy,
};

/* ------------------------------------------------------------ the entry */

static const struct skipper_backend_module module = {
	.abi = SKIPPER_BACKEND_MODULE_ABI,
	.sizeof_view = sizeof(struct skipper_model_view),
	.sizeof_forward = sizeof(struct skipper_forward),
	.sizeof_ops = sizeof(struct skipper_backend_ops),
	.version = SKIPPER_MODULE_VERSION,
	.name = "cuda",
	.probe = cuda_probe,
	.create = cuda_create,
	.d2d_bandwidth = cuda_d2d_bandwidth,
};

__attribute__((visibility("default"))) const struct skipper_backend_module *
skipper_backend_module_init(void)
{
	return &module;
}
