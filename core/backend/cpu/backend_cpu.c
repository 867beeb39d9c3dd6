/* The CPU backend: creation, the vtable and the forward loop (chunks of
 * rows through the layers, then the head). The other operations live in
 * cpu_services.c, the weights in cpu_weights.c, block pieces in
 * cpu_layer.c, the head in cpu_head.c, kernels in cpu_kernels_*.c. */
#include "build-config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_backend.h"
#include "base/error.h"
#include "base/memory.h"
#include "model/quant.h"

static struct cpu_backend *cpu(struct skipper_backend *be)
{
	return (struct cpu_backend *)be;
}

double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------- creation ---------- */

static void cpu_destroy(struct skipper_backend *base)
{
	struct cpu_backend *be = cpu(base);
	if (!be)
		return;
	skipper_threadpool_free(be->tp);
	free(be->rope_freq);
	free(be->norm_attn);
	free(be->norm_ffn);
	free(be->norm_out);
	free(be->k_cache);
	free(be->v_cache);
	free(be->k_scr);
	free(be->v_scr);
	free(be->h);
	free(be->xn);
	free(be->xq);
	free(be->xqk);
	free(be->xq_ff);
	free(be->xqk_ff);
	free(be->q);
	free(be->k);
	free(be->v);
	free(be->att);
	free(be->proj);
	free(be->gate);
	free(be->up);
	free(be->rope_cs);
	free(be->logits);
	free(be->scores);
	free(be->att_q);
	free(be->att_o);
	free(be->anc);
	for (int l = 0; be->lw && l < be->n_layer; l++) {
		struct cpu_layer_weights *W = &be->lw[l];
		cpu_weight_free(&W->wq), cpu_weight_free(&W->wk), cpu_weight_free(&W->wv), cpu_weight_free(&W->wo);
		cpu_weight_free(&W->gate), cpu_weight_free(&W->up), cpu_weight_free(&W->down);
	}
	free(be->lw);
	cpu_weight_free(&be->head);
	cpu_weight_free(&be->sub_head);
	free(be->weights);
	free(be->sub_ids);
	free(be->base.kv_rec);
	free(be);
}

int cpu_grow_scratch(struct cpu_backend *be, int n, struct skipper_error *err)
{
	if (n <= be->scr_cap)
		return 0;
	size_t sz = (size_t)be->n_layer * be->n_kv * n * be->kv_rb;
	uint8_t *k = realloc(be->k_scr, sz);
	if (k)
		be->k_scr = k;
	uint8_t *v = k ? realloc(be->v_scr, sz) : NULL;
	if (v)
		be->v_scr = v;
	if (!k || !v)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: scratch K/V for %d rows", n);
	be->scr_cap = n;
	return 0;
}

static const struct skipper_backend_ops cpu_ops;

/* Bytes of the weights as the model holds them (the copies the backend
 * makes are about as large). */
static uint64_t weight_bytes(const struct skipper_model_view *m)
{
	uint64_t n = (uint64_t)m->output.row_bytes * (uint64_t)m->output.ne1;
	for (int l = 0; l < m->hp.n_layer; l++) {
		const struct skipper_layer *L = &m->layers[l];
		const struct skipper_weight *w[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down };
		for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
			n += (uint64_t)w[i]->row_bytes * (uint64_t)w[i]->ne1;
	}
	return n;
}

int cpu_check_memory(const struct skipper_backend *base, int n_seq, int weights, struct skipper_error *err)
{
	const struct skipper_model_view *m = base->model;
	uint64_t avail, kv = skipper_backend_kv_bytes(&m->hp, base->n_ctx, base->kv_type) * (uint64_t)n_seq;
	uint64_t w = weights ? weight_bytes(m) : 0;
	const double gib = 1024.0 * 1024.0 * 1024.0;

	char besides[64] = "";

	/* unknown (not Linux): the allocations say */
	if (skipper_memory_available(&avail) || kv + w <= avail)
		return 0;
	if (weights)
		snprintf(besides, sizeof besides, " besides %.2f GiB of weights", w / gib);
	return skipper_fail(err, SKIPPER_ERR_NOMEM,
	                    "cpu backend: %d sequence%s of %d tokens need%s %.2f GiB of K/V cache (%s, %.1f KiB a token)%s, "
	                    "and %.2f GiB of memory is available: lower [model] ctx (--ctx)%s",
	                    n_seq, n_seq > 1 ? "s" : "", base->n_ctx, n_seq > 1 ? "" : "s", kv / gib,
	                    skipper_kv_type_name(base->kv_type), skipper_backend_kv_bytes(&m->hp, 1, base->kv_type) / 1024.0,
	                    besides, avail / gib, base->kv_type == SKIPPER_KV_F16 ? " or set [model] kv_type = q8_0 (--kv-type)" : "");
}

