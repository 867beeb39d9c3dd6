/* One transformer block's sub-layers over a chunk of rows: matmuls threaded
 * over output columns, attention threaded over (row, K/V head). Nothing here
 * depends on the chunk size except which rows share a weight pass. */
#include "build-config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"

/* GCC's -O2 leaves the element-wise loops here (residual adds, biases,
 * the norm's scaling, RoPE) scalar unless a vector loop replaces the scalar
 * one outright; vectorised, they give the same bits (nothing is
 * reassociated without -ffast-math) at a quarter of the instructions. */
#pragma GCC optimize("fp-contract=off", "tree-loop-vectorize", "vect-cost-model=dynamic")

/* ---------- matmul jobs ---------- */

/* One pool job over the output columns of up to three matmuls, so that
 * a layer's projections that read the same input wait for one barrier
 * between them, not three. With `shared`, every part has the same
 * columns and a task computes its columns of all of them (the MLP's gate
 * and up); else a task computes a tile of one part. `after` then runs on
 * the columns the task wrote: work that needs nothing else (biases,
 * SiLU, the next matmul's quantisation, residual adds) runs on every
 * thread instead of on one while the others wait. */
struct mm_part {
	const struct cpu_weight *w;
	const void *x; /* activations in the layout the weight needs */
	size_t xs;
	float *y;
	size_t ys;
};

struct mm_job {
	struct cpu_backend *be;
	struct mm_part part[3];
	int n_part, nr, shared, tile;
	int first[4]; /* each part's first task */
	void (*after)(const struct mm_job *j, int part, int c0, int nc);
	const void *ctx; /* for after */
};

static void mm_task(void *p, int t, int thread)
{
	const struct mm_job *j = p;
	int i = 0;
	while (!j->shared && t >= j->first[i + 1])
		i++;
	int c0 = (t - j->first[i]) * j->tile, nc = j->part[i].w->nc - c0;
	if (nc > j->tile)
		nc = j->tile;
	for (int k = i; k < (j->shared ? j->n_part : i + 1); k++) {
		const struct mm_part *m = &j->part[k];
		m->w->fn(m->w->k, m->w->data + (size_t)c0 * m->w->row_bytes, m->w->row_bytes, nc, m->x, m->xs, j->nr,
		         m->y + c0, m->ys);
	}
	if (j->after)
		j->after(j, i, c0, nc);
}

/* Run the job: tiles of a multiple of `align` columns (itself a multiple
 * of CPU_PACK_ROWS, as packed layouts need), about 8 per thread over all
 * parts so that a slow thread does not hold up the rest. The split never
 * changes what a column computes. */
static void mm_run(struct mm_job *j, int align)
{
	struct cpu_backend *be = j->be;
	int total = 0;
	for (int i = 0; i < (j->shared ? 1 : j->n_part); i++)
		total += j->part[i].w->nc;
	j->tile = (total / (be->n_threads * 8) + align / 2) / align * align;
	if (j->tile < align)
		j->tile = align;
	j->first[0] = 0;
	for (int i = 0; i < j->n_part; i++)
		j->first[i + 1] = j->first[i] + (j->shared && i ? 0 : (j->part[i].w->nc + j->tile - 1) / j->tile);
	skipper_threadpool_run(be->tp, mm_task, j, j->first[j->n_part]);
}

void cpu_matmul(struct cpu_backend *be, const struct cpu_weight *w, const void *x,
                size_t x_stride, int nr, float *y, size_t ys)
{
	struct mm_job j = { .be = be, .part = { { w, x, x_stride, y, ys } }, .n_part = 1, .nr = nr };
	mm_run(&j, CPU_PACK_ROWS);
}

/* Row stride of the activations in layout act in a buffer of be's (rows
 * of xn_w elements). */
static size_t act_stride(const struct cpu_backend *be, int act)
{
	return act == CPU_ACT_Q8K ? (size_t)(be->xn_w / 256) * sizeof(struct cpu_q8k)
	                          : (size_t)(be->xn_w / 32) * sizeof(struct cpu_q8);
}

/* The buffer of be's that holds quantised activations in layout act: the
 * MLP down projection's input (ff) or any other matmul's. */
