/* The CPU backend: vtable, creation and the forward loop
 * (chunks of rows through the layers, then the head). Kernels live in
 * cpu_kernels_*.c, block pieces in cpu_layer.c, the head in cpu_head.c. */
#include "build-config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_backend.h"
#include "base/error.h"
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
	free(be);
}

static int check_weight(const struct skipper_weight *w, int64_t ne0, int64_t ne1, const char *what,
                        int layer, struct skipper_error *err)
{
	if (!w->data || cpu_wkind(w->type) < 0)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "cpu backend: %s (layer %d): missing or unsupported type %d", what,
		                    layer, w->type);
	if (w->ne0 != ne0 || w->ne1 != ne1)
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "cpu backend: %s (layer %d): shape %lldx%lld, expected %lldx%lld",
		                    what, layer, (long long)w->ne0, (long long)w->ne1, (long long)ne0,
		                    (long long)ne1);
	return 0;
}

static int check_model(const struct skipper_model_view *m, struct skipper_error *err)
{
	const struct skipper_hparams *hp = &m->hp;
	int rc;

	if (hp->n_embd <= 0 || hp->n_embd % 32 || hp->n_ff <= 0 || hp->n_ff % 32 ||
	    hp->n_head <= 0 || hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv ||
	    hp->head_dim <= 0 || hp->head_dim % 8 || hp->head_dim > CPU_MAX_HEAD_DIM || (hp->n_head * hp->head_dim) % 32 ||
	    hp->n_layer <= 0 || hp->n_vocab <= 0 || hp->rope_dim < 0 || hp->rope_dim % 2 ||
	    hp->rope_dim > hp->head_dim)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "cpu backend: unsupported hyper-parameters (n_embd %d, n_ff %d, "
		                    "heads %d/%d, head_dim %d, rope_dim %d): the kernels want n_embd, n_ff and "
		                    "heads x head_dim multiples of 32, head_dim a multiple of 8 up to %d, an even "
		                    "rope_dim up to head_dim, query heads a multiple of the KV heads",
		                    hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim,
		                    hp->rope_dim, CPU_MAX_HEAD_DIM);
	int64_t ne = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim,
		kvd = (int64_t)hp->n_head_kv * hp->head_dim;
	if ((rc = check_weight(&m->tok_embd, ne, hp->n_vocab, "token_embd", -1, err)) ||
	    (rc = check_weight(&m->output, ne, hp->n_vocab, "output", -1, err)) ||
	    (rc = check_weight(&m->out_norm, ne, 1, "output_norm", -1, err)))
		return rc;
	for (int l = 0; l < hp->n_layer; l++) {
		const struct skipper_layer *L = &m->layers[l];
		if ((rc = check_weight(&L->attn_norm, ne, 1, "attn_norm", l, err)) ||
		    (rc = check_weight(&L->ffn_norm, ne, 1, "ffn_norm", l, err)) ||
		    (rc = check_weight(&L->wq, ne, qd, "attn_q", l, err)) ||
		    (rc = check_weight(&L->wk, ne, kvd, "attn_k", l, err)) ||
		    (rc = check_weight(&L->wv, ne, kvd, "attn_v", l, err)) ||
		    (rc = check_weight(&L->wo, qd, ne, "attn_output", l, err)) ||
		    (rc = check_weight(&L->w_gate, ne, hp->n_ff, "ffn_gate", l, err)) ||
		    (rc = check_weight(&L->w_up, ne, hp->n_ff, "ffn_up", l, err)) ||
		    (rc = check_weight(&L->w_down, hp->n_ff, ne, "ffn_down", l, err)))
			return rc;
	}
	return 0;
}

static int grow_scratch(struct cpu_backend *be, int n, struct skipper_error *err)
{
	if (n <= be->scr_cap)
		return 0;
	size_t sz = (size_t)be->n_layer * n * be->kv_dim * sizeof(uint16_t);
	uint16_t *k = realloc(be->k_scr, sz);
	if (k)
		be->k_scr = k;
	uint16_t *v = k ? realloc(be->v_scr, sz) : NULL;
	if (v)
		be->v_scr = v;
	if (!k || !v)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: scratch K/V for %d rows", n);
	be->scr_cap = n;
	return 0;
}

/* The model's weights as the kernels run them, one task per weight (the
 * packing of a large model, and the zeroed pages it takes, on every
 * core); once packed into a copy of ours, the mapping's pages of a weight
 * leave the resident set (a tied LM head's are still read, row by row, as
 * the embeddings: they come back as needed). */
#define W_PER_LAYER 7

/* Weight t of the model in the order a decode step reads them: each
 * layer's (wq, wk, wv, wo, gate, up, down), then the output head. */
