/* The backend ABI shared by libskipper and the CUDA backend module
 * (kernels/): the plain model description the module reads weights from,
 * the forward request, the backend vtable and the module entry point.
 * Includes nothing of ours but skipper/status.h, so the model loader
 * (core/model/, below the backends) may include it for the types it fills.
 *
 * Not installed: it is an internal, same-version ABI. libskipper refuses a
 * module built from another skipper version (struct layouts here may change
 * between any two versions), so nothing here needs to stay compatible. It is
 * plain C and usable from C++ (nvcc) translation units. */
#ifndef SKIPPER_BACKEND_ABI_H
#define SKIPPER_BACKEND_ABI_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "skipper/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tensor element types (GGML numbering, as stored in GGUF). */
enum skipper_dtype {
	SKIPPER_F32 = 0,
	SKIPPER_F16 = 1,
	SKIPPER_Q4_0 = 2,
	SKIPPER_Q4_1 = 3,
	SKIPPER_Q5_0 = 6,
	SKIPPER_Q5_1 = 7,
	SKIPPER_Q8_0 = 8,
	SKIPPER_Q4_K = 12,
	SKIPPER_Q5_K = 13,
	SKIPPER_Q6_K = 14,
	SKIPPER_BF16 = 30,
};

/* ---------------------------------------------------------------- model */

enum skipper_rope_style {
	SKIPPER_ROPE_PAIRS = 0, /* rotate (x[2i], x[2i+1]) : GGUF llama (converter permuted Q/K) */
	SKIPPER_ROPE_HALVES = 1 /* rotate (x[i], x[i+d/2]) : Hugging Face / NeoX layout */
};

enum skipper_rope_scaling {
	SKIPPER_ROPE_SCALING_NONE = 0,
	SKIPPER_ROPE_SCALING_LINEAR = 1,
	SKIPPER_ROPE_SCALING_LLAMA3 = 2 /* Llama-3.1: per-frequency smooth interpolation */
};

struct skipper_hparams {
	int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train;
	float rope_theta, rms_eps;
	int rope_style;        /* enum skipper_rope_style */
	int rope_dim;          /* rotated dims per head (== head_dim for llama) */
	int rope_scaling;      /* enum skipper_rope_scaling */
	float rope_factor;     /* linear / llama3 factor */
	float rope_low_freq_factor, rope_high_freq_factor;
	int rope_orig_ctx;     /* llama3: original_max_position_embeddings */
};

/* A weight: rows of ne0 elements; row r starts at data + r * row_bytes. */
struct skipper_weight {
	int type;              /* enum skipper_dtype */
	int64_t ne0, ne1;      /* ne0 = input dim (row length), ne1 = output dim (rows) */
	size_t row_bytes;
	const void *data;
};

struct skipper_layer {
	struct skipper_weight attn_norm;          /* [n_embd] F32 */
	struct skipper_weight wq, wk, wv, wo;     /* q: n_embd -> n_head*head_dim, k/v -> n_head_kv*head_dim */
	struct skipper_weight bq, bk, bv;         /* F32 biases added to q, k, v (qwen2); data NULL = none */
	struct skipper_weight q_norm, k_norm;     /* F32 [head_dim]: RMSNorm of each q / k head before
	                                             RoPE (qwen3); data NULL = none */
	struct skipper_weight ffn_norm;           /* [n_embd] F32 */
	struct skipper_weight w_gate, w_up;       /* n_embd -> n_ff */
	struct skipper_weight w_down;             /* n_ff -> n_embd */
};

enum skipper_arch {
	SKIPPER_ARCH_LLAMA = 0, /* Llama 2/3/3.1, SmolLM2, Mistral: GGUF rope pairs */
	SKIPPER_ARCH_QWEN2 = 1, /* Q/K/V biases, NeoX rope (halves) */
	SKIPPER_ARCH_QWEN3 = 2  /* per-head Q/K RMSNorm, NeoX rope, no biases */
};

/* What a backend reads of a model: architecture, hyper-parameters, the
 * weights and the RoPE frequency factors. The model loader fills one
 * (the view member of struct skipper_model, core/model/model.h, which keeps
 * the loader's own state beside it); a test may build one in memory. A
 * backend reads it and never frees or writes anything it points to; it
 * must outlive the backend. */