int skipper_backend_cpu_create(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
                               struct skipper_backend **out, struct skipper_error *err)
{
	struct cpu_backend *be;
	int rc;

	*out = NULL;
	if (!m || !o || o->n_ctx <= 0)
		return skipper_fail(err, SKIPPER_ERR_ARG, "cpu backend: n_ctx must be positive");
	if ((rc = cpu_check_model(m, err)))
		return rc;
	if (o->kv_type == SKIPPER_KV_Q8_0 && m->hp.head_dim % 32)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "cpu backend: a q8_0 K/V cache needs a head size that is a multiple of 32 (this "
		                    "model's is %d): use kv_type = f16", m->hp.head_dim);
	be = calloc(1, sizeof *be);
	if (!be)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: out of memory");
	const struct skipper_hparams *hp = &m->hp;
	be->base.ops = &cpu_ops;
	be->base.model = m;
	be->base.n_ctx = o->n_ctx;
	be->base.n_seq = 1;
	be->base.kv_type = o->kv_type;
	if ((rc = cpu_check_memory(&be->base, 1, 1, err))) {
		free(be);
		return rc;
	}
	be->K = cpu_kernels_select();
	const char *hp_env = getenv("SKIPPER_CPU_HUGEPAGES");
	be->huge_pages = !(hp_env && !strcmp(hp_env, "0"));
	be->n_threads = o->n_threads > 0 ? o->n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (be->n_threads < 1)
		be->n_threads = 1;
	be->n_embd = hp->n_embd;
	be->n_head = hp->n_head;
	be->n_kv = hp->n_head_kv;
	be->hd = hp->head_dim;
	be->q_dim = hp->n_head * hp->head_dim;
	be->kv_dim = hp->n_head_kv * hp->head_dim;
	be->n_ff = hp->n_ff;
	be->n_layer = hp->n_layer;
	be->n_vocab = hp->n_vocab;
	be->rope_dim = hp->rope_dim ? hp->rope_dim : hp->head_dim;
	be->rms_eps = hp->rms_eps;
	be->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
	be->xn_w = be->n_embd;
	if (be->n_ff > be->xn_w)
		be->xn_w = be->n_ff;
	if (be->q_dim > be->xn_w)
		be->xn_w = be->q_dim;

	size_t ne = (size_t)be->n_embd, C = CPU_CHUNK, L = (size_t)be->n_layer;
	be->kv_type = o->kv_type == SKIPPER_KV_Q8_0 ? CPU_KV_Q8_0 : CPU_KV_F16;
	be->kv_rb = cpu_kv_row_bytes(be->kv_type, be->hd);
	be->kv_seq = L * (size_t)be->n_kv * (size_t)o->n_ctx * be->kv_rb;
	size_t kvsz = be->kv_seq;
	be->rope_freq = malloc(sizeof(double) * (size_t)(be->rope_dim / 2 + 1));
	be->norm_attn = malloc(L * ne * sizeof(float));
	be->norm_ffn = malloc(L * ne * sizeof(float));
	be->norm_out = malloc(ne * sizeof(float));
	/* zeroed so that timing runs over never-written slots read finite values */
	be->k_cache = calloc(1, kvsz);
	be->v_cache = calloc(1, kvsz);
	be->h = malloc(C * ne * sizeof(float));
	be->xn = malloc(C * be->xn_w * sizeof(float));
	be->xq = malloc(C * (be->xn_w / 32) * sizeof(struct cpu_q8));
	be->xqk = aligned_alloc(64, C * ((size_t)be->xn_w / 256 + 1) * sizeof(struct cpu_q8k));
	be->xq_ff = malloc(C * (be->xn_w / 32) * sizeof(struct cpu_q8));
	be->xqk_ff = aligned_alloc(64, C * ((size_t)be->xn_w / 256 + 1) * sizeof(struct cpu_q8k));
	be->q = malloc(C * be->q_dim * sizeof(float));
	be->k = malloc(C * be->kv_dim * sizeof(float));
	be->v = malloc(C * be->kv_dim * sizeof(float));
	be->att = malloc(C * be->q_dim * sizeof(float));
	be->proj = malloc(C * ne * sizeof(float));
	be->gate = malloc(C * be->n_ff * sizeof(float));
	be->up = malloc(C * be->n_ff * sizeof(float));
	be->rope_cs = malloc(C * be->rope_dim * sizeof(float) + 1);
	be->logits = malloc((size_t)CPU_HEAD_CHUNK * be->n_vocab * sizeof(float));
	/* a thread's attention scores: 4 MiB, or one row's at the whole
	 * context where that is more; a task takes as many rows as they hold
	 * at its pass's context (cpu_layer.c), up to att_rows */
	size_t group = (size_t)(be->n_head / be->n_kv), full = group * (size_t)o->n_ctx;
	be->att_rows = CPU_CHUNK;
	be->att_floats = full > (1u << 20) ? full : (1u << 20);
	be->att_q = malloc((size_t)be->n_threads * be->att_rows * group * be->hd * sizeof(float));
	be->att_o = malloc((size_t)be->n_threads * be->att_rows * group * be->hd * sizeof(float));
	be->scores = malloc((size_t)be->n_threads * be->att_floats * sizeof(float));
	be->anc = malloc((size_t)be->n_threads * o->n_ctx * sizeof(int32_t));
	be->tp = skipper_threadpool_new(be->n_threads);
	be->lw = calloc(L, sizeof *be->lw);
	if (!be->lw || !be->rope_freq || !be->norm_attn || !be->norm_ffn || !be->norm_out || !be->k_cache ||
	    !be->v_cache || !be->h || !be->xn || !be->xq || !be->xqk || !be->xq_ff || !be->xqk_ff || !be->q || !be->k ||
	    !be->v || !be->att || !be->proj || !be->gate || !be->up || !be->rope_cs || !be->logits || !be->scores ||
	    !be->att_q || !be->att_o || !be->anc || !be->tp || cpu_grow_scratch(be, CPU_CHUNK, err)) {
		cpu_destroy(&be->base);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: out of memory (n_ctx %d)",
		                    o->n_ctx);
	}
	skipper_rope_freqs(m, be->rope_dim, be->rope_freq);
	if (cpu_load_weights(be)) {
		cpu_destroy(&be->base);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: out of memory");
	}
	*out = &be->base;
	return 0;
}

