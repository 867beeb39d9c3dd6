/* One transformer block's sub-layers over a chunk of rows: matmuls threaded
 * over output columns, attention threaded over (row, K/V head). Nothing here
 * depends on the chunk size except which rows share a weight pass. */
#include "build-config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"

#pragma GCC optimize("fp-contract=off")

/* ---------- matmul job ---------- */

struct mm_job {
	cpu_matmul_fn fn;
	int64_t k;
	const char *w;
	size_t wrb;
	int nc, tile;
	const void *x;
	size_t xs;
	int nr;
	float *y;
	size_t ys;
};

static void mm_task(void *p, int t, int thread)
{
	const struct mm_job *j = p;
	int c0 = t * j->tile;
	int nc = j->nc - c0 < j->tile ? j->nc - c0 : j->tile;
	j->fn(j->k, j->w + (size_t)c0 * j->wrb, j->wrb, nc, j->x, j->xs, j->nr, j->y + c0, j->ys);
}

void cpu_weight_init(const struct cpu_backend *be, const struct skipper_weight *src, void *own_src,
                     struct cpu_weight *out)
{
	const struct cpu_kernels *K = be->K;
	int kind = cpu_wkind(src->type);
	size_t sz = K->pack_size && K->matmul_packed[kind] ? K->pack_size(kind, src->ne0, (int)src->ne1) : 0;
	void *buf = sz ? aligned_alloc(64, (sz + 63) & ~(size_t)63) : NULL;

	*out = (struct cpu_weight){ .data = src->data, .row_bytes = src->row_bytes, .k = src->ne0, .nc = (int)src->ne1,
	                            .kind = kind, .fn = K->matmul[kind], .own = own_src };
	/* without the memory for a copy, the GGUF layout still works */
	if (!buf)
		return;
	K->pack(kind, src->ne0, src->data, src->row_bytes, (int)src->ne1, buf);
	free(own_src);
	out->data = buf;
	out->own = buf;
	out->row_bytes = sz / (size_t)out->nc;
	out->fn = K->matmul_packed[kind];
}

void cpu_weight_free(struct cpu_weight *w)
{
	free(w->own);
	memset(w, 0, sizeof *w);
}

void cpu_matmul(struct cpu_backend *be, const struct cpu_weight *w, const void *x,
                size_t x_stride, int nr, float *y, size_t ys)
{
	struct mm_job j = {
		.fn = w->fn, .k = w->k, .w = w->data, .wrb = w->row_bytes, .nc = w->nc, .x = x, .xs = x_stride,
		.nr = nr, .y = y, .ys = ys,
	};
	/* about 8 tasks per thread so a slow thread does not hold up the rest;
	 * whole groups of CPU_PACK_ROWS columns, as packed layouts need */
	int tile = j.nc / (be->n_threads * 8);
	tile = (tile + CPU_PACK_ROWS - 1) / CPU_PACK_ROWS * CPU_PACK_ROWS;
	if (tile < CPU_PACK_ROWS)
		tile = CPU_PACK_ROWS;
	j.tile = tile;
	skipper_threadpool_run(be->tp, mm_task, &j, (j.nc + tile - 1) / tile);
}

static const void *quantize_act(struct cpu_backend *be, int act, const float *x, size_t xs, int nr, int64_t k,
                                size_t *stride);

const void *cpu_prepare_act(struct cpu_backend *be, const struct cpu_weight *w,
                            const float *x, size_t xs, int nr, int64_t k, size_t *stride)
{
	int act = cpu_wact(w->kind), caller = be->prof_cat;
	if (act != CPU_ACT_F32)
		cpu_prof(be, SKIPPER_PROF_QUANT);
	const void *q = quantize_act(be, act, x, xs, nr, k, stride);
	cpu_prof(be, caller);
	return q ? q : x;
}