static void weight_at(struct cpu_backend *be, int t, const struct skipper_weight **src, struct cpu_weight **out)
{
	const struct skipper_model_view *m = be->base.model;
	*src = &m->output;
	*out = &be->head;
	if (t < be->n_layer * W_PER_LAYER) {
		const struct skipper_layer *L = &m->layers[t / W_PER_LAYER];
		struct cpu_layer_weights *W = &be->lw[t / W_PER_LAYER];
		const struct skipper_weight *s[W_PER_LAYER] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down };
		struct cpu_weight *o[W_PER_LAYER] = { &W->wq, &W->wk, &W->wv, &W->wo, &W->gate, &W->up, &W->down };
		*src = s[t % W_PER_LAYER];
		*out = o[t % W_PER_LAYER];
	}
}

struct weight_job {
	struct cpu_backend *be;
	size_t *at; /* weight t's copy at be->weights + at[t] */
};

static void weight_task(void *p, int t, int thread)
{
	const struct weight_job *j = p;
	const struct skipper_weight *src;
	struct cpu_weight *out;
	(void)thread;
	weight_at(j->be, t, &src, &out);
	cpu_weight_init(j->be, src, NULL, j->be->weights ? (char *)j->be->weights + j->at[t] : NULL, out);
	if (out->data != src->data && j->be->base.model->release)
		j->be->base.model->release(j->be->base.model, src->data, (uint64_t)src->row_bytes * (uint64_t)src->ne1);
}

/* Every weight copy into one block, laid out in the order a step reads
 * them: the small ones (a layer's attention projections, 1-2 MB on a
 * 1.5B model) then lie on huge pages too instead of each on small pages
 * of its own, and so do the tails of the large ones. Without the memory
 * for one block, each copy gets its own. */
static int load_weights(struct cpu_backend *be)
{
	int n = be->n_layer * W_PER_LAYER + 1;
	struct weight_job j = { be, malloc(sizeof(size_t) * (size_t)n) };
	if (!j.at)
		return -1;
	size_t total = 0;
	for (int t = 0; t < n; t++) {
		const struct skipper_weight *src;
		struct cpu_weight *out;
		weight_at(be, t, &src, &out);
		j.at[t] = total;
		total += cpu_weight_size(be, src);
	}
	if (total)
		be->weights = cpu_weight_alloc(total, be->huge_pages);
	skipper_threadpool_run(be->tp, weight_task, &j, n);
	free(j.at);
	return 0;
}

static const struct skipper_backend_ops cpu_ops;

int skipper_backend_cpu_create(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
                               struct skipper_backend **out, struct skipper_error *err)
{
	struct cpu_backend *be;
	int rc;

	*out = NULL;
	if (!m || !o || o->n_ctx <= 0)
		return skipper_fail(err, SKIPPER_ERR_ARG, "cpu backend: n_ctx must be positive");
	if ((rc = check_model(m, err)))
		return rc;
	be = calloc(1, sizeof *be);
	if (!be)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: out of memory");
	const struct skipper_hparams *hp = &m->hp;
	be->base.ops = &cpu_ops;
	be->base.model = m;
	be->base.n_ctx = o->n_ctx;
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
	size_t kvsz = L * (size_t)o->n_ctx * be->kv_dim * sizeof(uint16_t);
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
	/* attention tasks take as many rows as a thread's ~1 MiB of scores holds */
	size_t group = (size_t)(be->n_head / be->n_kv), per_row = group * (size_t)o->n_ctx;
	be->att_rows = per_row >= (1u << 18) ? 1 : (int)((1u << 18) / per_row);
	if (be->att_rows > CPU_CHUNK)
		be->att_rows = CPU_CHUNK;
	be->att_q = malloc((size_t)be->n_threads * be->att_rows * group * be->hd * sizeof(float));
	be->att_o = malloc((size_t)be->n_threads * be->att_rows * group * be->hd * sizeof(float));
	be->scores = malloc((size_t)be->n_threads * be->att_rows * per_row * sizeof(float));
	be->anc = malloc((size_t)be->n_threads * o->n_ctx * sizeof(int32_t));
	be->tp = skipper_threadpool_new(be->n_threads);
	be->lw = calloc(L, sizeof *be->lw);
	if (!be->lw || !be->rope_freq || !be->norm_attn || !be->norm_ffn || !be->norm_out || !be->k_cache ||
	    !be->v_cache || !be->h || !be->xn || !be->xq || !be->xqk || !be->xq_ff || !be->xqk_ff || !be->q || !be->k ||
	    !be->v || !be->att || !be->proj || !be->gate || !be->up || !be->rope_cs || !be->logits || !be->scores ||
	    !be->att_q || !be->att_o || !be->anc || !be->tp || grow_scratch(be, CPU_CHUNK, err)) {
		cpu_destroy(&be->base);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: out of memory (n_ctx %d)",
		                    o->n_ctx);
	}
	skipper_rope_freqs(m, be->rope_dim, be->rope_freq);
	for (int l = 0; l < be->n_layer; l++) {
		skipper_dequant_row(m->layers[l].attn_norm.type, m->layers[l].attn_norm.data,
		               be->norm_attn + l * ne, (int64_t)ne);
		skipper_dequant_row(m->layers[l].ffn_norm.type, m->layers[l].ffn_norm.data,
		               be->norm_ffn + l * ne, (int64_t)ne);
	}
	skipper_dequant_row(m->out_norm.type, m->out_norm.data, be->norm_out, (int64_t)ne);
	if (load_weights(be)) {
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
static int nonfinite_fail(const struct skipper_model_view *mdl, struct skipper_error *err)
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
	if (!fw->kv_write && (rc = grow_scratch(be, fw->n, err)))
		return rc;
	struct cpu_batch b = {
		.n = fw->n, .n_past = fw->n_past, .parent = fw->parent, .kv_write = fw->kv_write,
		.skip_attn = fw->skip_attn, .skip_mlp = fw->skip_mlp,
	};
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
			pos[r] = fw->pos ? fw->pos[r0 + r] : fw->n_past + r0 + r;
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
		return nonfinite_fail(mdl, err);
	return 0;
}