/* ---------- forward ---------- */

/* Copy the current states of the captured rows in chunk [r0, r0 + nr) for
 * capture point `point` (a layer, or a sub-layer boundary with cap_sublayers). */
static void capture(struct cpu_backend *be, const struct skipper_forward *fw, int point, int r0,
                    int nr)
{
	size_t ne = (size_t)be->n_embd;
	for (int c = 0; fw->n_cap_rows > 0 && c < fw->n_cap_layers; c++) {
		if (fw->cap_layers[c] != point)
			continue;
		for (int i = 0; i < fw->n_cap_rows; i++) {
			int r = fw->cap_rows[i] - r0;
			if (r >= 0 && r < nr)
				memcpy(fw->captures + ((size_t)i * fw->n_cap_layers + c) * ne,
				       be->h + (size_t)r * ne, ne * sizeof(float));
		}
	}
}

/* One row's logits out of the head: copied out, and its top-k (ids mapped
 * back from the subset). A task per row: a verify pass's rows on every
 * core. */
struct rows_job {
	struct cpu_backend *be;
	const struct skipper_forward *fw;
	const int *idx;
	int subset;
	size_t nl;
};

static void rows_task(void *p, int j, int thread)
{
	const struct rows_job *J = p;
	const struct skipper_forward *fw = J->fw;
	float *lg = J->be->logits + (size_t)j * (size_t)J->be->n_vocab;
	int o = J->idx[j];
	(void)thread;
	if (fw->logits)
		memcpy(fw->logits + (size_t)o * J->nl, lg, J->nl * sizeof(float));
	if (fw->top_k > 0) {
		int32_t *ids = fw->top_ids + (size_t)o * fw->top_k;
		cpu_topk(J->be->K, lg, (int)J->nl, fw->top_k, ids,
		         fw->top_probs ? fw->top_probs + (size_t)o * fw->top_k : NULL);
		/* a NaN never wins the top-1, so a row of them reads as id 0 */
		if (!isfinite(lg[ids[0]]))
			__atomic_store_n(&J->be->nonfinite, 1, __ATOMIC_RELAXED);
		for (int k = 0; J->subset && k < fw->top_k; k++)
			ids[k] = J->be->sub_ids[ids[k]];
	}
}

/* Head for the requested rows that fall in chunk [r0, r0 + nr): over the
 * whole vocabulary, or over the draft subset with its ids mapped back. */