static const void *quantize_act(struct cpu_backend *be, int act, const float *x, size_t xs, int nr, int64_t k,
                                size_t *stride)
{
	switch (act) {
	case CPU_ACT_Q8: {
		size_t nb = (size_t)(be->xn_w / 32);
		for (int r = 0; r < nr; r++)
			be->K->quantize_q8(x + (size_t)r * xs, be->xq + (size_t)r * nb, k);
		*stride = nb * sizeof(struct cpu_q8);
		return be->xq;
	}
	case CPU_ACT_Q8K: {
		size_t nb = (size_t)(be->xn_w / 256);
		for (int r = 0; r < nr; r++)
			be->K->quantize_q8k(x + (size_t)r * xs, be->xqk + (size_t)r * nb, k);
		*stride = nb * sizeof(struct cpu_q8k);
		return be->xqk;
	}
	}
	*stride = xs * sizeof(float);
	return NULL;
}

/* y = W . x for several weights that read the same rows x: the activation
 * rows are converted once per layout the weights need. */
void cpu_matmul_same_x(struct cpu_backend *be, int n, const struct cpu_weight *const *w, float *const *y,
                       const size_t *ys, const float *x, size_t xs, int nr, int64_t k)
{
	const void *xq[3] = { NULL, NULL, NULL };
	size_t st[3];
	for (int i = 0; i < n; i++) {
		int a = cpu_wact(w[i]->kind);
		if (!xq[a])
			xq[a] = cpu_prepare_act(be, w[i], x, xs, nr, k, &st[a]);
		cpu_matmul(be, w[i], xq[a], st[a], nr, y[i], ys[i]);
	}
}

/* ---------- row-wise pieces ---------- */

void cpu_rmsnorm_rows(const struct cpu_backend *be, const float *x, size_t xs, const float *w,
                      float *out, size_t os, int nr)
{
	cpu_rmsnorm(x, xs, w, out, os, nr, be->n_embd, be->rms_eps);
}

void cpu_rmsnorm(const float *x, size_t xs, const float *w, float *out, size_t os, int nr, int d, float eps)
{
	for (int r = 0; r < nr; r++) {
		const float *xr = x + (size_t)r * xs;
		float *o = out + (size_t)r * os;
		/* float squares, double sum, float mean: llama.cpp's order */
		double ss = 0.0;
		for (int i = 0; i < d; i++)
			ss += (double)(xr[i] * xr[i]);
		float mean = (float)(ss / d);
		float scale = 1.0f / sqrtf(mean + eps);
		for (int i = 0; i < d; i++)
			o[i] = (xr[i] * scale) * w[i];
	}
}

void cpu_rope_table(const struct cpu_backend *be, const int32_t *pos, int nr, float *cs)
{
	int np = be->rope_dim / 2;
	for (int r = 0; r < nr; r++)
		for (int i = 0; i < np; i++) {
			double th = (double)pos[r] * be->rope_freq[i];
			cs[(size_t)r * be->rope_dim + 2 * i] = (float)cos(th);
			cs[(size_t)r * be->rope_dim + 2 * i + 1] = (float)sin(th);
		}
}

static void rope_heads(const struct cpu_backend *be, float *x, int n_heads, const float *cs)
{
	int np = be->rope_dim / 2;
	int pairs = be->base.model->hp.rope_style == SKIPPER_ROPE_PAIRS;
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * be->hd;
		for (int i = 0; i < np; i++) {
			int a = pairs ? 2 * i : i, b = pairs ? 2 * i + 1 : i + np;
			float c = cs[2 * i], s = cs[2 * i + 1];
			float x0 = v[a], x1 = v[b];
			v[a] = x0 * c - x1 * s;
			v[b] = x0 * s + x1 * c;
		}
	}
}

static void add_row(float *y, const float *b, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += b[i];
}

/* ---------- attention ---------- */

struct attn_job {
	struct cpu_backend *be;
	const struct cpu_batch *b;
	int layer, r0, nr;
	int rows;                /* batch rows per task */
	const uint16_t *kb, *vb; /* batch row 0's K/V for this layer and head 0 */
	size_t hs;               /* from one head's rows to the next's */
};

