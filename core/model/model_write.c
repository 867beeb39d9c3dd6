/* A loaded model written out as GGUF, in llama.cpp's conventions, so that
 * llama.cpp loads it too: ARCH.* keys, GGUF tensor names, llama's Q/K rows
 * permuted into interleaved RoPE pairs (what its converter does; a
 * checkpoint rotates halves), Llama-3 RoPE factors as rope_freqs.weight. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "gguf_write.h"
#include "model_impl.h"
#include "quant.h"

/* Rows of a Q or K projection from halves to pairs: in each head of hd
 * rows, row i (< hd/2) and row hd/2 + i become rows 2i and 2i + 1. */
static void *to_pairs(const struct skipper_weight *w, int hd)
{
	uint8_t *dst = malloc((size_t)w->row_bytes * (size_t)w->ne1);
	const uint8_t *src = w->data;
	if (!dst)
		return NULL;
	for (int64_t r = 0; r < w->ne1; r++) {
		int64_t head = r / hd, j = r % hd, to = head * hd + (j < hd / 2 ? 2 * j : 2 * (j - hd / 2) + 1);
		memcpy(dst + (size_t)to * w->row_bytes, src + (size_t)r * w->row_bytes, w->row_bytes);
	}
	return dst;
}

static void tensor(struct skipper_gguf_out *o, const char *name, int n_dims, const struct skipper_weight *w,
                   const void *data)
{
	int64_t ne[2] = { w->ne0, w->ne1 };
	skipper_gguf_out_tensor(o, name, w->type, n_dims, ne, data ? data : w->data,
	                        (uint64_t)w->row_bytes * (uint64_t)w->ne1);
}

int skipper_model_write_gguf(const struct skipper_model *m, struct skipper_gguf_out *o, const char *path,
                             struct skipper_error *err)
{
	const struct skipper_model_view *v = &m->view;
	const struct skipper_hparams *hp = &v->hp;
	char key[128], name[96];
	void **perm = calloc((size_t)hp->n_layer * 2 + 1, sizeof *perm);
	int rc = SKIPPER_OK;

	if (!perm)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
#define K(k) (snprintf(key, sizeof key, "%s." k, v->arch), key)
	skipper_gguf_out_str(o, "general.architecture", v->arch, strlen(v->arch));
	skipper_gguf_out_str(o, "general.name", v->name, strlen(v->name));
	skipper_gguf_out_u32(o, K("context_length"), (uint32_t)hp->n_ctx_train);
	skipper_gguf_out_u32(o, K("embedding_length"), (uint32_t)hp->n_embd);
	skipper_gguf_out_u32(o, K("block_count"), (uint32_t)hp->n_layer);
	skipper_gguf_out_u32(o, K("feed_forward_length"), (uint32_t)hp->n_ff);
	skipper_gguf_out_u32(o, K("attention.head_count"), (uint32_t)hp->n_head);
	skipper_gguf_out_u32(o, K("attention.head_count_kv"), (uint32_t)hp->n_head_kv);
	skipper_gguf_out_u32(o, K("attention.key_length"), (uint32_t)hp->head_dim);
	skipper_gguf_out_u32(o, K("attention.value_length"), (uint32_t)hp->head_dim);
	skipper_gguf_out_u32(o, K("rope.dimension_count"), (uint32_t)hp->rope_dim);
	skipper_gguf_out_f32(o, K("rope.freq_base"), hp->rope_theta);
	skipper_gguf_out_f32(o, K("attention.layer_norm_rms_epsilon"), hp->rms_eps);
	skipper_gguf_out_u32(o, K("vocab_size"), (uint32_t)hp->n_vocab);
	if (hp->rope_scaling == SKIPPER_ROPE_SCALING_LINEAR) {
		skipper_gguf_out_str(o, K("rope.scaling.type"), "linear", 6);
		skipper_gguf_out_f32(o, K("rope.scaling.factor"), hp->rope_factor);
	}
#undef K
	/* a GGUF llama rotates pairs, a qwen halves: rows move only where the
	 * file's layout and the model's differ */
	int pairs = v->arch_id == SKIPPER_ARCH_LLAMA && hp->rope_style == SKIPPER_ROPE_HALVES;

	tensor(o, "token_embd.weight", 2, &v->tok_embd, NULL);
	tensor(o, "output_norm.weight", 1, &v->out_norm, NULL);
	if (!v->tied_embeddings)
		tensor(o, "output.weight", 2, &v->output, NULL);
	if (v->rope_freqs) {
		int64_t ne = hp->rope_dim / 2;
		skipper_gguf_out_tensor(o, "rope_freqs.weight", SKIPPER_F32, 1, &ne, v->rope_freqs, (uint64_t)ne * 4);
	}
	for (int i = 0; i < hp->n_layer && !rc; i++) {
		const struct skipper_layer *l = &v->layers[i];
		/* perm: 1 for Q, 2 for K (its slot in perm[]); nd: dimensions */
		const struct { const struct skipper_weight *w; const char *n; int perm, nd; } t[] = {
			{ &l->attn_norm, "attn_norm.weight", 0, 1 }, { &l->wq, "attn_q.weight", 1, 2 },
			{ &l->wk, "attn_k.weight", 2, 2 },           { &l->wv, "attn_v.weight", 0, 2 },
			{ &l->wo, "attn_output.weight", 0, 2 },      { &l->bq, "attn_q.bias", 0, 1 },
			{ &l->bk, "attn_k.bias", 0, 1 },             { &l->bv, "attn_v.bias", 0, 1 },
			{ &l->q_norm, "attn_q_norm.weight", 0, 1 },  { &l->k_norm, "attn_k_norm.weight", 0, 1 },
			{ &l->ffn_norm, "ffn_norm.weight", 0, 1 },   { &l->w_gate, "ffn_gate.weight", 0, 2 },
			{ &l->w_up, "ffn_up.weight", 0, 2 },         { &l->w_down, "ffn_down.weight", 0, 2 },
		};
		for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
			if (!t[k].w->data)
				continue;
			snprintf(name, sizeof name, "blk.%d.%s", i, t[k].n);
			void *data = NULL;
			if (pairs && t[k].perm) {
				if (!(data = perm[2 * i + t[k].perm - 1] = to_pairs(t[k].w, hp->head_dim))) {
					rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
					break;
				}
			}
			tensor(o, name, t[k].nd, t[k].w, data);
		}
	}
	if (!rc)
		rc = skipper_gguf_out_write(o, path, err);
	for (int i = 0; i < 2 * hp->n_layer; i++)
		free(perm[i]);
	free(perm);
	return rc;
}
