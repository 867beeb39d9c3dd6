/* kernels/ -- the CUDA backend module (skipper-backend-cuda.so; kernels/README
 * maps its files onto the CPU backend's). This header is its internal
 * state, shared by its host-side files: cuda_backend.c (entry point, probe,
 * creation, the vtable and the forward loop), cuda_services.c (the other
 * operations), cuda_weights.c (the model checked, weights uploaded),
 * cuda_layer.c (attention and MLP blocks, projections), cuda_head.c (LM
 * head), cuda_graphs.c (CUDA graphs of the one-token step). The kernels
 * (cuda_kernels_*.cu) are behind cuda_kernels.h. May include:
 * core/backend/backend_abi.h, skipper/status.h, the CUDA runtime and
 * cuBLAS; nothing else of libskipper's (the module links none of it).
 *
 * Everything lives on one device and one stream. Every buffer is allocated
 * at create for a chunk of CUDA_CHUNK rows; a forward call allocates nothing
 * on the device except when a read-only batch outgrows the scratch K/V or a
 * capture request outgrows the pinned capture buffer (grown once, kept). */
#ifndef SKIPPER_CUDA_BACKEND_H
#define SKIPPER_CUDA_BACKEND_H

#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "cuda_kernels.h"
#include "backend/backend_abi.h"

/* the top-k buffers hold what the core lets a forward ask for */
_Static_assert(CUDA_MAX_TOPK >= SKIPPER_MAX_TOPK, "CUDA_MAX_TOPK below SKIPPER_MAX_TOPK");

#define CUDA_CHUNK 256     /* rows per pass through the layers */
#define CUDA_STAGE_BYTES ((size_t)64 << 20) /* weight upload staging on the device */
#define CUDA_HEAD_CHUNK 64 /* rows per LM-head pass (always the skinny GEMM) */
#define CUDA_GRAPHS 16     /* cached graphs (one per skip mask, row count, head request) */
#define CUDA_GRAPH_ROWS 32 /* calls of up to this many rows run as graphs: decode, drafts, verify */
#define CUDA_GRAPH_FLAGS 7 /* int32 flags after the masks in a graph's key (cuda_graphs.c) */

/* A BF16 matrix on the device: n rows of k. */
struct cuda_w {
	uint16_t *p;
	int k, n;
};

/* Q, K and V stacked into one matrix ([q_dim + 2 kv_dim][n_embd]), gate
 * and up likewise ([2 n_ff][n_embd]): one projection launch each, with
 * blocks enough to fill the device even for the small K and V. */
struct cuda_layer {
	struct cuda_w qkv, wo, gateup, down;
};

struct cuda_graph {
	cudaGraphExec_t exec; /* NULL = free entry */
	uint8_t *key;         /* [graph_key_len]: skip masks + head flags */
	uint64_t used;        /* tick of the last replay, for eviction */
};

struct cuda_backend {
	struct skipper_backend base;
	char device_name[256];
	int dev;
	cudaStream_t st;
	cublasHandle_t blas;
	cudaEvent_t ev0, ev1;

	int n_embd, n_head, n_kv, hd, q_dim, kv_dim, n_ff, n_layer, n_vocab, rope_dim, pairs;
	float rms_eps, attn_scale;
	size_t need_model, need_kv, need_work; /* bytes, for out-of-memory messages */
	size_t dev_free;

	/* weights (device, owned; out.p == tok.p when embeddings are tied) */
	struct cuda_layer *L; /* host array [n_layer] */
	struct cuda_w tok, out;
	/* the draft head: rows sub_ids[0..sub.n) of out (sub.p NULL: none) */
	struct cuda_w sub;
	int32_t *sub_ids; /* host */
	float *norm_attn, *norm_ffn, *norm_out; /* [n_layer][n_embd], [n_embd] */
	float *bias;    /* [n_layer][qkv_w] Q/K/V biases stacked as the qkv rows, or NULL */
	float *qk_norm; /* [n_layer][2][hd] per-head Q then K norm weights, or NULL */
	double *freq;                           /* [rope_dim / 2] */