struct skipper_model_view {
	char arch[32];          /* "llama", "qwen2", "qwen3" */
	int arch_id;            /* enum skipper_arch */
	char name[128];         /* general.name or file base name */
	const char *path;       /* the model file, for messages; NULL when built in memory */
	struct skipper_hparams hp;
	struct skipper_weight tok_embd;  /* rows = n_vocab, ne0 = n_embd */
	struct skipper_weight out_norm;  /* [n_embd] */
	struct skipper_weight output;    /* LM head; == tok_embd when embeddings are tied */
	int tied_embeddings;
	struct skipper_layer *layers;    /* [n_layer] */
	uint64_t weight_bytes;           /* bytes of the file's tensors */
	/* RoPE frequency factors, [rope_dim/2], or NULL: rotate pair i with
	 * frequency rope_theta^(-2i/rope_dim) / rope_freqs[i] (llama.cpp's
	 * freq_factors). Set for Llama-3.1 files (rope_freqs.weight tensor, in the
	 * mapping) and computed at load for rope.scaling.type = "llama3", so a
	 * backend never applies the llama3 formula itself. */
	const float *rope_freqs;
	/* A backend that has copied the weight bytes [data, data + bytes) and
	 * will not read them again says so here: the loader may then drop
	 * those pages of its file mapping (they come back from the file if
	 * read). NULL: nothing to drop (a model built in memory). */
	void (*release)(const struct skipper_model_view *m, const void *data, uint64_t bytes);
};

/* Angular frequency of each rotated pair, f[rope_dim / 2]: every backend
 * computes its RoPE angles pos * f[i] from this one definition (in double;
 * cos/sin of the angle are then rounded to float). Per-pair factors from the
 * file or the loader (llama3 included) divide the base frequency; linear
 * scaling divides by the factor; llama3 without a factor table applies the
 * smooth interpolation here. */
static inline void skipper_rope_freqs(const struct skipper_model_view *m, int rope_dim, double *f)
{
	const struct skipper_hparams *hp = &m->hp;
	double factor = hp->rope_factor > 0.0f ? hp->rope_factor : 1.0;
	for (int i = 0; i < rope_dim / 2; i++) {
		double fr = pow((double)hp->rope_theta, -2.0 * i / rope_dim);
		if (m->rope_freqs)
			fr /= m->rope_freqs[i];
		if (hp->rope_scaling == SKIPPER_ROPE_SCALING_LINEAR) {
			fr /= factor;
		} else if (hp->rope_scaling == SKIPPER_ROPE_SCALING_LLAMA3 && !m->rope_freqs) {
			/* Llama-3.1: keep high frequencies, divide low ones by the
			 * factor, interpolate smoothly in between */
			double lo = hp->rope_low_freq_factor > 0 ? hp->rope_low_freq_factor : 1.0;
			double hi = hp->rope_high_freq_factor > 0 ? hp->rope_high_freq_factor : 4.0;
			double orig = hp->rope_orig_ctx > 0 ? hp->rope_orig_ctx : 8192;
			double wavelen = 2.0 * 3.14159265358979323846 / fr;
			if (wavelen > orig / lo) {
				fr /= factor;
			} else if (wavelen >= orig / hi && hi != lo) {
				double smooth = (orig / wavelen - lo) / (hi - lo);
				fr = (1.0 - smooth) * fr / factor + smooth * fr;
			}
		}
		f[i] = fr;
	}
}

/* -------------------------------------------------------------- backend */

enum skipper_sublayer { SKIPPER_ATTN = 0, SKIPPER_MLP = 1 };

#define SKIPPER_MAX_TOPK 64 /* the most top ids a forward asks for; every backend serves it */

/* One KV sequence's rows in a batch that carries several (continuous
 * batching): rows [row0, row0 + n) after the sequence's committed prefix
 * [0, n_past). */
struct skipper_fw_seg {
	int seq;                      /* 0 .. the backend's n_seq - 1, each at most once a batch */
	int row0, n;
	int n_past;
};

struct skipper_forward {
	/* --- input --- */
	int n;                        /* rows in the batch, >= 1 */
	const int32_t *tokens;        /* [n] token ids */
	const int32_t *pos;           /* [n] RoPE positions; NULL = n_past + i (of its segment) */
	const int32_t *parent;        /* [n] parent row (< i) or -1 = only the prefix;
	                                 NULL = chain (parent[i] = i - 1); with segments a
	                                 parent is a row of the same segment */
	int n_past;                   /* committed prefix visible to all rows */
	int seq;                      /* the KV sequence of every row (n_seg = 0) */
	int n_seg;                    /* > 0: the rows are seg[0 .. n_seg), in order and
	                                 covering [0, n); n_past and seq are theirs. The
	                                 core hands backends one segment for n_seg = 0
	                                 (skipper_backend_forward) */
	const struct skipper_fw_seg *seg;
	int kv_write;                 /* 1: row i's K/V go to slot n_past + i (of its
	                                 segment, for every attention sub-layer that runs);
	                                 0: kept in a per-call scratch, the cache is untouched */
	const uint8_t *skip_attn;     /* [n_layer], 1 = skip; NULL = skip none */
	const uint8_t *skip_mlp;      /* [n_layer], 1 = skip; NULL = skip none */

