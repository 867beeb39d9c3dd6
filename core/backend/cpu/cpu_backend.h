/* core/backend/cpu/ -- the CPU backend: creation, the vtable and the
 * forward loop (backend_cpu.c), the other operations (cpu_services.c), the
 * model's weights checked and laid out for the kernels (cpu_weights.c),
 * attention and MLP blocks (cpu_layer.c), the LM head (cpu_head.c), SIMD
 * kernels per instruction set chosen at run time (cpu_kernels_*.c, with
 * the packed layouts of cpu_pack.c), and the thread pool. The CUDA
 * backend (kernels/) has the same files by the same names. May include:
 * core/backend/, core/model/ (tensor types), error.h. Called through the
 * vtable only.
 *
 * This header is the backend's internal state, shared by its files.
 *
 * Rows are processed in chunks of at most CPU_CHUNK: every per-row buffer
 * below holds one chunk, sized at create, so a forward call allocates
 * nothing (except when a read-only batch outgrows the scratch K/V, which
 * grows once and is kept). */
#ifndef SKIPPER_CPU_BACKEND_H
#define SKIPPER_CPU_BACKEND_H

#include <stdint.h>

#include "backend/backend.h"
#include "cpu_kernels.h"
#include "threadpool.h"

#define CPU_CHUNK 64      /* rows per pass through the layers */
#define CPU_HEAD_CHUNK 16 /* rows per LM-head pass (logits buffer = 16 x n_vocab) */

/* A weight as the kernels take it: the rows as GGUF has them, or the
 * table's packed layout (cpu_kernels.pack). */
struct cpu_weight {
	const char *data;
	size_t row_bytes; /* packed: a group's bytes / CPU_PACK_ROWS */
	int64_t k;        /* row length */
	int nc, kind;     /* rows, enum cpu_wkind */
	cpu_matmul_fn fn;
	void *own;        /* what the backend allocated for it (freed with it), or NULL */
};

struct cpu_layer_weights {
	struct cpu_weight wq, wk, wv, wo, gate, up, down;
};

struct cpu_backend {
	struct skipper_backend base;
	const struct cpu_kernels *K;
	struct skipper_threadpool *tp;
	int n_threads;
	int nonfinite;                /* a row's top logit this pass was NaN or infinite (cpu_forward fails) */
	int huge_pages;               /* weight copies on transparent huge pages (cpu_weight_alloc) */
	void *weights;                /* the model's weight copies, in the order a step reads them, or NULL */

	int n_embd, n_head, n_kv, hd, q_dim, kv_dim, n_ff, n_layer, n_vocab, rope_dim;
	float rms_eps, attn_scale;
	double *rope_freq;            /* [rope_dim / 2] angular frequency per pair */

	float *norm_attn, *norm_ffn;  /* [n_layer][n_embd], converted to f32 */
	float *norm_out;              /* [n_embd] */

	/* K/V cache: [n_seq][n_layer][n_kv][n_ctx] rows of kv_rb bytes
	 * (cpu_kv_seq, cpu_kv_at), each a head's hd elements in the layout
	 * kv_type names (enum cpu_kv_type, cpu_kv.c): one attention task reads
	 * one head's keys, and they are one run of memory (two threads reading
	 * halves of [n_kv * hd] rows ran at half the speed) */
	uint8_t *k_cache, *v_cache;
	int kv_type;
	size_t kv_rb;                 /* bytes of one head's row */
	size_t kv_seq;                /* bytes of one sequence's cache (each of K and V) */
	/* read-only batches: [n_layer][n_kv][scr_cap] rows */
	uint8_t *k_scr, *v_scr;
	int scr_cap;

	/* one chunk of rows */
	float *h;       /* [CHUNK][n_embd] residual stream */
	float *xn;      /* [CHUNK][max(n_embd, n_ff)] normed input / MLP activation */
	struct cpu_q8 *xq; /* [CHUNK][xn_w / 32] */
	struct cpu_q8k *xqk; /* [CHUNK][xn_w / 256] (xn_w rounded up to 256) */
	/* the MLP down projection's input, quantised by the gate/up tasks while
	 * others still read xq / xqk: same shapes */
	struct cpu_q8 *xq_ff;
	struct cpu_q8k *xqk_ff;
	float *q, *k, *v;  /* [CHUNK][q_dim], [CHUNK][kv_dim] x2 */
	float *att;     /* [CHUNK][q_dim] */
	float *proj;    /* [CHUNK][n_embd] output of wo / w_down */
	float *gate, *up; /* [CHUNK][n_ff] */
	float *rope_cs; /* [CHUNK][rope_dim] (cos, sin) per pair */
	float *logits;  /* [HEAD_CHUNK][n_vocab] */
	int xn_w;       /* row width of xn (floats) */