	/* K/V cache: [n_layer][n_ctx][kv_row] 16-bit units, a row being kv_dim
	 * F16 values or (kv_q8) kv_dim / 32 Q8_0 blocks of 17 units; read-only
	 * batches use the scratch [n_layer][scr_cap][kv_row] */
	uint16_t *k_cache, *v_cache, *k_scr, *v_scr;
	int scr_cap, kv_q8, kv_row;

	/* one chunk of rows (device) */
	float *h;          /* [CHUNK][n_embd] residual stream */
	float *xn;         /* [CHUNK][xn_w] normed input / MLP activation */
	uint16_t *xb;      /* [CHUNK][xn_w] BF16 copy of an input for cuBLAS */
	float *qkv;        /* [CHUNK][qkv_w]: q | k | v of each row */
	float *att;        /* [CHUNK][q_dim] */
	float *gu;         /* [CHUNK][2 n_ff]: gate | up of each row */
	float *hx;         /* [HEAD_CHUNK][n_embd] normed head input */
	float *logits;     /* [HEAD_CHUNK][n_vocab] */
	int32_t *top_ids;  /* [HEAD_CHUNK][CUDA_MAX_TOPK] */
	float *top_probs;  /* [HEAD_CHUNK][CUDA_MAX_TOPK] */
	float *kvr;        /* [2][kv_dim] kv_read staging */
	int xn_w, qkv_w;

	/* parameters the kernels read (see cuda_kernels.h): device + pinned mirror */
	int32_t *prm_d, *prm_h;
	int32_t *par_d;    /* [par_cap] parents of the call (device) */
	int par_cap;
	int32_t *idx_d, *idx_h; /* [2][idx_cap] kv_move slots */
	int idx_cap;
	int32_t hidx[CUDA_HEAD_CHUNK]; /* out index of each gathered head row */

	/* pinned host staging */
	int32_t *top_ids_h;
	float *top_probs_h;
	float *logits_h;   /* [HEAD_CHUNK][n_vocab], allocated on first use */
	float *kvr_h;      /* [2][kv_dim] */
	float *cap_h;      /* captures, grown on demand */
	size_t cap_h_size;

	/* one-token CUDA graphs */
	int graphs_on;
	size_t graph_key_len;
	uint8_t *graph_key; /* [graph_key_len] scratch for the current key */
	struct cuda_graph graphs[CUDA_GRAPHS];
	uint64_t tick;
};

/* Where the K/V of a call live and which sub-layers run. */
struct cuda_batch {
	int kv_write;
	const int32_t *parent_d; /* device, NULL = chain */
	const uint8_t *skip_attn, *skip_mlp;
};