static void *act_buffer(const struct cpu_backend *be, int act, int ff)
{
	if (act == CPU_ACT_Q8K)
		return ff ? (void *)be->xqk_ff : (void *)be->xqk;
	return ff ? (void *)be->xq_ff : (void *)be->xq;
}

/* Columns [c0, c0 + n) of nr rows of x (rows xs floats apart; c0 and n
 * whole blocks of act's layout) into q, rows act_stride() apart. */
static void quantize_cols(const struct cpu_backend *be, int act, const float *x, size_t xs, int nr, int c0, int n,
                          void *q)
{
	size_t qs = act_stride(be, act);
	for (int r = 0; r < nr; r++) {
		char *qr = (char *)q + (size_t)r * qs;
		if (act == CPU_ACT_Q8K)
			be->K->quantize_q8k(x + (size_t)r * xs + c0, (struct cpu_q8k *)qr + c0 / 256, n);
		else
			be->K->quantize_q8(x + (size_t)r * xs + c0, (struct cpu_q8 *)qr + c0 / 32, n);
	}
}

const void *cpu_prepare_act(struct cpu_backend *be, const struct cpu_weight *w,
                            const float *x, size_t xs, int nr, int64_t k, size_t *stride)
{
	int act = cpu_wact(w->kind), caller = be->prof_cat;
	if (act == CPU_ACT_F32) {
		*stride = xs * sizeof(float);
		return x;
	}
	void *q = act_buffer(be, act, 0);
	cpu_prof(be, SKIPPER_PROF_QUANT);
	quantize_cols(be, act, x, xs, nr, 0, (int)k, q);
	cpu_prof(be, caller);
	*stride = act_stride(be, act);
	return q;
}

/* The job's parts: the weights w[0..n) over the same rows x, converted
 * once per layout they need. */
static void prepare_parts(struct cpu_backend *be, struct mm_job *j, const struct cpu_weight *const *w, float *const *y,
                          const size_t *ys, const float *x, size_t xs, int64_t k)
{
	const void *xq[3] = { NULL, NULL, NULL };
	size_t st[3];
	for (int i = 0; i < j->n_part; i++) {
		int a = cpu_wact(w[i]->kind);
		if (!xq[a])
			xq[a] = cpu_prepare_act(be, w[i], x, xs, j->nr, k, &st[a]);
		j->part[i] = (struct mm_part){ w[i], xq[a], st[a], y[i], ys[i] };
	}
}

/* ---------- row-wise pieces ---------- */

void cpu_rmsnorm_rows(const struct cpu_backend *be, const float *x, size_t xs, const float *w,
                      float *out, size_t os, int nr)
{
	cpu_rmsnorm(x, xs, w, out, os, nr, be->n_embd, be->rms_eps);
}

/* One row normed, given its sum of squares: float squares, double sum in
 * element order, float mean (llama.cpp's order). */
static void rms_apply(const float *xr, double ss, const float *w, float *o, int d, float eps)
{
	float scale = 1.0f / sqrtf((float)(ss / d) + eps);
	for (int i = 0; i < d; i++)
		o[i] = (xr[i] * scale) * w[i];
}