/* Batch rows before row gi that it sees, root first (a chain: all of them);
 * returns how many. */
static int ancestors(const struct cpu_batch *b, int gi, int32_t *anc)
{
	int na = 0;
	if (!b->parent) {
		for (int a = 0; a < gi; a++)
			anc[na++] = a;
		return na;
	}
	for (int a = b->parent[gi]; a >= 0; a = b->parent[a])
		anc[na++] = a;
	for (int i = 0; i < na / 2; i++) {
		int32_t tmp = anc[i];
		anc[i] = anc[na - 1 - i];
		anc[na - 1 - i] = tmp;
	}
	return na;
}

/* The largest of x[0..n): eight running maxima, so that the compiler keeps
 * them in a vector (fmaxf is a library call here, one per score). */
static float row_max(const float *x, int n)
{
	float m[8];
	int k = 0;
	for (int l = 0; l < 8; l++)
		m[l] = -INFINITY;
	for (; k + 8 <= n; k += 8)
		for (int l = 0; l < 8; l++)
			m[l] = x[k + l] > m[l] ? x[k + l] : m[l];
	for (; k < n; k++)
		m[0] = x[k] > m[0] ? x[k] : m[0];
	for (int l = 1; l < 8; l++)
		m[0] = m[l] > m[0] ? m[l] : m[0];
	return m[0];
}

/* One K/V head for a block of batch rows: every query head of the group of
 * every row meets the cached keys in one pass (each key read once for
 * them all), then its own ancestors and itself; keys in a fixed order:
 * cache slots, ancestors root first, self. */
static void attn_task(void *p, int t, int thread)
{
	const struct attn_job *j = p;
	struct cpu_backend *be = j->be;
	const struct cpu_kernels *K = be->K;
	const struct cpu_batch *b = j->b;
	int n_ctx = be->base.n_ctx, group = be->n_head / be->n_kv, hd = be->hd;
	int g = t % be->n_kv, rl0 = (t / be->n_kv) * j->rows;
	int nrl = j->nr - rl0 < j->rows ? j->nr - rl0 : j->rows, nq = nrl * group, n_past = b->n_past;
	size_t qsz = (size_t)be->att_rows * group * hd;
	float *qs = be->att_q + (size_t)thread * qsz, *os = be->att_o + (size_t)thread * qsz;
	float *sc = be->scores + (size_t)thread * be->att_rows * group * n_ctx;
	int32_t *anc = be->anc + (size_t)thread * n_ctx;
	const uint16_t *kc = be->k_cache + cpu_kv_at(be, j->layer, g, 0, n_ctx);
	const uint16_t *vc = be->v_cache + cpu_kv_at(be, j->layer, g, 0, n_ctx);
	const uint16_t *kb = j->kb + (size_t)g * j->hs, *vb = j->vb + (size_t)g * j->hs;

	/* Like llama.cpp (no flash attention): q meets the f16 cache as f16,
	 * and the normalised probabilities are rounded to f16 before they
	 * weight V. Following its rounding keeps logits within noise of it. */
	for (int rl = 0; rl < nrl; rl++) {
		memcpy(qs + (size_t)rl * group * hd, be->q + (size_t)(rl0 + rl) * be->q_dim + (size_t)g * group * hd,
		       (size_t)group * hd * sizeof *qs);
		K->round_f16(qs + (size_t)rl * group * hd, group * hd);
	}
	K->attn_scores(qs, nq, kc, n_past, hd, hd, be->attn_scale, sc, n_ctx);
	for (int rl = 0; rl < nrl; rl++) {
		int gi = j->r0 + rl0 + rl, na = ancestors(b, gi, anc), nk = n_past + na + 1;
		const float *q = qs + (size_t)rl * group * hd;
		float *s = sc + (size_t)rl * group * n_ctx + n_past;
		if (!b->parent) /* a chain: rows 0 .. gi are one run of keys */
			K->attn_scores(q, group, kb, gi + 1, hd, hd, be->attn_scale, s, n_ctx);
		else
			for (int a = 0; a <= na; a++)
				K->attn_scores(q, group, kb + (size_t)(a < na ? anc[a] : gi) * hd, 1, hd, hd, be->attn_scale,
				               s + a, n_ctx);
		for (int hh = 0; hh < group; hh++) {
			float *x = sc + (size_t)(rl * group + hh) * n_ctx, mx = row_max(x, nk);
			float inv = (float)(1.0 / K->exp_sum(x, nk, mx));
			for (int k = 0; k < nk; k++)
				x[k] *= inv;
			K->round_f16(x, nk);
		}
	}
	memset(os, 0, (size_t)nq * hd * sizeof *os);
	K->attn_values(os, nq, sc, n_ctx, vc, n_past, hd, hd);
	for (int rl = 0; rl < nrl; rl++) {
		int gi = j->r0 + rl0 + rl, na = ancestors(b, gi, anc);
		float *o = os + (size_t)rl * group * hd;
		const float *pr = sc + (size_t)rl * group * n_ctx + n_past;
		if (!b->parent)
			K->attn_values(o, group, pr, n_ctx, vb, gi + 1, hd, hd);
		else
			for (int a = 0; a <= na; a++)
				K->attn_values(o, group, pr + a, n_ctx, vb + (size_t)(a < na ? anc[a] : gi) * hd, 1, hd, hd);
		memcpy(be->att + (size_t)(rl0 + rl) * be->q_dim + (size_t)g * group * hd, o,
		       (size_t)group * hd * sizeof *o);
	}
}