	/* --- head output for selected rows --- */
	int n_out;                    /* number of rows in out_rows (0 = no head) */
	const int32_t *out_rows;      /* [n_out] batch row indices */
	int top_k;                    /* 0..SKIPPER_MAX_TOPK: top ids/probs of softmax(raw logits) */
	int32_t *top_ids;             /* [n_out][top_k], descending prob, ties by lower id */
	float *top_probs;             /* [n_out][top_k], or NULL: the ids alone (no softmax
	                                 normaliser: greedy verification) */
	float *logits;                /* [n_out][n_vocab] raw logits, or NULL */
	int head_subset;              /* 1: the head covers only the ids given to set_head_subset
	                                 (top-k among them, ids as vocabulary ids; logits
	                                 [n_out][n_subset] in that order). A backend without
	                                 set_head_subset ignores it: the full head is exact too */

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

/* Where a backend's time goes (skipper generate --timing): seconds per
 * kind of work, apart for one-row passes (decode and draft steps) and
 * passes of several rows (verification and prefill). */
enum skipper_prof_kind {
	SKIPPER_PROF_QKV,       /* Q/K/V projections (CPU: with their biases) */
	SKIPPER_PROF_ATTN_OUT,  /* attention output projection (CPU: and the residual add) */
	SKIPPER_PROF_GATE_UP,   /* MLP gate and up projections (CPU: SiLU, the down projection's input quantised) */
	SKIPPER_PROF_DOWN,      /* MLP down projection (CPU: and the residual add) */
	SKIPPER_PROF_HEAD,      /* final norm and LM head */
	SKIPPER_PROF_ATTENTION, /* attention over the cache */
	SKIPPER_PROF_QUANT,     /* quantising activations for the integer kernels */
	SKIPPER_PROF_ROWWISE,   /* norms, RoPE, biases, residual adds, K/V stores, embeddings */
	SKIPPER_PROF_TOPK,      /* softmax / top-k over the vocabulary */
	SKIPPER_PROF_N
};

struct skipper_backend_timing {
	double seconds[2][SKIPPER_PROF_N]; /* [0]: one-row passes, [1]: multi-row */
	double wait[2];                    /* of those seconds, waiting for other threads */
	long long passes[2], rows[2];
};

struct skipper_backend;

/* What forward and head_argmax say, after the model's file or name, when a
 * row's top logit is NaN or infinite (they fail with SKIPPER_ERR_BACKEND
 * rather than return an id for it). */
#define SKIPPER_BACKEND_NONFINITE                                                       \
	"the model's logits are not finite (NaN or infinite): its weights or hyper-parameters " \
	"overflow (a corrupt model file?)"

/* A backend's operations. Callers go through skipper_backend_forward()
 * and its siblings (core/backend/backend.h), which check every argument a
 * caller gives (rows, positions, parents, slots, layers, head and capture
 * requests) against the model and n_ctx once for every backend, with the
 * same messages; an op may take its arguments as valid. What a backend
 * cannot do (a tree deeper than its kernels follow) is still its own to
 * refuse. */
struct skipper_backend_ops {
	const char *name;

	/* Run the batch. Batch-invariant: a row's outputs are bit-identical to
	 * computing that row alone with the same prefix, ancestors and mask. */
	int (*forward)(struct skipper_backend *be, const struct skipper_forward *fw,
	               struct skipper_error *err);

	/* Copy the K/V of slot src[i] to slot dst[i] of sequence seq in every
	 * layer, in order (used to compact an accepted tree path: dst[i] <=
	 * src[i]). */
	int (*kv_move)(struct skipper_backend *be, int seq, const int32_t *src, const int32_t *dst, int n,
	               struct skipper_error *err);

	/* Read K/V of one slot of one layer of sequence seq (tests compare
	 * caches): k and v get n_head_kv * head_dim floats each. */
	int (*kv_read)(struct skipper_backend *be, int seq, int layer, int slot, float *k, float *v,
	               struct skipper_error *err);

	/* One sub-layer (with its norm and residual add) on caller-given hidden
	 * states [n][n_embd], in place. Rows are a chain at positions pos[] and
	 * attend to sequence seq's committed prefix [0, n_past) plus earlier
	 * rows; no KV is written. */
	int (*sublayer)(struct skipper_backend *be, int seq, int kind, int layer, int n, float *states,
	                const int32_t *pos, int n_past, struct skipper_error *err);

	/* Final norm + LM head argmax on given hidden states [n][n_embd]. */
	int (*head_argmax)(struct skipper_backend *be, int n, const float *states, int32_t *ids,
	                   struct skipper_error *err);