	struct cpu_layer_weights *lw; /* [n_layer] */
	struct cpu_weight head;
	/* the draft head (set_head_subset): those rows of the LM head, gathered */
	struct cpu_weight sub_head;
	int32_t *sub_ids;

	/* profile (--profile): the running category and when it started */
	int prof_on, prof_cat, prof_multi;
	double prof_t;
	struct skipper_backend_timing prof;

	/* per thread, for the batch rows of one attention task (at most
	 * att_rows): the query heads of one K/V head ([rows][group][hd],
	 * rounded as the cache's layout meets them), their outputs (same
	 * shape), their scores (att_floats: [rows][group][the pass's keys]),
	 * and one ancestor list (n_ctx) */
	int att_rows;
	size_t att_floats;
	float *att_q, *att_o, *scores;
	int32_t *anc;
};

/* One pass: its rows by KV sequence (segments in order, covering [0, n);
 * a row's K/V go to its sequence's slot n_past + its index in the segment,
 * or with kv_write = 0 to the read-only scratch at its batch row). */
struct cpu_batch {
	int n;                 /* rows in the whole call */
	const int32_t *parent; /* NULL = each segment a chain; else parents within the segment */
	int kv_write;
	int n_seg;
	const struct skipper_fw_seg *seg;
};

/* Profiling: charge the time since the last switch to the running kind
 * and start timing `kind` (enum skipper_prof_kind). Free when off. */
void cpu_prof_switch(struct cpu_backend *be, int kind);
double cpu_now(void);

/* backend_cpu.c: the read-only scratch K/V holds n rows (grows once); the
 * error for a row whose top logit is not finite. */
int cpu_grow_scratch(struct cpu_backend *be, int n, struct skipper_error *err);
/* SKIPPER_ERR_NOMEM, with the figures and what to change, when n_seq
 * sequences' K/V caches (and the weights' copies, when weights) do not
 * fit in the memory available: checked before allocating them. */
int cpu_check_memory(const struct skipper_backend *base, int n_seq, int weights, struct skipper_error *err);
int cpu_nonfinite(const struct skipper_model_view *m, struct skipper_error *err);

/* cpu_services.c: the operations besides forward (struct skipper_backend_ops). */
int cpu_kv_move(struct skipper_backend *base, int seq, const int32_t *src, const int32_t *dst, int n,
                struct skipper_error *err);
int cpu_kv_read(struct skipper_backend *base, int seq, int layer, int slot, float *k, float *v,
                struct skipper_error *err);
int cpu_sublayer(struct skipper_backend *base, int seq, int kind, int layer, int n, float *states,
                 const int32_t *pos, int n_past, struct skipper_error *err);
int cpu_set_sequences(struct skipper_backend *base, int n, struct skipper_error *err);
int cpu_head_argmax(struct skipper_backend *base, int n, const float *states, int32_t *ids,
                    struct skipper_error *err);
int cpu_time_sublayer(struct skipper_backend *base, int kind, int layer, int ctx_len,
                      double *seconds, struct skipper_error *err);
int cpu_set_head_subset(struct skipper_backend *base, const int32_t *ids, int n,
                        struct skipper_error *err);
void cpu_timing(struct skipper_backend *base, int on, struct skipper_backend_timing *out);
void cpu_identity(struct skipper_backend *base, char *buf, size_t n);

/* The first byte of sequence seq's cache (add cpu_kv_at). */
static inline size_t cpu_kv_seq(const struct cpu_backend *be, int seq) { return (size_t)seq * be->kv_seq; }

/* Byte offset of head g's row at slot in a K/V buffer of cap slots per
 * head and layer (a sequence's cache: n_ctx; the scratch: scr_cap). */
static inline size_t cpu_kv_at(const struct cpu_backend *be, int layer, int g, int slot, int cap)
{
	return (((size_t)layer * be->n_kv + (size_t)g) * (size_t)cap + (size_t)slot) * be->kv_rb;
}

/* cpu_kv.c: head rows of the K/V cache in its layout. Store hd floats as
 * one row; read one row back as floats; round a query's hd floats the way
 * the attention kernels meet them (f16: to halves; q8_0: to q8_0 blocks
 * and back, as llama.cpp quantises queries against a q8_0 cache). */