static void head_chunk(struct cpu_backend *be, const struct skipper_forward *fw, int r0, int nr)
{
	int subset = fw->head_subset && be->sub_ids;
	size_t ne = (size_t)be->n_embd, nv = (size_t)be->n_vocab, nl = subset ? (size_t)be->sub_head.nc : nv;
	int idx[CPU_HEAD_CHUNK], m = 0;

	for (int i = 0; i <= fw->n_out; i++) {
		if (i < fw->n_out) {
			int r = fw->out_rows[i] - r0;
			if (r < 0 || r >= nr)
				continue;
			/* gather into proj, which is free once the layers are done */
			memcpy(be->proj + (size_t)m * ne, be->h + (size_t)r * ne, ne * sizeof(float));
			idx[m++] = i;
		}
		if (m == CPU_HEAD_CHUNK || (i == fw->n_out && m > 0)) {
			cpu_head_logits(be, be->proj, ne, m, subset);
			struct rows_job j = { be, fw, idx, subset, nl };
			skipper_threadpool_run(be->tp, rows_task, &j, m);
			m = 0;
		}
	}
}

/* A row's top logit was NaN or infinite: the model overflows. */
int cpu_nonfinite(const struct skipper_model_view *mdl, struct skipper_error *err)
{
	return skipper_fail(err, SKIPPER_ERR_BACKEND, "%s: " SKIPPER_BACKEND_NONFINITE,
	                    mdl->path ? mdl->path : mdl->name);
}

static int cpu_forward(struct skipper_backend *base, const struct skipper_forward *fw,
                       struct skipper_error *err)
{
	struct cpu_backend *be = cpu(base);
	const struct skipper_model_view *mdl = base->model;
	size_t ne = (size_t)be->n_embd;
	int32_t pos[CPU_CHUNK];
	int rc;

	be->nonfinite = 0;
	if (!fw->kv_write && (rc = cpu_grow_scratch(be, fw->n, err)))
		return rc;
	struct cpu_batch b = { .n = fw->n, .parent = fw->parent, .kv_write = fw->kv_write, .n_seg = fw->n_seg,
		               .seg = fw->seg };
	int k = 0; /* the segment of the row at hand */
	if (be->prof_on) {
		be->prof_multi = fw->n > 1;
		be->prof_t = cpu_now();
		be->prof_cat = SKIPPER_PROF_ROWWISE;
		be->prof.passes[be->prof_multi]++;
		be->prof.rows[be->prof_multi] += fw->n;
	}
	for (int r0 = 0; r0 < fw->n; r0 += CPU_CHUNK) {
		int nr = fw->n - r0 < CPU_CHUNK ? fw->n - r0 : CPU_CHUNK;
		for (int r = 0; r < nr; r++) {
			int32_t t = fw->tokens[r0 + r];
			skipper_dequant_row(mdl->tok_embd.type,
			               (const char *)mdl->tok_embd.data + (size_t)t * mdl->tok_embd.row_bytes,
			               be->h + r * ne, (int64_t)ne);
			while (r0 + r >= fw->seg[k].row0 + fw->seg[k].n)
				k++;
			pos[r] = fw->pos ? fw->pos[r0 + r] : fw->seg[k].n_past + r0 + r - fw->seg[k].row0;
		}
		cpu_rope_table(be, pos, nr, be->rope_cs);
		capture(be, fw, -1, r0, nr);
		for (int l = 0; l < be->n_layer; l++) {
			if (!(fw->skip_attn && fw->skip_attn[l]))
				cpu_attn_block(be, &b, l, r0, nr);
			if (fw->cap_sublayers)
				capture(be, fw, 2 * l, r0, nr);
			if (!(fw->skip_mlp && fw->skip_mlp[l]))
				cpu_mlp_block(be, l, nr);
			capture(be, fw, fw->cap_sublayers ? 2 * l + 1 : l, r0, nr);
		}
		head_chunk(be, fw, r0, nr);
	}
	if (be->prof_on) {
		cpu_prof_switch(be, SKIPPER_PROF_ROWWISE);
		be->prof.wait[be->prof_multi] += skipper_threadpool_waited(be->tp);
	}
	if (be->nonfinite)
		return cpu_nonfinite(mdl, err);
	return 0;
}

void cpu_prof_switch(struct cpu_backend *be, int kind)
{
	double t = cpu_now();
	be->prof.seconds[be->prof_multi][be->prof_cat] += t - be->prof_t;
	be->prof_t = t;
	be->prof_cat = kind;
}

static const struct skipper_backend_ops cpu_ops = {
	.timing = cpu_timing,
	.identity = cpu_identity,
	.set_head_subset = cpu_set_head_subset,
	.name = "cpu",
	.forward = cpu_forward,
	.kv_move = cpu_kv_move,
	.kv_read = cpu_kv_read,
	.sublayer = cpu_sublayer,
	.set_sequences = cpu_set_sequences,
	.head_argmax = cpu_head_argmax,
	.time_sublayer = cpu_time_sublayer,
	.destroy = cpu_destroy,
};