	/* Mean wall time in seconds of one sub-layer for one token attending to
	 * ctx_len (< n_ctx) cached positions (measured; synchronised on devices). */
	int (*time_sublayer)(struct skipper_backend *be, int kind, int layer, int ctx_len,
	                     double *seconds, struct skipper_error *err);

	/* The vocabulary ids (distinct, in [0, n_vocab)) a head_subset forward
	 * computes logits for, kept until the next call; n = 0 drops the
	 * subset. NULL: not supported (forwards then ignore head_subset). */
	int (*set_head_subset)(struct skipper_backend *be, const int32_t *ids, int n,
	                       struct skipper_error *err);

	/* Room for n KV sequences of n_ctx slots each (allocated now; what the
	 * sequences held is lost); be->n_seq becomes n. NULL: one sequence
	 * only. */
	int (*set_sequences)(struct skipper_backend *be, int n, struct skipper_error *err);

	/* Start (on = 1: from zero) or stop (on = 0) timing passes by kind of work; *out, when not
	 * NULL, gets the totals so far. NULL: no timing. */
	void (*timing)(struct skipper_backend *be, int on, struct skipper_backend_timing *out);

	/* What the speed of this backend's passes depends on, as one line:
	 * the processor or device, the kernels chosen, settings. A cost curve
	 * measured under one identity is never used under another (the
	 * session's cost cache keys on it). NULL: the name and device. */
	void (*identity)(struct skipper_backend *be, char *buf, size_t n);

	void (*destroy)(struct skipper_backend *be);
};

struct skipper_backend {
	const struct skipper_backend_ops *ops;
	const struct skipper_model_view *model;
	int n_ctx;           /* KV slots of each sequence */
	int n_seq;           /* KV sequences (1 from create; set_sequences) */
	int kv_type;         /* enum skipper_kv_type of the K/V cache */
	/* what the core knows the sequences' caches hold (backend_check.c:
	 * skipper_backend_kv_note); NULL until it notes something; one
	 * malloc'ed block that the backend's destroy frees */
	void *kv_rec;
	const char *device;  /* the device in words ("NVIDIA H100 ..."), NULL on the CPU */
};

enum skipper_backend_kind {
	SKIPPER_BACKEND_AUTO = 0, /* CUDA when the module loads and finds a device, else CPU */
	SKIPPER_BACKEND_CPU = 1,
	SKIPPER_BACKEND_CUDA = 2
};

/* How the K/V cache stores keys and values ([model] kv_type). */
enum skipper_kv_type {
	SKIPPER_KV_F16 = 0,  /* IEEE half */
	SKIPPER_KV_Q8_0 = 1  /* llama.cpp's q8_0: 32 int8 values and one f16 scale per block */
};

struct skipper_backend_opts {
	int n_ctx;       /* KV slots */
	int kv_type;     /* enum skipper_kv_type */
	int n_threads;   /* CPU: 0 = number of online CPUs */
	int kind;        /* enum skipper_backend_kind */
	int device;      /* CUDA device ordinal */
};

/* ------------------------------------------------------- CUDA module ABI */

/* Bumped whenever anything above changes layout; the loader also compares
 * the skipper version string, so this is a second line of defence. */
#define SKIPPER_BACKEND_MODULE_ABI 5
#define SKIPPER_BACKEND_MODULE_ENTRY "skipper_backend_module_init"

struct skipper_backend_module {
	uint32_t abi;             /* SKIPPER_BACKEND_MODULE_ABI */
	uint32_t sizeof_view;     /* sizeof(struct skipper_model_view) the module was built with */
	uint32_t sizeof_forward;  /* sizeof(struct skipper_forward) */
	uint32_t sizeof_ops;      /* sizeof(struct skipper_backend_ops) */
	const char *version;      /* skipper PACKAGE_VERSION the module was built from */
	const char *name;         /* "cuda" */

	/* Can device `device` be used? 0, or SKIPPER_ERR_UNSUPPORTED with the
	 * reason (no device, driver older than the runtime, ...) in err. */
	int (*probe)(int device, struct skipper_error *err);

	/* Create the backend on device o->device. *out owned by the caller:
	 * out->ops->destroy(out). */
	int (*create)(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
	              struct skipper_backend **out, struct skipper_error *err);

	/* Measured device-to-device copy bandwidth of device `device` in bytes
	 * per second (copy of `bytes` bytes, counted as read + write), for
	 * roofline figures in benchmarks. */
	int (*d2d_bandwidth)(int device, size_t bytes, double *bytes_per_s,
	                     struct skipper_error *err);
};

typedef const struct skipper_backend_module *(*skipper_backend_module_init_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