/* ---------- cache ---------- */

static int cpu_kv_move(struct skipper_backend *base, const int32_t *src, const int32_t *dst, int n,
                       struct skipper_error *err)
{
	struct cpu_backend *be = cpu(base);
	size_t hd = (size_t)be->hd;

	(void)err;
	for (int i = 0; i < n; i++) {
		if (src[i] == dst[i])
			continue;
		for (int l = 0; l < be->n_layer; l++)
			for (int g = 0; g < be->n_kv; g++) {
				size_t s = cpu_kv_at(be, l, g, src[i], base->n_ctx), d = cpu_kv_at(be, l, g, dst[i], base->n_ctx);
				memmove(be->k_cache + d, be->k_cache + s, hd * sizeof(uint16_t));
				memmove(be->v_cache + d, be->v_cache + s, hd * sizeof(uint16_t));
			}
	}
	return 0;
}

static int cpu_kv_read(struct skipper_backend *base, int layer, int slot, float *k, float *v,
                       struct skipper_error *err)
{
	struct cpu_backend *be = cpu(base);
	(void)err;
	for (int g = 0; g < be->n_kv; g++) {
		size_t off = cpu_kv_at(be, layer, g, slot, base->n_ctx);
		for (int i = g * be->hd; i < (g + 1) * be->hd; i++, off++) {
			if (k)
				k[i] = cpu_f16_to_f32(be->k_cache[off]);
			if (v)
				v[i] = cpu_f16_to_f32(be->v_cache[off]);
		}
	}
	return 0;
}

/* ---------- services for policies ---------- */

static int cpu_sublayer(struct skipper_backend *base, int kind, int layer, int n, float *states,
                        const int32_t *pos, int n_past, struct skipper_error *err)
{
	struct cpu_backend *be = cpu(base);
	size_t ne = (size_t)be->n_embd;
	int32_t p[CPU_CHUNK];
	int rc;

	if ((rc = grow_scratch(be, n, err)))
		return rc;
	struct cpu_batch b = { .n = n, .n_past = n_past, .parent = NULL, .kv_write = 0 };
	int prof = be->prof_on; /* a policy's service, not a pass */
	be->prof_on = 0;
	for (int r0 = 0; r0 < n; r0 += CPU_CHUNK) {
		int nr = n - r0 < CPU_CHUNK ? n - r0 : CPU_CHUNK;
		memcpy(be->h, states + (size_t)r0 * ne, (size_t)nr * ne * sizeof(float));
		if (kind == SKIPPER_ATTN) {
			for (int r = 0; r < nr; r++)
				p[r] = pos ? pos[r0 + r] : n_past + r0 + r;
			cpu_rope_table(be, p, nr, be->rope_cs);
			cpu_attn_block(be, &b, layer, r0, nr);
		} else {
			cpu_mlp_block(be, layer, nr);
		}
		memcpy(states + (size_t)r0 * ne, be->h, (size_t)nr * ne * sizeof(float));
	}
	be->prof_on = prof;
	return 0;
}

