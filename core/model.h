/* Llama-family model: hyper-parameters and weight views into a GGUF mapping.
 * Backends read weights through these views; nothing here computes. */
#ifndef SKIPPER_MODEL_H
#define SKIPPER_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "gguf.h"

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
	struct skipper_weight ffn_norm;           /* [n_embd] F32 */
	struct skipper_weight w_gate, w_up;       /* n_embd -> n_ff */
	struct skipper_weight w_down;             /* n_ff -> n_embd */
};

struct skipper_model {
	char arch[32];          /* "llama" */
	char name[128];         /* general.name or file base name */
	struct skipper_hparams hp;
	struct skipper_weight tok_embd;  /* rows = n_vocab, ne0 = n_embd */
	struct skipper_weight out_norm;  /* [n_embd] */
	struct skipper_weight output;    /* LM head; == tok_embd when embeddings are tied */
	int tied_embeddings;
	struct skipper_layer *layers;    /* [n_layer] */
	struct skipper_gguf *gguf;       /* owned; tokenizer metadata is read from it */
	uint64_t n_params;
	uint64_t weight_bytes;
	/* RoPE frequency factors, [rope_dim/2], or NULL: rotate pair i with
	 * frequency rope_theta^(-2i/rope_dim) / rope_freqs[i] (llama.cpp's
	 * freq_factors). Set for Llama-3.1 files (rope_freqs.weight tensor, in the
	 * mapping) and computed at load for rope.scaling.type = "llama3", so a
	 * backend never applies the llama3 formula itself. */
	const float *rope_freqs;
	float *rope_freqs_buf;  /* owned storage behind rope_freqs when computed; internal */
	char sha256[65];        /* cache of skipper_model_sha256(); "" until computed */
};

/* Load a model from a GGUF file. Checks architecture, every required tensor,
 * its shape and type. *out is owned by the caller: skipper_model_free(). */
int skipper_model_load(const char *path, struct skipper_model **out, struct skipper_error *err);
void skipper_model_free(struct skipper_model *m);

/* SHA-256 of the model file as 64 lowercase hex chars + NUL (computed on first
 * call and cached). Used to bind skip profiles to a model. */
int skipper_model_sha256(struct skipper_model *m, char out[65], struct skipper_error *err);

/* `skipper info`: architecture, hyper-parameters, tensor types, tokenizer, size. */
void skipper_model_print_info(const struct skipper_model *m, FILE *f);

#endif