/* Fill err with "cuda: what: <error string>" and return SKIPPER_ERR_BACKEND. */
int cuda_fail(struct skipper_error *err, const char *what, cudaError_t e);
int cuda_failf(struct skipper_error *err, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int cublas_fail(struct skipper_error *err, const char *what, cublasStatus_t s);
/* A pass whose top logit was not finite (cuda_topk's -1): the model
 * overflows; SKIPPER_ERR_BACKEND naming it. */
int cuda_nonfinite(const struct cuda_backend *be, struct skipper_error *err);

#define CU_TRY(call, what)                                  \
	do {                                                \
		cudaError_t e_ = (call);                    \
		if (e_ != cudaSuccess)                      \
			return cuda_fail(err, (what), e_);  \
	} while (0)

/* Does fw's head run over the draft subset? */
static inline int cuda_subset(const struct cuda_backend *be, const struct skipper_forward *fw)
{
	return fw->head_subset && be->sub.p;
}

/* Make the read-only scratch hold n rows (grows once, drops cached graphs). */
int cuda_grow_scratch(struct cuda_backend *be, int n, struct skipper_error *err);

/* Device-side buffers with errors that say how much memory the model needs. */
int cuda_dalloc(struct cuda_backend *be, void **p, size_t bytes, const char *what,
                struct skipper_error *err);

/* cuda_backend.c: enqueue everything for rows [r0, r0 + nr) of the call
 * after the params block (already filled on the host) is copied up:
 * embeddings, layers with captures, and the first head pass of m rows.
 * Graph-capturable when no captures are asked for and nr <= CUDA_SKINNY_MAX
 * (cuBLAS is never in a graph). */
int cuda_enqueue_chunk(struct cuda_backend *be, const struct skipper_forward *fw, const struct cuda_batch *b, int r0,
                       int nr, int m, int want_logits, struct skipper_error *err);

/* cuda_weights.c: can the kernels run m (architecture, dimensions, every
 * weight's shape and type)? SKIPPER_ERR_UNSUPPORTED saying what they cannot. */
int cuda_check_model(const struct skipper_model_view *m, struct skipper_error *err);
/* Device bytes the weights take (BF16 matrices, F32 norms). */
size_t cuda_weights_bytes(const struct skipper_model_view *m);
/* Upload every weight (be->L, be->tok, be->out, the norms); synchronises. */
int cuda_upload_weights(struct cuda_backend *be, const struct skipper_model_view *m, struct skipper_error *err);

/* cuda_layer.c: Y[nr][w->n] (+)= X[nr][w->k] . W^T (rows ldx, ldy apart). */
int cuda_matmul(struct cuda_backend *be, const struct cuda_w *w, const float *X, int ldx, int nr,
                float *Y, int ldy, int accumulate, struct skipper_error *err);
/* Enqueue one sub-layer on rows [r0, r0 + nr) of the call held in be->h
 * (params already uploaded). */
int cuda_attn_block(struct cuda_backend *be, const struct cuda_batch *b, int layer, int r0, int nr,
                    struct skipper_error *err);
int cuda_mlp_block(struct cuda_backend *be, int layer, int nr, struct skipper_error *err);

/* cuda_head.c: enqueue final norm + LM head + top-k (k = 0: none; probs
 * NULL: argmax) for m (<= CUDA_HEAD_CHUNK) rows of be->h chosen by rows_d
 * (device, NULL = rows 0..m-1), over the whole vocabulary or (subset) the
 * draft head's rows, whose top-k ids are then subset indices; results are
 * copied to the pinned buffers (and logits to logits_h when want_logits). */
int cuda_head(struct cuda_backend *be, const int32_t *rows_d, int m, int k, int want_probs,
              int want_logits, int subset, struct skipper_error *err);

/* cuda_graphs.c: replay (capturing first if needed) the whole call fw of
 * nr (<= CUDA_GRAPH_ROWS) rows with m head rows. 1 when the graph ran, 0
 * when graphs gave up (the caller runs the call directly; any failure to
 * capture switches graphs off for this backend rather than failing the
 * call), or a negative status. */
int cuda_run_graph(struct cuda_backend *be, const struct skipper_forward *fw, const struct cuda_batch *b, int nr,
                   int m, struct skipper_error *err);
void cuda_graphs_clear(struct cuda_backend *be);

/* cuda_services.c: the operations besides forward (struct skipper_backend_ops). */
int cuda_be_kv_move(struct skipper_backend *base, int seq, const int32_t *src, const int32_t *dst, int n,
                    struct skipper_error *err);
int cuda_be_kv_read(struct skipper_backend *base, int seq, int layer, int slot, float *k, float *v,
                    struct skipper_error *err);
int cuda_be_sublayer(struct skipper_backend *base, int seq, int kind, int layer, int n, float *states,
                     const int32_t *pos, int n_past, struct skipper_error *err);
int cuda_be_head_argmax(struct skipper_backend *base, int n, const float *states, int32_t *ids,
                        struct skipper_error *err);
int cuda_be_time_sublayer(struct skipper_backend *base, int kind, int layer, int ctx_len,
                          double *seconds, struct skipper_error *err);
int cuda_be_set_head_subset(struct skipper_backend *base, const int32_t *ids, int n,
                            struct skipper_error *err);
int cuda_d2d_bandwidth(int device, size_t bytes, double *bytes_per_s, struct skipper_error *err);

#endif