void cpu_kv_store(const struct cpu_backend *be, const float *x, uint8_t *row);
void cpu_kv_load(const struct cpu_backend *be, const uint8_t *row, float *x);
void cpu_kv_round_query(const struct cpu_backend *be, float *q, int n);

static inline void cpu_prof(struct cpu_backend *be, int kind)
{
	if (be->prof_on)
		cpu_prof_switch(be, kind);
}

/* Layer pieces on rows [r0, r0 + nr) of a batch; the chunk buffers hold
 * those rows (h, rope_cs filled). */
void cpu_attn_block(struct cpu_backend *be, const struct cpu_batch *b, int layer, int r0, int nr);
void cpu_mlp_block(struct cpu_backend *be, int layer, int nr);

/* out = rmsnorm(x) * w for nr rows of width be->n_embd (x rows xs floats apart). */
void cpu_rmsnorm_rows(const struct cpu_backend *be, const float *x, size_t xs, const float *w,
                      float *out, size_t os, int nr);
/* The same for rows of width d with epsilon eps (in place is fine). */
void cpu_rmsnorm(const float *x, size_t xs, const float *w, float *out, size_t os, int nr, int d, float eps);

/* cpu_weights.c: can the kernels run m (dimensions, every weight's shape
 * and type)? SKIPPER_ERR_UNSUPPORTED / _FORMAT naming what they cannot. */
int cpu_check_model(const struct skipper_model_view *m, struct skipper_error *err);
/* The norms in f32 and every matrix as the kernels run it (be->lw,
 * be->head; be->weights); -1 when out of memory. */
int cpu_load_weights(struct cpu_backend *be);

/* Bytes of the copy cpu_weight_init makes of src (a multiple of 64): its
 * packed layout where the table has one, else with huge pages the file's
 * layout as it is; 0 when the kernels read src where it lies. */
size_t cpu_weight_size(const struct cpu_backend *be, const struct skipper_weight *src);

/* Room for weight copies of sz bytes (huge: on transparent huge pages where
 * it is 2 MiB or more); the caller owns it (free()). NULL when out of memory. */
void *cpu_weight_alloc(size_t sz, int huge);

/* *out = src as this backend's kernels run it. Where cpu_weight_size is
 * not 0, a copy: into dst (that many bytes, which the caller owns) or, dst
 * NULL, into a buffer of its own (out->own, freed by cpu_weight_free).
 * Else src's rows in place (out->own = own_src, which the caller hands
 * over: NULL when src belongs to the model). */
void cpu_weight_init(const struct cpu_backend *be, const struct skipper_weight *src, void *own_src, void *dst,
                     struct cpu_weight *out);
void cpu_weight_free(struct cpu_weight *w);

/* y[nr][nc] (rows ys apart) = W . x for all rows; x already in the layout the
 * weight kind needs (quantized when the weight is). Threaded over columns. */
void cpu_matmul(struct cpu_backend *be, const struct cpu_weight *w, const void *x,
                size_t x_stride, int nr, float *y, size_t ys);

/* Prepare activations for a weight: quantize rows of x into be->xq or
 * be->xqk when w is quantized (cpu_wact); returns the pointer and row
 * stride to pass to cpu_matmul. */
const void *cpu_prepare_act(struct cpu_backend *be, const struct cpu_weight *w,
                            const float *x, size_t xs, int nr, int64_t k, size_t *stride);

/* Fill rope_cs for nr rows at positions pos[]. */
void cpu_rope_table(const struct cpu_backend *be, const int32_t *pos, int nr, float *cs);

/* Top-k of softmax(logits[n_vocab]), descending, ties by lower id; with
 * probs, the logits are overwritten (with exp(logit - max)); probs NULL:
 * the ids alone, logits untouched. */
void cpu_topk(const struct cpu_kernels *K, float *logits, int n_vocab, int k, int32_t *ids, float *probs);
/* The first id of the largest logit (a NaN never wins, but at id 0). */
int32_t cpu_argmax(const float *logits, int n_vocab);
/* The largest of x[0..n) (-inf when n = 0; NaNs are passed over). */
float cpu_max(const float *x, int n);

/* Final norm + LM head (or the draft head, subset = 1) on nr (<=
 * CPU_HEAD_CHUNK) rows of hidden states: be->logits gets nr rows of n_vocab
 * (or of sub_head.ne1) floats, n_vocab apart. */
void cpu_head_logits(struct cpu_backend *be, const float *states, size_t ss, int nr, int subset);

#endif