void cpu_rmsnorm(const float *x, size_t xs, const float *w, float *out, size_t os, int nr, int d, float eps)
{
	int r = 0;
	/* four rows at a time: each sum is one chain of dependent adds, and
	 * four chains run side by side in the time of one (same bits) */
	for (; r + 4 <= nr; r += 4) {
		const float *x0 = x + (size_t)r * xs, *x1 = x0 + xs, *x2 = x1 + xs, *x3 = x2 + xs;
		double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
		for (int i = 0; i < d; i++) {
			s0 += (double)(x0[i] * x0[i]);
			s1 += (double)(x1[i] * x1[i]);
			s2 += (double)(x2[i] * x2[i]);
			s3 += (double)(x3[i] * x3[i]);
		}
		rms_apply(x0, s0, w, out + (size_t)r * os, d, eps);
		rms_apply(x1, s1, w, out + (size_t)(r + 1) * os, d, eps);
		rms_apply(x2, s2, w, out + (size_t)(r + 2) * os, d, eps);
		rms_apply(x3, s3, w, out + (size_t)(r + 3) * os, d, eps);
	}
	for (; r < nr; r++) {
		const float *xr = x + (size_t)r * xs;
		double ss = 0.0;
		for (int i = 0; i < d; i++)
			ss += (double)(xr[i] * xr[i]);
		rms_apply(xr, ss, w, out + (size_t)r * os, d, eps);
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

/* ---------- what a matmul task does after its columns ---------- */

/* Q/K/V biases (qwen2) */
static void add_bias(const struct mm_job *j, int part, int c0, int nc)
{
	const struct skipper_layer *L = j->ctx;
	const float *bias = part == 0 ? L->bq.data : part == 1 ? L->bk.data : L->bv.data;
	const struct mm_part *m = &j->part[part];
	for (int r = 0; r < j->nr; r++)
		add_row(m->y + (size_t)r * m->ys + c0, bias + c0, nc);
}

/* h += the projection (attention output, MLP down) */
static void add_residual(const struct mm_job *j, int part, int c0, int nc)
{
	const struct mm_part *m = &j->part[part];
	for (int r = 0; r < j->nr; r++)
		add_row(j->be->h + (size_t)r * j->be->n_embd + c0, m->y + (size_t)r * m->ys + c0, nc);
}

/* gate = silu(gate) * up, then the down projection's input quantised
 * (its blocks lie within the task's columns: mm_run's align) */
static void silu_quantize(const struct mm_job *j, int part, int c0, int nc)
{
	struct cpu_backend *be = j->be;
	const struct cpu_weight *down = j->ctx;
	int nf = be->n_ff, act = cpu_wact(down->kind);
	for (int r = 0; r < j->nr; r++) {
		float *g = be->gate + (size_t)r * nf + c0;
		be->K->silu_mul(g, be->up + (size_t)r * nf + c0, g, nc);
	}
	if (act != CPU_ACT_F32)
		quantize_cols(be, act, be->gate, (size_t)nf, j->nr, c0, nc, act_buffer(be, act, 1));
}

/* ---------- attention ---------- */

/* One sequence's rows of a chunk: the attention tasks that serve them. */
struct attn_part {
	int c0, cn;              /* chunk rows [c0, c0 + cn) */
	int g0;                  /* the segment's index of chunk row c0 */
	int n_past, row0;        /* the segment's committed prefix and first batch row */
	int rows;                /* rows per task */
	int ss;                  /* scores per query: the keys its last row sees at most */
	int t0;                  /* its first task */
	const uint8_t *kc, *vc;  /* the sequence's cache for this layer, head 0 */
	const uint8_t *kb, *vb;  /* the segment's row 0's K/V for this layer and head 0 */
};

struct attn_job {
	struct cpu_backend *be;
	const struct cpu_batch *b;
	int layer;
	size_t hs;               /* bytes from one head's batch rows to the next's */
	int n_part;
	struct attn_part part[CPU_CHUNK];
};

/* Rows of the segment before its row gi that gi sees, root first (a
 * chain: all of them), as segment indices; returns how many. */
static int ancestors(const struct cpu_batch *b, int row0, int gi, int32_t *anc)
{
	int na = 0;
	if (!b->parent) {
		for (int a = 0; a < gi; a++)
			anc[na++] = a;
		return na;
	}
	for (int a = b->parent[row0 + gi]; a >= 0; a = b->parent[a])
		anc[na++] = a - row0;
	for (int i = 0; i < na / 2; i++) {
		int32_t tmp = anc[i];
		anc[i] = anc[na - 1 - i];
		anc[na - 1 - i] = tmp;
	}
	return na;
}

/* One K/V head for a block of one sequence's rows: every query head of
 * the group of every row meets the cached keys in one pass (each key read
 * once for them all), then its own ancestors and itself; keys in a fixed
 * order: cache slots, ancestors root first, self. */
static void attn_task(void *p, int t, int thread)
{
	const struct attn_job *j = p;
	struct cpu_backend *be = j->be;
	const struct cpu_kernels *K = be->K;
	const struct cpu_batch *b = j->b;
	const struct attn_part *pt = j->part;
	while (pt + 1 < j->part + j->n_part && t >= pt[1].t0)
		pt++;
	t -= pt->t0;
	int n_ctx = be->base.n_ctx, group = be->n_head / be->n_kv, hd = be->hd, kt = be->kv_type;
	size_t rb = be->kv_rb;
	int g = t % be->n_kv, rl0 = (t / be->n_kv) * pt->rows;
	int nrl = pt->cn - rl0 < pt->rows ? pt->cn - rl0 : pt->rows, nq = nrl * group, n_past = pt->n_past;
	size_t qsz = (size_t)be->att_rows * group * hd;
	float *qs = be->att_q + (size_t)thread * qsz, *os = be->att_o + (size_t)thread * qsz;
	float *sc = be->scores + (size_t)thread * be->att_floats;
	int ss = pt->ss;
	int32_t *anc = be->anc + (size_t)thread * n_ctx;
	const uint8_t *kc = pt->kc + cpu_kv_at(be, 0, g, 0, n_ctx), *vc = pt->vc + cpu_kv_at(be, 0, g, 0, n_ctx);
	const uint8_t *kb = pt->kb + (size_t)g * j->hs, *vb = pt->vb + (size_t)g * j->hs;

	/* Like llama.cpp: with an f16 cache as without flash attention, q
	 * meets the keys as f16 and the normalised probabilities are rounded
	 * to f16 before they weight V; with q8_0 (which llama.cpp runs with
	 * flash attention) q meets the keys as q8_0 blocks and the
	 * probabilities stay floats. Following its rounding keeps logits
	 * within noise of it. */
	for (int rl = 0; rl < nrl; rl++) {
		memcpy(qs + (size_t)rl * group * hd,
		       be->q + (size_t)(pt->c0 + rl0 + rl) * be->q_dim + (size_t)g * group * hd,
		       (size_t)group * hd * sizeof *qs);
		cpu_kv_round_query(be, qs + (size_t)rl * group * hd, group * hd);
	}
	K->attn_scores[kt](qs, nq, kc, n_past, rb, hd, be->attn_scale, sc, ss);
	for (int rl = 0; rl < nrl; rl++) {
		int gi = pt->g0 + rl0 + rl, na = ancestors(b, pt->row0, gi, anc), nk = n_past + na + 1;
		const float *q = qs + (size_t)rl * group * hd;
		float *s = sc + (size_t)rl * group * ss + n_past;
		if (!b->parent) /* a chain: rows 0 .. gi are one run of keys */
			K->attn_scores[kt](q, group, kb, gi + 1, rb, hd, be->attn_scale, s, ss);
		else
			for (int a = 0; a <= na; a++)
				K->attn_scores[kt](q, group, kb + (size_t)(a < na ? anc[a] : gi) * rb, 1, rb, hd,
				                   be->attn_scale, s + a, ss);
		for (int hh = 0; hh < group; hh++) {
			float *x = sc + (size_t)(rl * group + hh) * ss, mx = cpu_max(x, nk);
			float inv = (float)(1.0 / K->exp_sum(x, nk, mx));
			if (kt == CPU_KV_F16)
				K->round_f16(x, nk, inv);
			else
				for (int i = 0; i < nk; i++)
					x[i] *= inv;
		}
	}
	memset(os, 0, (size_t)nq * hd * sizeof *os);
	K->attn_values[kt](os, nq, sc, ss, vc, n_past, rb, hd);
	for (int rl = 0; rl < nrl; rl++) {
		int gi = pt->g0 + rl0 + rl, na = ancestors(b, pt->row0, gi, anc);
		float *o = os + (size_t)rl * group * hd;
		const float *pr = sc + (size_t)rl * group * ss + n_past;
		if (!b->parent)
			K->attn_values[kt](o, group, pr, ss, vb, gi + 1, rb, hd);
		else
			for (int a = 0; a <= na; a++)
				K->attn_values[kt](o, group, pr + a, ss, vb + (size_t)(a < na ? anc[a] : gi) * rb, 1, rb, hd);
		memcpy(be->att + (size_t)(pt->c0 + rl0 + rl) * be->q_dim + (size_t)g * group * hd, o,
		       (size_t)group * hd * sizeof *o);
	}
}

/* Rows per attention task: enough tasks to keep the threads evenly busy,
 * as few as that allows so that each key is read for many rows at once,
 * and no more than a thread's scratch holds (scores of ss keys a query). */
static int attn_rows_per_task(const struct cpu_backend *be, int nr, int ss)
{
	int nb = 1;
	while (nb < nr && (be->n_kv * nb) % be->n_threads != 0 && be->n_kv * nb < 4 * be->n_threads)
		nb++;
	int rows = (nr + nb - 1) / nb;
	size_t fit = be->att_floats / ((size_t)(be->n_head / be->n_kv) * (size_t)ss);
	if ((size_t)rows > fit)
		rows = fit ? (int)fit : 1;
	return rows < be->att_rows ? rows : be->att_rows;
}

void cpu_attn_block(struct cpu_backend *be, const struct cpu_batch *b, int layer, int r0, int nr)
{
	const struct skipper_layer *L = &be->base.model->layers[layer];
	const struct cpu_layer_weights *W = &be->lw[layer];
	int ne = be->n_embd, kvd = be->kv_dim;
	size_t xs;

	cpu_prof(be, SKIPPER_PROF_ROWWISE);
	cpu_rmsnorm_rows(be, be->h, ne, be->norm_attn + (size_t)layer * ne, be->xn, be->xn_w, nr);
	{
		const struct cpu_weight *w[3] = { &W->wq, &W->wk, &W->wv };
		float *y[3] = { be->q, be->k, be->v };
		size_t ys[3] = { (size_t)be->q_dim, (size_t)kvd, (size_t)kvd };
		struct mm_job mj = { .be = be, .n_part = 3, .nr = nr, .after = L->bq.data ? add_bias : NULL, .ctx = L };
		cpu_prof(be, SKIPPER_PROF_QKV);
		prepare_parts(be, &mj, w, y, ys, be->xn, be->xn_w, ne);
		mm_run(&mj, CPU_PACK_ROWS);
	}
	cpu_prof(be, SKIPPER_PROF_ROWWISE);
	for (int r = 0; L->q_norm.data && r < nr; r++) {
		/* qwen3: each head normed on its own */
		float *q = be->q + (size_t)r * be->q_dim, *k = be->k + (size_t)r * kvd;
		cpu_rmsnorm(q, be->hd, L->q_norm.data, q, be->hd, be->n_head, be->hd, be->rms_eps);
		cpu_rmsnorm(k, be->hd, L->k_norm.data, k, be->hd, be->n_kv, be->hd, be->rms_eps);
	}

	/* each row's K/V where attention finds them: its sequence's cache at
	 * its segment's n_past + its index there, or the scratch at its batch
	 * row; stored in the cache's layout before anyone reads them, so batch rows and
	 * cached rows look the same to attention */
	struct attn_job j = { .be = be, .b = b, .layer = layer };
	int cap = b->kv_write ? be->base.n_ctx : be->scr_cap, k = 0, n_tasks = 0;
	j.hs = (size_t)cap * be->kv_rb;
	for (int r = 0; r < nr; r++) {
		while (r0 + r >= b->seg[k].row0 + b->seg[k].n)
			k++;
		const struct skipper_fw_seg *sg = &b->seg[k];
		const float *cs = be->rope_cs + (size_t)r * be->rope_dim;
		int slot = b->kv_write ? sg->n_past + (r0 + r - sg->row0) : r0 + r;
		size_t base = (b->kv_write ? cpu_kv_seq(be, sg->seq) : 0) + cpu_kv_at(be, layer, 0, slot, cap);
		uint8_t *kr = (b->kv_write ? be->k_cache : be->k_scr) + base;
		uint8_t *vr = (b->kv_write ? be->v_cache : be->v_scr) + base;
		rope_heads(be, be->q + (size_t)r * be->q_dim, be->n_head, cs);
		rope_heads(be, be->k + (size_t)r * kvd, be->n_kv, cs);
		for (int g = 0; g < be->n_kv; g++) {
			cpu_kv_store(be, be->k + (size_t)r * kvd + (size_t)g * be->hd, kr + (size_t)g * j.hs);
			cpu_kv_store(be, be->v + (size_t)r * kvd + (size_t)g * be->hd, vr + (size_t)g * j.hs);
		}
		/* a new part where a sequence's rows start in this chunk */
		if (!r || r0 + r == sg->row0) {
			struct attn_part *pt = &j.part[j.n_part++];
			int end = sg->row0 + sg->n < r0 + nr ? sg->row0 + sg->n : r0 + nr;
			size_t seqbase = cpu_kv_seq(be, sg->seq) + cpu_kv_at(be, layer, 0, 0, be->base.n_ctx);
			size_t b0 = (b->kv_write ? cpu_kv_seq(be, sg->seq) : 0) +
			            cpu_kv_at(be, layer, 0, b->kv_write ? sg->n_past : sg->row0, cap);
			*pt = (struct attn_part){ .c0 = r, .cn = end - (r0 + r), .g0 = r0 + r - sg->row0,
				                  .n_past = sg->n_past, .row0 = sg->row0, .t0 = n_tasks,
				                  .kc = be->k_cache + seqbase, .vc = be->v_cache + seqbase,
				                  .kb = (b->kv_write ? be->k_cache : be->k_scr) + b0,
				                  .vb = (b->kv_write ? be->v_cache : be->v_scr) + b0 };
			pt->ss = pt->n_past + pt->g0 + pt->cn;
			pt->rows = attn_rows_per_task(be, pt->cn, pt->ss);
			n_tasks += be->n_kv * ((pt->cn + pt->rows - 1) / pt->rows);
		}
	}
	cpu_prof(be, SKIPPER_PROF_ATTENTION);
	skipper_threadpool_run(be->tp, attn_task, &j, n_tasks);

	cpu_prof(be, SKIPPER_PROF_ATTN_OUT);
	const void *x = cpu_prepare_act(be, &W->wo, be->att, be->q_dim, nr, be->q_dim, &xs);
	struct mm_job mj = { .be = be, .part = { { &W->wo, x, xs, be->proj, (size_t)ne } }, .n_part = 1, .nr = nr,
	                     .after = add_residual };
	mm_run(&mj, CPU_PACK_ROWS);
}

/* ---------- MLP ---------- */

void cpu_mlp_block(struct cpu_backend *be, int layer, int nr)
{
	const struct cpu_layer_weights *W = &be->lw[layer];
	int ne = be->n_embd, nf = be->n_ff, act = cpu_wact(W->down.kind);

	cpu_prof(be, SKIPPER_PROF_ROWWISE);
	cpu_rmsnorm_rows(be, be->h, ne, be->norm_ffn + (size_t)layer * ne, be->xn, be->xn_w, nr);
	{
		const struct cpu_weight *w[2] = { &W->gate, &W->up };
		float *y[2] = { be->gate, be->up };
		size_t ys[2] = { (size_t)nf, (size_t)nf };
		struct mm_job mj = { .be = be, .n_part = 2, .nr = nr, .shared = 1, .after = silu_quantize, .ctx = &W->down };
		cpu_prof(be, SKIPPER_PROF_GATE_UP);
		prepare_parts(be, &mj, w, y, ys, be->xn, be->xn_w, ne);
		mm_run(&mj, act == CPU_ACT_Q8K ? 256 : act == CPU_ACT_Q8 ? 32 : CPU_PACK_ROWS);
	}
	cpu_prof(be, SKIPPER_PROF_DOWN);
	struct mm_part d = { &W->down, be->gate, (size_t)nf * sizeof(float), be->proj, (size_t)ne };
	if (act != CPU_ACT_F32) {
		d.x = act_buffer(be, act, 1);
		d.xs = act_stride(be, act);
	}
	struct mm_job mj = { .be = be, .part = { d }, .n_part = 1, .nr = nr, .after = add_residual };
	mm_run(&mj, CPU_PACK_ROWS);
}
