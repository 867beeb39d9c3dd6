/* [model] quantize: the float matrices of a model (a Hugging Face
 * checkpoint's BF16, a GGUF's F16 or F32) converted once at load into the
 * block layouts the kernels run, so such a model decodes at a quantised
 * GGUF's speed. Weights already quantised are left as they are. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "model_impl.h"
#include "quant.h"

int skipper_model_quantize_type(const char *name)
{
	static const struct { const char *name; int type; } t[] = {
		{ "none", -1 },           { "f16", SKIPPER_F16 },   { "bf16", SKIPPER_BF16 }, { "q8_0", SKIPPER_Q8_0 },
		{ "q4_0", SKIPPER_Q4_0 }, { "q4_1", SKIPPER_Q4_1 }, { "q5_0", SKIPPER_Q5_0 }, { "q5_1", SKIPPER_Q5_1 },
		{ "q4_k", SKIPPER_Q4_K }, { "q5_k", SKIPPER_Q5_K }, { "q6_k", SKIPPER_Q6_K },
	};
	for (size_t i = 0; name && i < sizeof t / sizeof t[0]; i++)
		if (strcasecmp(name, t[i].name) == 0)
			return t[i].type;
	return -2;
}

/* The type a row of n elements gets: a K-quant needs rows of whole
 * 256-element super-blocks; for others llama.cpp's fallbacks (Q4_K ->
 * Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0) keep about the bits asked for. */
static int row_type(int q, int64_t n)
{
	if (n % SKIPPER_QK_K == 0 || skipper_dtype_block(q) != SKIPPER_QK_K)
		return q;
	return q == SKIPPER_Q4_K ? SKIPPER_Q5_0 : q == SKIPPER_Q5_K ? SKIPPER_Q5_1 : SKIPPER_Q8_0;
}

struct job {
	const struct skipper_weight *src;
	void *dst;
	int type;
	int64_t r0, r1;
};

static void *quantize_rows(void *arg)
{
	struct job *j = arg;
	float *row = malloc((size_t)j->src->ne0 * sizeof *row);
	size_t out = skipper_dtype_row_bytes(j->type, j->src->ne0);
	if (!row)
		return arg; /* non-NULL: failed */
	for (int64_t r = j->r0; r < j->r1; r++) {
		skipper_dequant_row(j->src->type, (const uint8_t *)j->src->data + (size_t)r * j->src->row_bytes, row,
		                    j->src->ne0);
		skipper_quantize_row(j->type, row, (uint8_t *)j->dst + (size_t)r * out, j->src->ne0);
	}
	free(row);
	return NULL;
}

/* w in type q (or its fallback), in storage m owns; the rows split over
 * the machine's cores (a 1.5B model is 1.5 G elements). */
static int convert(struct skipper_model *m, struct skipper_weight *w, int q, const char *what, int layer,
                   struct skipper_error *err)
{
	int type = row_type(q, w->ne0);
	size_t row = skipper_dtype_row_bytes(type, w->ne0);
	void *dst = model_alloc(m, row * (size_t)w->ne1);
	long nt = sysconf(_SC_NPROCESSORS_ONLN);
	struct job jobs[64];
	pthread_t tid[64];
	int failed = 0;

	if (!dst)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: no memory to quantize a %lld x %lld matrix",
		                    m->view.path, (long long)w->ne0, (long long)w->ne1);
	nt = nt < 1 ? 1 : nt > 64 ? 64 : nt;
	if (nt > w->ne1)
		nt = w->ne1;
	int started[64] = { 0 };
	for (long t = 0; t < nt; t++)
		jobs[t] = (struct job){ w, dst, type, w->ne1 * t / nt, w->ne1 * (t + 1) / nt };
	for (long t = 1; t < nt; t++)
		if (!(started[t] = pthread_create(&tid[t], NULL, quantize_rows, &jobs[t]) == 0))
			failed |= quantize_rows(&jobs[t]) != NULL;
	failed |= quantize_rows(&jobs[0]) != NULL;
	for (long t = 1; t < nt; t++) {
		void *r = NULL;
		if (started[t] && pthread_join(tid[t], &r) == 0)
			failed |= r != NULL;
	}
	if (failed)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory while quantizing", m->view.path);
	/* a block scale is a half: values past its range cannot be kept */
	if (skipper_dtype_find_nonfinite(type, dst, w->ne0 * w->ne1) >= 0)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: %s (layer %d): values too large for %s (a block scale "
		                    "overflows a half)", m->view.path, what, layer, skipper_dtype_name(type));
	m->view.weight_bytes = m->view.weight_bytes - (uint64_t)w->row_bytes * (uint64_t)w->ne1 + (uint64_t)row * (uint64_t)w->ne1;
	w->type = type;
	w->data = dst;
	w->row_bytes = row;
	return SKIPPER_OK;
}

static int is_float(int type)
{
	return type == SKIPPER_F32 || type == SKIPPER_F16 || type == SKIPPER_BF16;
}

int model_quantize(struct skipper_model *m, int q, struct skipper_error *err)
{
	struct skipper_model_view *v = &m->view;
	struct timespec t0, t1;
	int rc;

	if (!skipper_dtype_name(q) || q == SKIPPER_F32)
		return skipper_fail(err, SKIPPER_ERR_ARG, "quantize: type %d is not one to convert to", q);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (is_float(v->tok_embd.type) && v->tok_embd.type != q &&
	    (rc = convert(m, &v->tok_embd, q, "token embedding", -1, err)))
		return rc;
	if (v->tied_embeddings)
		v->output = v->tok_embd;
	else if (is_float(v->output.type) && v->output.type != q && (rc = convert(m, &v->output, q, "output", -1, err)))
		return rc;
	for (int i = 0; i < v->hp.n_layer; i++) {
		struct skipper_layer *l = &v->layers[i];
		struct skipper_weight *w[] = { &l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down };
		static const char *const names[] = { "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
			                             "ffn_down" };
		for (size_t k = 0; k < sizeof w / sizeof w[0]; k++)
			if (is_float(w[k]->type) && w[k]->type != q && (rc = convert(m, w[k], q, names[k], i, err)))
				return rc;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	m->quantized = q;
	m->quantize_seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	return SKIPPER_OK;
}