/* Rows per attention task: enough tasks to keep the threads evenly busy,
 * as few as that allows so that each key is read for many rows at once,
 * and no more than a thread's scratch holds. */
static int attn_rows_per_task(const struct cpu_backend *be, int nr)
{
	int nb = 1;
	while (nb < nr && (be->n_kv * nb) % be->n_threads != 0 && be->n_kv * nb < 4 * be->n_threads)
		nb++;
	int rows = (nr + nb - 1) / nb;
	return rows < be->att_rows ? rows : be->att_rows;
}

void cpu_attn_block(struct cpu_backend *be, const struct cpu_batch *b, int layer, int r0, int nr)
{
	const struct skipper_layer *L = &be->base.model->layers[layer];
	const struct cpu_layer_weights *W = &be->lw[layer];
	int ne = be->n_embd, kvd = be->kv_dim;
	size_t xs, hs;
	uint16_t *kb, *vb;

	cpu_prof(be, SKIPPER_PROF_ROWWISE);
	cpu_rmsnorm_rows(be, be->h, ne, be->norm_attn + (size_t)layer * ne, be->xn, be->xn_w, nr);
	{
		const struct cpu_weight *w[3] = { &W->wq, &W->wk, &W->wv };
		float *y[3] = { be->q, be->k, be->v };
		size_t ys[3] = { (size_t)be->q_dim, (size_t)kvd, (size_t)kvd };
		cpu_prof(be, SKIPPER_PROF_QKV);
		cpu_matmul_same_x(be, 3, w, y, ys, be->xn, be->xn_w, nr, ne);
	}
	cpu_prof(be, SKIPPER_PROF_ROWWISE);
	for (int r = 0; r < nr; r++) {
		float *q = be->q + (size_t)r * be->q_dim, *k = be->k + (size_t)r * kvd, *v = be->v + (size_t)r * kvd;
		if (L->bq.data) /* qwen2 */
			add_row(q, L->bq.data, be->q_dim), add_row(k, L->bk.data, kvd), add_row(v, L->bv.data, kvd);
		if (L->q_norm.data) { /* qwen3: each head normed on its own */
			cpu_rmsnorm(q, be->hd, L->q_norm.data, q, be->hd, be->n_head, be->hd, be->rms_eps);
			cpu_rmsnorm(k, be->hd, L->k_norm.data, k, be->hd, be->n_kv, be->hd, be->rms_eps);
		}
	}

	if (b->kv_write) {
		size_t base = cpu_kv_at(be, layer, 0, b->n_past, be->base.n_ctx);
		kb = be->k_cache + base;
		vb = be->v_cache + base;
		hs = (size_t)be->base.n_ctx * be->hd;
	} else {
		size_t base = cpu_kv_at(be, layer, 0, 0, be->scr_cap);
		kb = be->k_scr + base;
		vb = be->v_scr + base;
		hs = (size_t)be->scr_cap * be->hd;
	}
	for (int r = 0; r < nr; r++) {
		const float *cs = be->rope_cs + (size_t)r * be->rope_dim;
		rope_heads(be, be->q + (size_t)r * be->q_dim, be->n_head, cs);
		rope_heads(be, be->k + (size_t)r * kvd, be->n_kv, cs);
		/* stored as f16 before anyone reads them, so batch rows and cached
		 * rows look the same to attention */
		for (int g = 0; g < be->n_kv; g++) {
			size_t at = (size_t)g * hs + (size_t)(r0 + r) * be->hd;
			be->K->f32_to_f16(be->k + (size_t)r * kvd + (size_t)g * be->hd, kb + at, be->hd);
			be->K->f32_to_f16(be->v + (size_t)r * kvd + (size_t)g * be->hd, vb + at, be->hd);
		}
	}

	struct attn_job j = { .be = be, .b = b, .layer = layer, .r0 = r0, .nr = nr, .kb = kb, .vb = vb, .hs = hs };
	j.rows = attn_rows_per_task(be, nr);
	cpu_prof(be, SKIPPER_PROF_ATTENTION);
	skipper_threadpool_run(be->tp, attn_task, &j, be->n_kv * ((nr + j.rows - 1) / j.rows));

	cpu_prof(be, SKIPPER_PROF_ATTN_OUT);
	const void *x = cpu_prepare_act(be, &W->wo, be->att, be->q_dim, nr, be->q_dim, &xs);
	cpu_matmul(be, &W->wo, x, xs, nr, be->proj, ne);
	cpu_prof(be, SKIPPER_PROF_ROWWISE);
	for (int r = 0; r < nr; r++)
		for (int i = 0; i < ne; i++)
			be->h[(size_t)r * ne + i] += be->proj[(size_t)r * ne + i];
}

