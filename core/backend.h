/* The compute backend interface (DESIGN §3). One vtable, two implementations:
 * the CPU backend in core/, the CUDA backend in kernels/ (a dlopen'ed module).
 *
 * KV cache model: the backend owns n_ctx slots per layer. The engine tracks the
 * committed length; the backend never advances it by itself. A forward call
 * names the committed prefix [0, n_past) that every row attends to; row i of
 * the batch additionally attends to its ancestors inside the batch (parent
 * chain) and to itself. */
#ifndef SKIPPER_BACKEND_H
#define SKIPPER_BACKEND_H

#include <stdint.h>

#include "model.h"

enum skipper_sublayer { SKIPPER_ATTN = 0, SKIPPER_MLP = 1 };

struct skipper_forward {
	/* --- input --- */
	int n;                        /* rows in the batch, >= 1 */
	const int32_t *tokens;        /* [n] token ids */
	const int32_t *pos;           /* [n] RoPE positions; NULL = n_past + i */
	const int32_t *parent;        /* [n] parent row (< i) or -1 = only the prefix;
	                                 NULL = chain (parent[i] = i - 1) */
	int n_past;                   /* committed prefix visible to all rows */
	int kv_write;                 /* 1: row i's K/V go to slot n_past + i (for every
	                                 attention sub-layer that runs); 0: kept in a
	                                 per-call scratch, the cache is untouched */
	const uint8_t *skip_attn;     /* [n_layer], 1 = skip; NULL = skip none */
	const uint8_t *skip_mlp;      /* [n_layer], 1 = skip; NULL = skip none */

	/* --- head output for selected rows --- */
	int n_out;                    /* number of rows in out_rows (0 = no head) */
	const int32_t *out_rows;      /* [n_out] batch row indices */
	int top_k;                    /* 0..64: top ids/probs of softmax(raw logits) */
	int32_t *top_ids;             /* [n_out][top_k], descending prob, ties by lower id */
	float *top_probs;             /* [n_out][top_k] */
	float *logits;                /* [n_out][n_vocab] raw logits, or NULL */

	/* --- hidden-state captures --- */
	int n_cap_layers;             /* layers to capture; state AFTER block l (l = -1: embeddings) */
	const int32_t *cap_layers;    /* [n_cap_layers] */
	int cap_sublayers;            /* 1: cap_layers[] are sub-layer boundaries instead:
	                                 -1 = embeddings, 2l = after layer l's attention,
	                                 2l + 1 = after layer l's MLP (= after block l) */
	int n_cap_rows;
	const int32_t *cap_rows;      /* [n_cap_rows] batch row indices */
	float *captures;              /* [n_cap_rows][n_cap_layers][n_embd] */
};

struct skipper_backend;

struct skipper_backend_ops {
	const char *name;

	/* Run the batch. Batch-invariant: a row's outputs are bit-identical to
	 * computing that row alone with the same prefix, ancestors and mask. */
	int (*forward)(struct skipper_backend *be, const struct skipper_forward *fw,
	               struct skipper_error *err);

	/* Copy the K/V of slot src[i] to slot dst[i] in every layer, in order
	 * (used to compact an accepted tree path: dst[i] <= src[i]). */
	int (*kv_move)(struct skipper_backend *be, const int32_t *src, const int32_t *dst, int n,
	               struct skipper_error *err);

	/* Read K/V of one slot of one layer (tests compare caches): k and v get
	 * n_head_kv * head_dim floats each. */
	int (*kv_read)(struct skipper_backend *be, int layer, int slot, float *k, float *v,
	               struct skipper_error *err);

	/* One sub-layer (with its norm and residual add) on caller-given hidden
	 * states [n][n_embd], in place. Rows are a chain at positions pos[] and
	 * attend to the committed prefix [0, n_past) plus earlier rows; no KV is
	 * written. */
	int (*sublayer)(struct skipper_backend *be, int kind, int layer, int n, float *states,
	                const int32_t *pos, int n_past, struct skipper_error *err);

	/* Final norm + LM head argmax on given hidden states [n][n_embd]. */
	int (*head_argmax)(struct skipper_backend *be, int n, const float *states, int32_t *ids,
	                   struct skipper_error *err);

	/* Mean wall time in seconds of one sub-layer for one token attending to
	 * ctx_len cached positions (measured; synchronised on devices). */
	int (*time_sublayer)(struct skipper_backend *be, int kind, int layer, int ctx_len,
	                     double *seconds, struct skipper_error *err);

	void (*destroy)(struct skipper_backend *be);
};

struct skipper_backend {
	const struct skipper_backend_ops *ops;
	const struct skipper_model *model;
	int n_ctx;
};

enum skipper_backend_kind {
	SKIPPER_BACKEND_AUTO = 0, /* CUDA when the module loads and finds a device, else CPU */
	SKIPPER_BACKEND_CPU = 1,
	SKIPPER_BACKEND_CUDA = 2
};

struct skipper_backend_opts {
	int n_ctx;       /* KV slots */
	int n_threads;   /* CPU: 0 = number of online CPUs */
	int kind;        /* enum skipper_backend_kind */
	int device;      /* CUDA device ordinal */
};

/* Create the backend o->kind names. CUDA comes from the dlopen'ed module
 * skipper-backend-cuda.so; when it cannot be used (no module, no device,
 * driver too old) kind CUDA fails with SKIPPER_ERR_UNSUPPORTED and a message
 * saying why, and kind AUTO falls back to the CPU. *out owned by the caller:
 * out->ops->destroy(out). */
int skipper_backend_create(const struct skipper_model *m, const struct skipper_backend_opts *o,
                           struct skipper_backend **out, struct skipper_error *err);

/* CPU backend. *out owned by the caller: out->ops->destroy(out). */
int skipper_backend_cpu_create(const struct skipper_model *m, const struct skipper_backend_opts *o,
                               struct skipper_backend **out, struct skipper_error *err);

#endif
