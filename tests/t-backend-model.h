/* Tiny Llama-family models (llama, qwen2, qwen3) built in memory for the
 * backend tests: seeded random weights in one dtype (quantised with the
 * library's quantisers), plain struct skipper_model_view, no file. */
#ifndef T_BACKEND_MODEL_H
#define T_BACKEND_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_abi.h"
#include "model/quant.h"

struct tm_rng { uint64_t s; };

static inline double tm_unif(struct tm_rng *r)
{
	r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(r->s >> 11) / 9007199254740992.0;
}

static inline float tm_normalish(struct tm_rng *r)
{
	return (float)((tm_unif(r) + tm_unif(r) + tm_unif(r) - 1.5) * 2.0);
}

static inline uint16_t tm_f16(float x)
{
	_Float16 h = (_Float16)x;
	uint16_t u;
	memcpy(&u, &h, 2);
	return u;
}

static inline uint16_t tm_bf16(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	u += 0x7FFF + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

/* Owned buffers are chained so tm_free releases them. */
struct tm_model {
	struct skipper_model_view m;
	void *bufs[256];
	int nbufs;
};

static inline void tm_weight(struct tm_model *t, struct skipper_weight *w, int type, int64_t ne0,
                             int64_t ne1, float scale, float offset, struct tm_rng *r)
{
	float *row = malloc((size_t)ne0 * sizeof *row);
	w->type = type;
	w->ne0 = ne0;
	w->ne1 = ne1;
	w->row_bytes = skipper_dtype_row_bytes(type, ne0);
	char *data = malloc(w->row_bytes * (size_t)ne1);
	for (int64_t j = 0; j < ne1; j++) {
		for (int64_t i = 0; i < ne0; i++)
			row[i] = offset + scale * tm_normalish(r);
		skipper_quantize_row(type, row, data + (size_t)j * w->row_bytes, ne0);
	}
	free(row);
	w->data = data;
	t->bufs[t->nbufs++] = data;
}

struct tm_opts {
	int type;       /* dtype of the matrices */
	int arch;       /* enum skipper_arch: qwen2 adds Q/K/V biases, qwen3 Q/K norms */
	int tied;       /* LM head = token embeddings */
	int rope_style;
	int rope_scaling;
	int n_layer;
	uint64_t seed;
	/* 0: the tiny defaults (64 wide, 96 FF, 4 heads of 16 over 2 KV heads) */
	int n_embd, n_ff, n_head, n_head_kv, head_dim;
};

static inline struct tm_model *tm_build(const struct tm_opts *o)
{
	struct tm_model *t = calloc(1, sizeof *t);
	struct skipper_model_view *m = &t->m;
	struct skipper_hparams *hp = &m->hp;
	struct tm_rng r = { o->seed * 0x9E3779B97F4A7C15ULL + 1 };

	static const char *const arch_names[] = { "llama", "qwen2", "qwen3" };
	strcpy(m->arch, arch_names[o->arch]);
	m->arch_id = o->arch;
	strcpy(m->name, "tiny");
	hp->n_vocab = 160;
	hp->n_embd = o->n_embd ? o->n_embd : 64;
	hp->n_layer = o->n_layer;
	hp->n_head = o->n_head ? o->n_head : 4;
	hp->n_head_kv = o->n_head_kv ? o->n_head_kv : 2;
	hp->head_dim = o->head_dim ? o->head_dim : 16;
	hp->n_ff = o->n_ff ? o->n_ff : 96;
	hp->n_ctx_train = 512;
	hp->rope_theta = 10000.0f;
	hp->rms_eps = 1e-5f;
	hp->rope_style = o->rope_style;
	hp->rope_dim = hp->head_dim;
	hp->rope_scaling = o->rope_scaling;
	hp->rope_factor = 8.0f;
	hp->rope_low_freq_factor = 1.0f;
	hp->rope_high_freq_factor = 4.0f;
	hp->rope_orig_ctx = 64;

	int ne = hp->n_embd, qd = hp->n_head * hp->head_dim, kvd = hp->n_head_kv * hp->head_dim;
	float ws = 1.0f / sqrtf((float)ne);
	tm_weight(t, &m->tok_embd, o->type, ne, hp->n_vocab, 1.0f, 0.0f, &r);
	tm_weight(t, &m->out_norm, SKIPPER_F32, ne, 1, 0.1f, 1.0f, &r);
	if (o->tied) {
		m->output = m->tok_embd;
		m->tied_embeddings = 1;
	} else {
		tm_weight(t, &m->output, o->type, ne, hp->n_vocab, ws * 4.0f, 0.0f, &r);
	}
	m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
	t->bufs[t->nbufs++] = m->layers;
	for (int l = 0; l < hp->n_layer; l++) {
		struct skipper_layer *L = &m->layers[l];
		tm_weight(t, &L->attn_norm, SKIPPER_F32, ne, 1, 0.1f, 1.0f, &r);
		tm_weight(t, &L->ffn_norm, SKIPPER_F32, ne, 1, 0.1f, 1.0f, &r);
		/* large q/k so attention is far from uniform */
		tm_weight(t, &L->wq, o->type, ne, qd, ws * 3.0f, 0.0f, &r);
		tm_weight(t, &L->wk, o->type, ne, kvd, ws * 3.0f, 0.0f, &r);
		tm_weight(t, &L->wv, o->type, ne, kvd, ws, 0.0f, &r);
		tm_weight(t, &L->wo, o->type, qd, ne, ws, 0.0f, &r);
		tm_weight(t, &L->w_gate, o->type, ne, hp->n_ff, ws, 0.0f, &r);
		tm_weight(t, &L->w_up, o->type, ne, hp->n_ff, ws, 0.0f, &r);
		tm_weight(t, &L->w_down, o->type, hp->n_ff, ne, 1.0f / sqrtf((float)hp->n_ff), 0.0f, &r);
		if (o->arch == SKIPPER_ARCH_QWEN2) {
			tm_weight(t, &L->bq, SKIPPER_F32, qd, 1, 0.5f, 0.0f, &r);
			tm_weight(t, &L->bk, SKIPPER_F32, kvd, 1, 0.5f, 0.0f, &r);
			tm_weight(t, &L->bv, SKIPPER_F32, kvd, 1, 0.5f, 0.0f, &r);
		} else if (o->arch == SKIPPER_ARCH_QWEN3) {
			tm_weight(t, &L->q_norm, SKIPPER_F32, hp->head_dim, 1, 0.2f, 1.0f, &r);
			tm_weight(t, &L->k_norm, SKIPPER_F32, hp->head_dim, 1, 0.2f, 1.0f, &r);
		}
	}
	return t;
}

/* out = w's values rounded to BF16 (dequantised first), the matrix the CUDA
 * backend uploads; F32 vectors (norms, kept F32 there too) are copied as
 * they are. The new data is owned by t. */
static inline void tm_bf16_weight(struct tm_model *t, const struct skipper_weight *w,
                                  struct skipper_weight *out)
{
	*out = *w;
	if (w->ne1 == 1 && w->type == SKIPPER_F32)
		return;
	float *row = malloc((size_t)w->ne0 * sizeof *row);
	uint16_t *data = malloc((size_t)w->ne0 * (size_t)w->ne1 * 2);
	for (int64_t j = 0; j < w->ne1; j++) {
		skipper_dequant_row(w->type, (const char *)w->data + (size_t)j * w->row_bytes, row, w->ne0);
		for (int64_t i = 0; i < w->ne0; i++)
			data[j * w->ne0 + i] = skipper_f32_to_bf16(row[i]);
	}
	free(row);
	out->type = SKIPPER_BF16;
	out->row_bytes = (size_t)w->ne0 * 2;
	out->data = data;
	t->bufs[t->nbufs++] = data;
}

/* The model the CUDA backend computes with: src with every matrix in BF16.
 * The CPU backend running it differs from the GPU only in arithmetic order,
 * which is what a parity test should look at; src's own dtype adds the
 * (by design) rounding of weights to BF16 on top. */
static inline struct tm_model *tm_bf16_twin(const struct tm_model *src)
{
	struct tm_model *t = calloc(1, sizeof *t);
	struct skipper_model_view *m = &t->m;
	const struct skipper_model_view *s = &src->m;
	int L = s->hp.n_layer;

	*m = *s;
	tm_bf16_weight(t, &s->tok_embd, &m->tok_embd);
	if (s->tied_embeddings)
		m->output = m->tok_embd;
	else
		tm_bf16_weight(t, &s->output, &m->output);
	m->layers = calloc((size_t)L, sizeof *m->layers);
	t->bufs[t->nbufs++] = m->layers;
	for (int l = 0; l < L; l++) {
		const struct skipper_layer *a = &s->layers[l];
		struct skipper_layer *b = &m->layers[l];
		*b = *a;
		tm_bf16_weight(t, &a->wq, &b->wq);
		tm_bf16_weight(t, &a->wk, &b->wk);
		tm_bf16_weight(t, &a->wv, &b->wv);
		tm_bf16_weight(t, &a->wo, &b->wo);
		tm_bf16_weight(t, &a->w_gate, &b->w_gate);
		tm_bf16_weight(t, &a->w_up, &b->w_up);
		tm_bf16_weight(t, &a->w_down, &b->w_down);
	}
	return t;
}

static inline void tm_free(struct tm_model *t)
{
	for (int i = 0; i < t->nbufs; i++)
		free(t->bufs[i]);
	free(t);
}

#endif