/* ---------- MLP ---------- */

void cpu_mlp_block(struct cpu_backend *be, int layer, int nr)
{
	const struct cpu_layer_weights *W = &be->lw[layer];
	int ne = be->n_embd, nf = be->n_ff;
	size_t xs;

	cpu_prof(be, SKIPPER_PROF_ROWWISE);
	cpu_rmsnorm_rows(be, be->h, ne, be->norm_ffn + (size_t)layer * ne, be->xn, be->xn_w, nr);
	{
		const struct cpu_weight *w[2] = { &W->gate, &W->up };
		float *y[2] = { be->gate, be->up };
		size_t ys[2] = { (size_t)nf, (size_t)nf };
		cpu_prof(be, SKIPPER_PROF_GATE_UP);
		cpu_matmul_same_x(be, 2, w, y, ys, be->xn, be->xn_w, nr, ne);
	}
	cpu_prof(be, SKIPPER_PROF_ROWWISE);

	for (int r = 0; r < nr; r++)
		be->K->silu_mul(be->gate + (size_t)r * nf, be->up + (size_t)r * nf, be->xn + (size_t)r * be->xn_w, nf);
	cpu_prof(be, SKIPPER_PROF_DOWN);
	const void *x = cpu_prepare_act(be, &W->down, be->xn, be->xn_w, nr, nf, &xs);
	cpu_matmul(be, &W->down, x, xs, nr, be->proj, ne);
	cpu_prof(be, SKIPPER_PROF_ROWWISE);
	for (int r = 0; r < nr; r++)
		for (int i = 0; i < ne; i++)
			be->h[(size_t)r * ne + i] += be->proj[(size_t)r * ne + i];
}
