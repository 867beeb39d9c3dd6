/* The CUDA backend module: its entry point (the only exported symbol), the
 * device probe, creation with the weight upload, and destruction.
 *
 * Weights become BF16 matrices on the device (F32/F16/BF16 converted,
 * Q8_0/Q4_0/Q4_1 dequantised by a kernel from the raw blocks); norm weights
 * F32; the K/V cache F16 like the CPU backend's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

#ifndef SKIPPER_MODULE_VERSION
#error "SKIPPER_MODULE_VERSION must be defined by the build"
#endif

#define MIB(x) ((double)(x) / (1024.0 * 1024.0))
#define STAGE_BYTES ((size_t)64 << 20) /* upload staging on the device */

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

/* ------------------------------------------------------------ the model */

static int weight_ok(const struct skipper_weight *w, int64_t ne0, int64_t ne1, int f32_only)
{
	if (!w->data || w->ne0 != ne0 || w->ne1 != ne1)
		return 0;
	switch (w->type) {
	case SKIPPER_F32: case SKIPPER_F16: case SKIPPER_BF16:
		return w->row_bytes >= (size_t)ne0 * (w->type == SKIPPER_F32 ? 4 : 2);
	case SKIPPER_Q8_0: case SKIPPER_Q4_0: case SKIPPER_Q4_1:
		return !f32_only && ne0 % 32 == 0;
	}
	return 0;
}

static int check_model(const struct skipper_model_view *m, struct skipper_error *err)
{
	const struct skipper_hparams *hp = &m->hp;
	int64_t ne = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim,
		kvd = (int64_t)hp->n_head_kv * hp->head_dim;

	if (m->arch_id != SKIPPER_ARCH_LLAMA)
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
		                  "cuda backend: architecture %s is not supported yet (llama is); use "
		                  "[model] backend = cpu",
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
	}
	if (!ok)
		return cuda_failf(err, SKIPPER_ERR_UNSUPPORTED,
		                  "cuda backend: a weight is missing, of an unexpected shape or of an "
		                  "unsupported type (norms must be F32/F16/BF16)");
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

/* Upload one weight as BF16 rows at dst (device) through the staging
 * buffer: raw rows go up as they are, a kernel converts them. */
static int upload_rows(struct cuda_backend *be, const struct skipper_weight *w, void *stage,
                       uint16_t *dst, const char *what, struct skipper_error *err)
{
	int64_t per = (int64_t)(STAGE_BYTES / w->row_bytes);
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

static int upload_model(struct cuda_backend *be, const struct skipper_model_view *m,
                        struct skipper_error *err)
{
	void *stage = NULL;
	size_t ne = (size_t)be->n_embd;
	int rc;
	char what[64];

	if ((rc = cuda_dalloc(be, &stage, STAGE_BYTES, "upload staging", err)))
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
	}
	/* the staging buffer is only freed once the conversions are done */
	cudaError_t e = cudaStreamSynchronize(be->st);
	cudaFree(stage);
	if (!rc && e != cudaSuccess)
		rc = cuda_fail(err, "weight upload", e);
	return rc;
}

/* ------------------------------------------------------------- lifetime */

void cuda_graphs_clear(struct cuda_backend *be)
{
	for (int i = 0; i < CUDA_GRAPHS; i++)
		if (be->graphs[i].exec) {
			cudaGraphExecDestroy(be->graphs[i].exec);
			be->graphs[i].exec = NULL;
		}
}

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
	cudaFree(be->tok.p);
	void *dev[] = { be->norm_attn, be->norm_ffn, be->norm_out, be->freq, be->k_cache, be->v_cache,
	                be->k_scr, be->v_scr, be->h, be->xn, be->xb, be->qkv, be->att, be->gu, be->hx,
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
	free(be);
}

int cuda_grow_scratch(struct cuda_backend *be, int n, struct skipper_error *err)
{
	if (n <= be->scr_cap)
		return 0;
	size_t sz = (size_t)be->n_layer * (size_t)n * be->kv_dim * sizeof(uint16_t);
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

static const struct skipper_backend_ops cuda_ops = {
	.name = "cuda",
	.forward = cuda_be_forward,
	.kv_move = cuda_be_kv_move,
	.kv_read = cuda_be_kv_read,
	.sublayer = cuda_be_sublayer,
	.head_argmax = cuda_be_head_argmax,
	.time_sublayer = cuda_be_time_sublayer,
	.destroy = cuda_destroy,
};

static int alloc_work(struct cuda_backend *be, int n_ctx, struct skipper_error *err)
{
	size_t C = CUDA_CHUNK, H = CUDA_HEAD_CHUNK, ne = (size_t)be->n_embd, L = (size_t)be->n_layer;
	size_t kvsz = L * (size_t)n_ctx * be->kv_dim * sizeof(uint16_t);
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
	if ((rc = check_model(m, err)) || (rc = cuda_probe(o->device, err)))
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
	be->need_model = wbytes(&m->tok_embd) + (tied(m) ? 0 : wbytes(&m->output)) + (2 * L + 1) * ne * 4;
	for (int l = 0; l < be->n_layer; l++) {
		const struct skipper_layer *Ly = &m->layers[l];
		be->need_model += wbytes(&Ly->wq) + wbytes(&Ly->wk) + wbytes(&Ly->wv) + wbytes(&Ly->wo) +
		                  wbytes(&Ly->w_gate) + wbytes(&Ly->w_up) + wbytes(&Ly->w_down);
	}
	be->need_kv = 2 * L * ((size_t)o->n_ctx + C) * be->kv_dim * sizeof(uint16_t);
	be->need_work = STAGE_BYTES + C * (ne + (size_t)be->xn_w * 3 / 2 + 2 * (size_t)be->q_dim +
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
	be->graph_key_len = 2 * L + 4 * sizeof(int32_t);
	if (!(be->L = calloc(L, sizeof *be->L)) || !(be->graph_key = calloc(1, be->graph_key_len))) {
		rc = cuda_failf(err, SKIPPER_ERR_NOMEM, "cuda backend: out of memory");
		goto fail;
	}
	for (int i = 0; i < CUDA_GRAPHS; i++)
		if (!(be->graphs[i].key = calloc(1, be->graph_key_len))) {
			rc = cuda_failf(err, SKIPPER_ERR_NOMEM, "cuda backend: out of memory");
			goto fail;
		}
	if ((rc = alloc_work(be, o->n_ctx, err)) || (rc = upload_model(be, m, err)))
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