static int cpu_head_argmax(struct skipper_backend *base, int n, const float *states, int32_t *ids,
                           struct skipper_error *err)
{
	struct cpu_backend *be = cpu(base);
	size_t ne = (size_t)be->n_embd;
	int prof = be->prof_on; /* a policy's service, not a pass */
	be->prof_on = 0;
	for (int r0 = 0; r0 < n; r0 += CPU_HEAD_CHUNK) {
		int nr = n - r0 < CPU_HEAD_CHUNK ? n - r0 : CPU_HEAD_CHUNK;
		cpu_head_logits(be, states + (size_t)r0 * ne, ne, nr, 0);
		for (int r = 0; r < nr; r++) {
			const float *lg = be->logits + (size_t)r * be->n_vocab;
			int32_t id = cpu_argmax(lg, be->n_vocab);
			if (!isfinite(lg[id])) {
				be->prof_on = prof;
				return nonfinite_fail(base->model, err);
			}
			ids[r0 + r] = id;
		}
	}
	be->prof_on = prof;
	return 0;
}

static int cpu_time_sublayer(struct skipper_backend *base, int kind, int layer, int ctx_len,
                             double *seconds, struct skipper_error *err)
{
	struct cpu_backend *be = cpu(base);
	size_t ne = (size_t)be->n_embd;
	float *st;
	int rc = 0, reps = 0;

	st = malloc(ne * sizeof *st); /* owned here, freed below */
	if (!st)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: out of memory");
	/* a unit-scale state: the norm makes the magnitude irrelevant for time */
	for (size_t i = 0; i < ne; i++)
		st[i] = (float)((i * 37 % 17) - 8) / 8.0f;
	rc = cpu_sublayer(base, kind, layer, 1, st, NULL, ctx_len, err); /* warm-up */
	double t0 = cpu_now(), t = t0;
	/* at least 3 runs and ~2 ms of work; cap the count for tiny layers */
	while (!rc && (reps < 3 || (t - t0 < 2e-3 && reps < 1000))) {
		for (size_t i = 0; i < ne; i++)
			st[i] = (float)((i * 37 % 17) - 8) / 8.0f;
		rc = cpu_sublayer(base, kind, layer, 1, st, NULL, ctx_len, err);
		reps++;
		t = cpu_now();
	}
	free(st);
	if (!rc)
		*seconds = (t - t0) / reps;
	return rc;
}

static int cpu_set_head_subset(struct skipper_backend *base, const int32_t *ids, int n,
                               struct skipper_error *err)
{
	struct cpu_backend *be = cpu(base);
	const struct skipper_weight *out = &base->model->output;
	uint8_t *data = NULL;
	int32_t *copy = NULL;

	if (n > 0 && (!(data = malloc(out->row_bytes * (size_t)n)) || !(copy = malloc(sizeof *copy * (size_t)n)))) {
		free(data);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: head subset of %d rows", n);
	}
	/* the subset's rows side by side: one contiguous matrix to stream */
	for (int i = 0; i < n; i++) {
		memcpy(data + out->row_bytes * (size_t)i, (const uint8_t *)out->data + out->row_bytes * (size_t)ids[i],
		       out->row_bytes);
		copy[i] = ids[i];
	}
	free(be->sub_ids);
	cpu_weight_free(&be->sub_head);
	struct skipper_weight sub = *out;
	sub.ne1 = n;
	sub.data = data;
	cpu_weight_init(be, &sub, data, NULL, &be->sub_head);
	be->sub_ids = copy;
	return 0;
}

void cpu_prof_switch(struct cpu_backend *be, int kind)
{
	double t = cpu_now();
	be->prof.seconds[be->prof_multi][be->prof_cat] += t - be->prof_t;
	be->prof_t = t;
	be->prof_cat = kind;
}

static void cpu_profile(struct skipper_backend *base, int on, struct skipper_backend_profile *out)
{
	struct cpu_backend *be = cpu(base);
	if (on && !be->prof_on) {
		memset(&be->prof, 0, sizeof be->prof);
		skipper_threadpool_waited(be->tp);
	}
	be->prof_on = on;
	skipper_threadpool_timing(be->tp, on);
	if (out)
		*out = be->prof;
}

static const struct skipper_backend_ops cpu_ops = {
	.profile = cpu_profile,
	.set_head_subset = cpu_set_head_subset,
	.name = "cpu",
	.forward = cpu_forward,
	.kv_move = cpu_kv_move,
	.kv_read = cpu_kv_read,
	.sublayer = cpu_sublayer,
	.head_argmax = cpu_head_argmax,
	.time_sublayer = cpu_time_sublayer,
	.destroy = cpu_destroy,
};
