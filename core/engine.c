/* The draft / verify / accept loop. Acceptance is decided here and only
 * here, so no policy can change the output: greedy output equals greedy
 * autoregressive output token for token, and sampled output follows the
 * target distribution (speculative sampling, multi-candidate for trees). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "error.h"
#include "quant.h"

#define MAX_DRAFT 32        /* chain tokens per round */
#define MAX_NODES 128       /* tree nodes per round (root excluded) */

struct skipper_engine {
	struct skipper_backend *be;
	const struct skipper_tokenizer *tok;
	struct skipper_policy_instance *pol; /* NULL = autoregressive */
	int n_vocab, n_layer, top_k;
	uint64_t request_id;

	uint8_t *skip_attn, *skip_mlp;
	/* draft chain */
	int32_t d_tok[MAX_DRAFT];
	float d_prob[MAX_DRAFT];
	int32_t *d_top_ids;   /* [MAX_DRAFT][top_k] */
	float *d_top_probs;
	float *d_q;           /* [MAX_DRAFT][n_vocab] processed draft distributions (sampling) */
	/* verification batch (root + nodes) */
	int32_t b_tok[MAX_NODES + 1], b_pos[MAX_NODES + 1], b_parent[MAX_NODES + 1], b_rows[MAX_NODES + 1];
	int32_t b_depth[MAX_NODES + 1];
	int32_t v_top[MAX_NODES + 1];
	float v_top_p[MAX_NODES + 1];
	float *logits;        /* [MAX_NODES + 1][n_vocab] */
	float *p, *q;         /* [n_vocab] work distributions */
	struct skipper_prob_id *scratch;
	/* tree handed to the policy */
	int32_t t_tok[MAX_NODES], t_parent[MAX_NODES], t_chain[MAX_NODES];
	/* output so far */
	int32_t *gen;
	int gen_cap;
	int committed;        /* KV length visible to compute services */
	/* captures the policy needs (skipper_needs) */
	uint64_t needs;
	int prompt_rows;
	int n_points;         /* per captured row: n_layer + 1, or 2 n_layer + 1 (SUBLAYER_STATES) */
	int cap_sub;          /* captures at sub-layer boundaries (backend cap_sublayers) */
	int32_t cap_layers[1025];
	float *cap;           /* [MAX_NODES + 1][n_points][n_embd] */
	float *cap_sel;       /* the selected rows, handed to on_accept */
	int32_t cap_pos[MAX_NODES + 1], cap_tok[MAX_NODES + 1];
	/* fixed plan (no policy): host->trial */
	uint8_t *fixed_attn, *fixed_mlp;
	int fixed_max_draft;
	double fixed_threshold;
	double fixed_alpha, fixed_eps, fixed_beta1, fixed_beta2, fixed_ar; /* adaptive threshold (trial) */
	struct skipper_rng rng;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void skipper_engine_set_fixed_plan(struct skipper_engine *e, const uint8_t *skip_attn, const uint8_t *skip_mlp,
                                   int max_draft, double threshold)
{
	size_t n = (size_t)e->n_layer;
	if (!e->fixed_attn)
		e->fixed_attn = calloc(n, 1);
	if (!e->fixed_mlp)
		e->fixed_mlp = calloc(n, 1);
	if (!e->fixed_attn || !e->fixed_mlp) {
		e->fixed_max_draft = 0; /* out of memory: plain decoding is still correct */
		return;
	}
	memset(e->fixed_attn, 0, n);
	memset(e->fixed_mlp, 0, n);
	if (skip_attn)
		memcpy(e->fixed_attn, skip_attn, n);
	if (skip_mlp)
		memcpy(e->fixed_mlp, skip_mlp, n);
	e->fixed_max_draft = max_draft;
	e->fixed_threshold = threshold;
}

void skipper_engine_set_fixed_adaptive(struct skipper_engine *e, double alpha, double eps, double beta1,
                                       double beta2)
{
	e->fixed_alpha = alpha;
	e->fixed_eps = eps;
	e->fixed_beta1 = beta1;
	e->fixed_beta2 = beta2;
}

/* The Self-SD exit rule for trials; the same rule as bo-static's runtime
 * (plugins/common/adaptive.h), restated because the core does not link the
 * plugins' helpers. */
static void fixed_adapt(struct skipper_engine *e, int first_round, int accepted, int drafted)
{
	double are, tmp;
	if (e->fixed_alpha <= 0 || drafted <= 0)
		return;
	are = (double)accepted / drafted;
	e->fixed_ar = first_round ? are : e->fixed_beta1 * e->fixed_ar + (1 - e->fixed_beta1) * are;
	tmp = e->fixed_ar <= e->fixed_alpha ? e->fixed_threshold + e->fixed_eps : e->fixed_threshold - e->fixed_eps;
	e->fixed_threshold = e->fixed_beta2 * e->fixed_threshold + (1 - e->fixed_beta2) * tmp;
}

struct skipper_backend *skipper_engine_backend(struct skipper_engine *e) { return e->be; }

int skipper_engine_committed(const struct skipper_engine *e) { return e->committed; }

void skipper_engine_free(struct skipper_engine *e)
{
	if (!e)
		return;
	free(e->skip_attn);
	free(e->skip_mlp);
	free(e->d_top_ids);
	free(e->d_top_probs);
	free(e->d_q);
	free(e->logits);
	free(e->p);
	free(e->q);
	free(e->scratch);
	free(e->gen);
	free(e->fixed_attn);
	free(e->fixed_mlp);
	free(e->cap);
	free(e->cap_sel);
	free(e);
}

int skipper_engine_new(struct skipper_backend *be, const struct skipper_tokenizer *tok,
                       struct skipper_policy_instance *pol, struct skipper_engine **out,
                       struct skipper_error *err)
{
	struct skipper_engine *e = calloc(1, sizeof *e);
	size_t nv;

	if (!e)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	e->be = be;
	e->tok = tok;
	e->pol = pol;
	e->n_vocab = be->model->hp.n_vocab;
	e->n_layer = be->model->hp.n_layer;
	e->top_k = 1;
	if (pol) {
		const struct skipper_needs *nd = skipper_policy_instance_needs(pol);
		if (nd->flags & SKIPPER_NEED_TOPK)
			e->top_k = nd->top_k > 0 ? nd->top_k : 10;
		e->needs = nd->flags;
		e->prompt_rows = nd->prompt_rows > 0 ? nd->prompt_rows : 1;
		if (e->prompt_rows > MAX_NODES + 1)
			e->prompt_rows = MAX_NODES + 1;
	}
	/* SUBLAYER_STATES only modifies the *_STATES captures */
	e->cap_sub = (e->needs & SKIPPER_NEED_SUBLAYER_STATES) != 0;
	e->n_points = e->cap_sub ? 2 * e->n_layer + 1 : e->n_layer + 1;
	if (e->needs & (SKIPPER_NEED_LAST_LAYER_STATES | SKIPPER_NEED_ACCEPTED_STATES)) {
		size_t per = (size_t)e->n_points * be->model->hp.n_embd;
		if (e->n_points > (int)(sizeof e->cap_layers / sizeof e->cap_layers[0])) {
			skipper_engine_free(e);
			return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "state captures: %d layers is too many",
			                    e->n_layer);
		}
		for (int l = 0; l < e->n_points; l++)
			e->cap_layers[l] = l - 1;
		e->cap = malloc((MAX_NODES + 1) * per * sizeof *e->cap);
		e->cap_sel = malloc((MAX_NODES + 1) * per * sizeof *e->cap_sel);
		if (!e->cap || !e->cap_sel) {
			skipper_engine_free(e);
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory (state captures)");
		}
	}
	if (e->top_k > SKIPPER_TOPK_MAX)
		e->top_k = SKIPPER_TOPK_MAX;
	nv = (size_t)e->n_vocab;
	e->skip_attn = calloc((size_t)e->n_layer, 1);
	e->skip_mlp = calloc((size_t)e->n_layer, 1);
	e->d_top_ids = calloc((size_t)MAX_DRAFT * e->top_k, sizeof *e->d_top_ids);
	e->d_top_probs = calloc((size_t)MAX_DRAFT * e->top_k, sizeof *e->d_top_probs);
	e->p = malloc(nv * sizeof *e->p);
	e->q = malloc(nv * sizeof *e->q);
	e->scratch = malloc(nv * sizeof *e->scratch);
	if (!e->skip_attn || !e->skip_mlp || !e->d_top_ids || !e->d_top_probs || !e->p || !e->q || !e->scratch) {
		skipper_engine_free(e);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	*out = e;
	return SKIPPER_OK;
}

/* Buffers only sampling needs, allocated on first use. */
static int need_sampling_buffers(struct skipper_engine *e, struct skipper_error *err)
{
	size_t nv = (size_t)e->n_vocab;
	if (!e->logits)
		e->logits = malloc((MAX_NODES + 1) * nv * sizeof *e->logits);
	if (!e->d_q)
		e->d_q = malloc(MAX_DRAFT * nv * sizeof *e->d_q);
	if (!e->logits || !e->d_q)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory (sampling buffers)");
	return SKIPPER_OK;
}

static int push_generated(struct skipper_engine *e, int n, int32_t tok)
{
	if (n == e->gen_cap) {
		int cap = e->gen_cap ? e->gen_cap * 2 : 256;
		int32_t *g = realloc(e->gen, (size_t)cap * sizeof *g);
		if (!g)
			return SKIPPER_ERR_NOMEM;
		e->gen = g;
		e->gen_cap = cap;
	}
	e->gen[n] = tok;
	return SKIPPER_OK;
}

/* Softmax probability of token under raw logits (temperature 1). */
static float raw_prob(const float *logits, int n, int32_t tok)
{
	float mx = logits[skipper_argmax(logits, n)];
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += exp((double)logits[i] - mx);
	return (float)(exp((double)logits[tok] - mx) / sum);
}

/* Residual distribution norm(max(0, p - q)) into p; returns 0 if empty. */
static int residual(float *p, const float *q, int n)
{
	double sum = 0;
	for (int i = 0; i < n; i++) {
		float d = p[i] - q[i];
		p[i] = d > 0 ? d : 0;
		sum += p[i];
	}
	if (sum <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		p[i] = (float)(p[i] / sum);
	return 1;
}

/* Copy captured rows (batch rows, all layer points) into cap_sel and
 * describe them; row r sits at position base + its index in the path. */
static void select_states(struct skipper_engine *e, const int *rows, int n, int base, struct skipper_states *st)
{
	size_t per = (size_t)e->n_points * e->be->model->hp.n_embd;
	for (int i = 0; i < n; i++) {
		memcpy(&e->cap_sel[i * per], &e->cap[(size_t)rows[i] * per], per * sizeof *e->cap);
		e->cap_pos[i] = base + i;
		e->cap_tok[i] = e->b_tok[rows[i]];
	}
	if (n == 1) /* only the last committed row: its position is base + path length */
		e->cap_pos[0] = base + e->b_depth[rows[0]];
	*st = (struct skipper_states){ .n_rows = n, .n_points = e->n_points, .n_embd = e->be->model->hp.n_embd,
	                               .pos = e->cap_pos, .token = e->cap_tok, .data = e->cap_sel };
}

struct round_ctx {
	const struct skipper_gen_params *gp;
	int greedy;
	int n_past;           /* committed KV length */
	int32_t root;         /* last committed token, not yet in the KV cache */
	int n_gen;
	int done;
	int capture;          /* this round's verify pass captures states (plan.capture) */
	skipper_token_cb cb;
	void *user;
	struct skipper_run_stats *st;
};

/* Commit one output token: record, report, check EOS / max / callback. */
static int emit(struct skipper_engine *e, struct round_ctx *r, int32_t tok)
{
	if (r->done)
		return SKIPPER_OK;
	if (push_generated(e, r->n_gen, tok))
		return SKIPPER_ERR_NOMEM;
	r->n_gen++;
	if (r->cb && r->cb(r->user, tok))
		r->done = 1;
	if (skipper_tokenizer_is_eog(e->tok, tok) || r->n_gen >= r->gp->max_tokens)
		r->done = 1;
	return SKIPPER_OK;
}

/* Draft up to plan->max_draft chain tokens with the plan's mask.
 * Returns the number drafted in *n_out. */
static int draft(struct skipper_engine *e, struct round_ctx *r, int max_draft, int *n_out,
                 struct skipper_error *err)
{
	int32_t x = r->root;
	int n = 0, rc;
	while (n < max_draft) {
		int32_t pos = r->n_past + n, row = 0;
		float *lg = r->greedy ? NULL : e->logits;
		struct skipper_forward fw = {
			.n = 1, .tokens = &x, .pos = &pos, .n_past = r->n_past + n, .kv_write = 1,
			.skip_attn = e->skip_attn, .skip_mlp = e->skip_mlp,
			.n_out = 1, .out_rows = &row, .top_k = e->top_k,
			.top_ids = &e->d_top_ids[n * e->top_k], .top_probs = &e->d_top_probs[n * e->top_k],
			.logits = lg,
		};
		if ((rc = e->be->ops->forward(e->be, &fw, err)))
			return rc;
		if (r->greedy) {
			e->d_tok[n] = e->d_top_ids[n * e->top_k];
			e->d_prob[n] = e->d_top_probs[n * e->top_k];
		} else {
			float *q = &e->d_q[(size_t)n * e->n_vocab];
			skipper_process_logits(&r->gp->sampling, lg, e->n_vocab, q, e->scratch);
			e->d_tok[n] = skipper_sample_probs(q, e->n_vocab, &e->rng);
			e->d_prob[n] = raw_prob(lg, e->n_vocab, e->d_tok[n]);
		}
		x = e->d_tok[n];
		n++;
		if (!e->pol && e->fixed_threshold > 0 && e->d_top_probs[(n - 1) * e->top_k] < e->fixed_threshold)
			break;
		if (e->pol) {
			int stop = 0;
			struct skipper_step step = {
				.index = n - 1, .token = x, .prob = e->d_prob[n - 1], .top_k = e->top_k,
				.top_ids = &e->d_top_ids[(n - 1) * e->top_k],
				.top_probs = &e->d_top_probs[(n - 1) * e->top_k],
				.max_draft = max_draft, .n_committed = r->n_past,
				.is_eos = skipper_tokenizer_is_eog(e->tok, x),
			};
			double t0 = now();
			rc = skipper_policy_should_exit(e->pol, &step, &stop, err);
			r->st->t_policy += now() - t0;
			if (rc)
				return rc;
			if (stop)
				break;
		}
		/* nothing follows an end-of-generation token: the round ends there */
		if (skipper_tokenizer_is_eog(e->tok, x))
			break;
	}
	*n_out = n;
	return SKIPPER_OK;
}

/* Build the verification batch from the policy's tree (or the chain).
 * Row 0 is the root; node i is row i + 1. In sampling mode only nodes
 * hanging off the root or a chain node are kept, and siblings of a chain
 * token are redrawn from the draft distribution without replacement, which
 * is what makes multi-candidate rejection sampling exact. */
static int build_batch(struct skipper_engine *e, struct round_ctx *r, int n_draft, int *n_rows,
                       struct skipper_error *err)
{
	struct skipper_tree tree = { .capacity = MAX_NODES, .tokens = e->t_tok, .parent = e->t_parent,
	                             .chain_node = e->t_chain };
	int rc, n;

	if (e->pol && n_draft > 0) {
		struct skipper_draft d = { .root = r->root, .n = n_draft, .tokens = e->d_tok, .probs = e->d_prob,
		                           .top_k = e->top_k, .top_ids = e->d_top_ids, .top_probs = e->d_top_probs,
		                           .n_committed = r->n_past };
		double t0 = now();
		rc = skipper_policy_verify(e->pol, &d, &tree, err);
		r->st->t_policy += now() - t0;
		if (rc)
			return rc;
		if (r->n_past + 1 + tree.n > e->be->n_ctx)
			tree.n = 0; /* near the end of the context only the chain fits */
	}
	if (tree.n == 0) { /* the chain */
		for (int i = 0; i < n_draft; i++) {
			e->t_tok[i] = e->d_tok[i];
			e->t_parent[i] = i - 1;
		}
		tree.n = n_draft;
	}
	e->b_tok[0] = r->root;
	e->b_parent[0] = -1;
	e->b_depth[0] = 0;
	n = 1;
	for (int i = 0; i < tree.n; i++) {
		int par = tree.parent[i]; /* checked by skipper_policy_verify */
		e->b_tok[n] = tree.tokens[i];
		e->b_parent[n] = par + 1; /* node index -> batch row */
		e->b_depth[n] = e->b_depth[par + 1] + 1;
		n++;
	}
	for (int i = 0; i < n; i++)
		e->b_pos[i] = r->n_past + e->b_depth[i];
	*n_rows = n;
	return SKIPPER_OK;
}

/* Row of the chain token at depth d (1-based) or -1: the chain is the path of
 * rows whose tokens equal d_tok[0..]. */
static int chain_row(struct skipper_engine *e, int n_rows, int depth, int n_draft)
{
	int row = 0;
	for (int d = 1; d <= depth; d++) {
		int found = -1;
		if (d > n_draft)
			return -1;
		for (int i = 1; i < n_rows && found < 0; i++)
			if (e->b_parent[i] == row && e->b_tok[i] == e->d_tok[d - 1])
				found = i;
		if (found < 0)
			return -1;
		row = found;
	}
	return row;
}

/* Greedy: the longest root path whose tokens match the target argmax at
 * their parent; first such path on ties. path[] gets the accepted rows. */
static int accept_greedy(struct skipper_engine *e, int n_rows, int32_t *path, int32_t *bonus)
{
	int len = 0, row = 0;

	for (;;) {
		int next = -1;
		for (int i = row + 1; i < n_rows; i++) {
			if (e->b_parent[i] == row && e->b_tok[i] == e->v_top[row]) {
				next = i;
				break;
			}
		}
		if (next < 0)
			break;
		path[len++] = next;
		row = next;
	}
	*bonus = e->v_top[row];
	return len;
}

/* Speculative sampling over the spine (chain) with leaf siblings. */
static int accept_sample(struct skipper_engine *e, struct round_ctx *r, int n_rows, int n_draft,
                         int32_t *path, int32_t *bonus)
{
	int nv = e->n_vocab, len = 0, row = 0;
	float *p = e->p, *q = e->q;

	skipper_process_logits(&r->gp->sampling, &e->logits[0], nv, p, e->scratch);
	for (int depth = 1; depth <= n_draft; depth++) {
		const float *qj = &e->d_q[(size_t)(depth - 1) * nv];
		int accepted = -1;
		memcpy(q, qj, (size_t)nv * sizeof *q);
		for (int i = 1; i < n_rows; i++) {
			double qs = 0;
			int32_t x;
			if (e->b_parent[i] != row)
				continue;
			x = e->b_tok[i];
			if (q[x] <= 0)
				continue; /* already tried or impossible under q~ */
			if (skipper_rng_double(&e->rng) < fmin(1.0, (double)p[x] / q[x])) {
				accepted = i;
				break;
			}
			/* rejected: p <- norm(max(0, p - q~)), q~ <- q without x */
			if (!residual(p, q, nv))
				break;
			q[x] = 0;
			for (int k = 0; k < nv; k++)
				qs += q[k];
			if (qs <= 0)
				break;
			for (int k = 0; k < nv; k++)
				q[k] = (float)(q[k] / qs);
		}
		if (accepted < 0)
			break;
		path[len++] = accepted;
		row = accepted;
		skipper_process_logits(&r->gp->sampling, &e->logits[(size_t)row * nv], nv, p, e->scratch);
		if (chain_row(e, n_rows, depth, n_draft) != row)
			break; /* an accepted sibling is a leaf */
	}
	*bonus = skipper_sample_probs(p, nv, &e->rng);
	return len;
}

/* Replace the siblings of each chain node by draws without replacement
 * from that depth's draft distribution (sampling mode). */
static void redraw_siblings(struct skipper_engine *e, int n_rows, int n_draft)
{
	int nv = e->n_vocab;
	for (int depth = 1; depth <= n_draft; depth++) {
		int parent = chain_row(e, n_rows, depth - 1, n_draft), chain = chain_row(e, n_rows, depth, n_draft);
		float *q = e->q;
		if (parent < 0 || chain < 0)
			return;
		memcpy(q, &e->d_q[(size_t)(depth - 1) * nv], (size_t)nv * sizeof *q);
		q[e->b_tok[chain]] = 0;
		for (int i = 1; i < n_rows; i++) {
			if (e->b_parent[i] != parent || i == chain)
				continue;
			int32_t x = skipper_sample_probs(q, nv, &e->rng);
			if (q[x] <= 0)
				x = e->b_tok[chain]; /* q exhausted: a duplicate is rejected harmlessly */
			e->b_tok[i] = x;
			q[x] = 0;
		}
	}
}

/* Drop tree nodes that sampling cannot verify (parent off the spine). */
static int prune_to_spine(struct skipper_engine *e, int n_rows, int n_draft)
{
	int map[MAX_NODES + 1], n = 1;
	map[0] = 0;
	for (int i = 1; i < n_rows; i++) {
		int par = e->b_parent[i], keep = 0;
		for (int d = 0; d <= n_draft && !keep; d++)
			keep = map[par] >= 0 && chain_row(e, n_rows, d, n_draft) == par;
		map[i] = keep ? n : -1;
		if (keep) {
			e->b_tok[n] = e->b_tok[i];
			e->b_parent[n] = map[par];
			e->b_depth[n] = e->b_depth[i];
			e->b_pos[n] = e->b_pos[i];
			n++;
		}
	}
	return n;
}

static int verify_and_accept(struct skipper_engine *e, struct round_ctx *r, int n_draft,
                             struct skipper_error *err)
{
	int32_t path[MAX_NODES], bonus, acc_tok[MAX_NODES], acc_node[MAX_NODES];
	int n_rows = 0, rc, n_acc, chain = 1;
	double t0;

	if ((rc = build_batch(e, r, n_draft, &n_rows, err)))
		return rc;
	for (int i = 1; i < n_rows; i++)
		if (e->b_parent[i] != i - 1)
			chain = 0;
	if (!r->greedy && !chain) {
		n_rows = prune_to_spine(e, n_rows, n_draft);
		redraw_siblings(e, n_rows, n_draft);
	}
	for (int i = 0; i < n_rows; i++)
		e->b_rows[i] = i;

	t0 = now();
	{
		struct skipper_forward fw = {
			.n = n_rows, .tokens = e->b_tok, .pos = e->b_pos, .parent = chain ? NULL : e->b_parent,
			.n_past = r->n_past, .kv_write = 1, .n_out = n_rows, .out_rows = e->b_rows, .top_k = 1,
			.top_ids = e->v_top, .top_probs = e->v_top_p, .logits = r->greedy ? NULL : e->logits,
		};
		if (r->capture) {
			fw.n_cap_layers = e->n_points;
			fw.cap_layers = e->cap_layers;
			fw.cap_sublayers = e->cap_sub;
			fw.n_cap_rows = n_rows;
			fw.cap_rows = e->b_rows;
			fw.captures = e->cap;
		}
		if ((rc = e->be->ops->forward(e->be, &fw, err)))
			return rc;
	}
	r->st->t_verify += now() - t0;
	r->st->rounds++;

	n_acc = r->greedy ? accept_greedy(e, n_rows, path, &bonus) : accept_sample(e, r, n_rows, n_draft, path, &bonus);

	/* Compact the accepted path to contiguous slots after the root. */
	if (!chain && n_acc > 0) {
		int32_t src[MAX_NODES], dst[MAX_NODES], m = 0;
		for (int i = 0; i < n_acc; i++) {
			if (path[i] != i + 1) {
				src[m] = r->n_past + path[i];
				dst[m] = r->n_past + i + 1;
				m++;
			}
		}
		if (m && (rc = e->be->ops->kv_move(e->be, src, dst, m, err)))
			return rc;
	}
	for (int i = 0; i < n_acc; i++) {
		acc_tok[i] = e->b_tok[path[i]];
		acc_node[i] = path[i] - 1;
	}
	r->st->drafted += n_draft;
	r->st->accepted += n_acc;
	{
		/* The root's K/V is now committed, and each emitted accepted token's
		 * except the last emitted token (it becomes the next root, exactly as
		 * in autoregressive decoding). Generation may stop inside the
		 * accepted run (EOS, max_tokens): what follows is not committed. */
		int emitted = 0;
		for (int i = 0; i < n_acc && !r->done; i++, emitted++)
			if ((rc = emit(e, r, acc_tok[i])))
				return skipper_fail(err, rc, "out of memory");
		if (!r->done) {
			if ((rc = emit(e, r, bonus)))
				return skipper_fail(err, rc, "out of memory");
			r->n_past += n_acc + 1;
		} else {
			r->n_past += emitted;
		}
		e->committed = r->n_past;
	}
	r->root = bonus;

	if (e->pol) {
		struct skipper_states states;
		int sel_rows[MAX_NODES + 1], n_sel = 0;
		if (r->capture) {
			/* the committed rows of this round: the root and the accepted
			 * path (ACCEPTED_STATES), or only the last of them */
			if (e->needs & SKIPPER_NEED_ACCEPTED_STATES) {
				sel_rows[n_sel++] = 0;
				for (int i = 0; i < n_acc; i++)
					sel_rows[n_sel++] = path[i];
			} else {
				sel_rows[n_sel++] = n_acc ? path[n_acc - 1] : 0;
			}
			select_states(e, sel_rows, n_sel, r->n_past - n_acc - 1, &states);
		}
		struct skipper_verdict v = {
			.round = r->st->rounds - 1, .n_drafted = n_draft, .n_verified = n_rows - 1, .n_accepted = n_acc,
			.accepted = acc_tok, .accepted_nodes = acc_node, .bonus = r->done ? -1 : bonus,
			.n_committed = r->n_past, .generated = e->gen, .n_generated = r->n_gen,
			.verify_seconds = now() - t0, .states = r->capture ? &states : NULL,
		};
		t0 = now();
		rc = skipper_policy_on_accept(e->pol, &v, err);
		r->st->t_policy += now() - t0;
		if (rc)
			return rc;
	}
	return SKIPPER_OK;
}

/* out += sum over n rows (stride floats apart) of rmsnorm(row) * w / n_total:
 * the model's final norm applied on the host to last-layer captures, since
 * the backend captures the residual stream before it. Rows are added in
 * order, so a mean built in pieces equals one built at once. */
static int add_final_norm_mean(const struct skipper_model *m, const float *rows, size_t stride, int n, int n_total,
                               float *out)
{
	int d = m->hp.n_embd;
	float *w = malloc(2 * (size_t)d * sizeof *w), *tmp;
	if (!w)
		return SKIPPER_ERR_NOMEM;
	tmp = w + d;
	skipper_dequant_row(m->out_norm.type, m->out_norm.data, w, d);
	for (int i = 0; i < n; i++) {
		const float *x = rows + (size_t)i * stride;
		double ss = 0;
		for (int k = 0; k < d; k++)
			ss += (double)x[k] * x[k];
		float scale = (float)(1.0 / sqrt(ss / d + m->hp.rms_eps));
		for (int k = 0; k < d; k++)
			tmp[k] = x[k] * scale * w[k];
		for (int k = 0; k < d; k++)
			out[k] += tmp[k] / n_total;
	}
	free(w);
	return SKIPPER_OK;
}

/* Full-model forward of tokens[0..n) after n_past committed slots (KV
 * written) capturing the last layer of every row into cap[n][n_embd]. */
static int forward_last_layer(struct skipper_engine *e, const int32_t *tokens, int n, int n_past, float *cap,
                              struct skipper_error *err)
{
	int32_t last = e->n_layer - 1, *rows = malloc((size_t)n * sizeof *rows);
	int rc;
	if (!rows)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		rows[i] = i;
	struct skipper_forward fw = { .n = n, .tokens = tokens, .n_past = n_past, .kv_write = 1, .n_cap_layers = 1,
	                              .cap_layers = &last, .n_cap_rows = n, .cap_rows = rows, .captures = cap };
	rc = e->be->ops->forward(e->be, &fw, err);
	free(rows);
	return rc;
}

int skipper_engine_prompt_mean(struct skipper_engine *e, const int32_t *prompt, int n, float *out,
                               struct skipper_error *err)
{
	const struct skipper_model *m = e->be->model;
	size_t d = (size_t)m->hp.n_embd;
	float *cap;
	int rc;

	if (n <= 0 || n > e->be->n_ctx)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "prompt of %d tokens for a context of %d", n, e->be->n_ctx);
	if (!(cap = malloc((size_t)n * d * sizeof *cap)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	memset(out, 0, d * sizeof *out);
	if (!(rc = forward_last_layer(e, prompt, n, 0, cap, err)) && add_final_norm_mean(m, cap, d, n, n, out))
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	free(cap);
	return rc;
}

/* The one full-model prefill of a request. Its last row gives the first
 * token (top-1 in e->v_top[0], logits in e->logits when sampling). Captures
 * what the policy needs from this pass: the last *st_rows prompt rows at
 * every state point into cap_sel (*_STATES), and with mean != NULL the mean
 * post-final-norm state of all rows (PROMPT_MEAN). With both, the rows
 * before the captured ones go in a first call that captures only their last
 * layer: batch invariance makes the split prefill equal to one call. */
static int prefill(struct skipper_engine *e, const int32_t *prompt, int n_prompt, int greedy, float *mean,
                   int *st_rows, struct skipper_error *err)
{
	const struct skipper_model *m = e->be->model;
	size_t d = (size_t)m->hp.n_embd;
	int n_rows = e->cap ? (n_prompt < e->prompt_rows ? n_prompt : e->prompt_rows) : 0;
	int split = e->cap && mean ? n_prompt - n_rows : 0, rc = SKIPPER_OK;
	float *lastcap = NULL; /* last-layer rows for the mean not in cap_sel */
	int n_last = mean ? (e->cap ? split : n_prompt) : 0;

	if (n_last > 0 && !(lastcap = malloc((size_t)n_last * d * sizeof *lastcap)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (split > 0)
		rc = forward_last_layer(e, prompt, split, 0, lastcap, err);
	if (!rc) {
		int32_t last = n_prompt - 1 - split, n = n_prompt - split, lastl = e->n_layer - 1, *rows = e->b_rows;
		struct skipper_forward fw = {
			.n = n, .tokens = prompt + split, .n_past = split, .kv_write = 1, .n_out = 1, .out_rows = &last,
			.top_k = 1, .top_ids = &e->v_top[0], .top_probs = &e->v_top_p[0], .logits = greedy ? NULL : e->logits,
		};
		if (e->cap) {
			for (int i = 0; i < n_rows; i++)
				e->b_rows[i] = n - n_rows + i;
			fw.n_cap_layers = e->n_points;
			fw.cap_layers = e->cap_layers;
			fw.cap_sublayers = e->cap_sub;
			fw.n_cap_rows = n_rows;
			fw.captures = e->cap_sel;
		} else if (mean) {
			if (!(rows = malloc((size_t)n * sizeof *rows)))
				rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
			for (int i = 0; !rc && i < n; i++)
				rows[i] = i;
			fw.n_cap_layers = 1;
			fw.cap_layers = &lastl;
			fw.n_cap_rows = n;
			fw.captures = lastcap;
		}
		fw.cap_rows = rows;
		if (!rc)
			rc = e->be->ops->forward(e->be, &fw, err);
		if (rows != e->b_rows)
			free(rows);
		for (int i = 0; e->cap && i < n_rows; i++)
			e->b_rows[i] += split;
	}
	if (!rc && mean) {
		memset(mean, 0, d * sizeof *mean);
		if (add_final_norm_mean(m, lastcap, d, n_last, n_prompt, mean) ||
		    (e->cap && add_final_norm_mean(m, e->cap_sel + (size_t)(e->n_points - 1) * d, (size_t)e->n_points * d,
		                                   n_rows, n_prompt, mean)))
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	free(lastcap);
	*st_rows = n_rows;
	return rc;
}

int skipper_engine_generate(struct skipper_engine *e, const int32_t *prompt, int n_prompt,
                            const struct skipper_gen_params *gp, skipper_token_cb cb, void *user,
                            struct skipper_run_stats *st, struct skipper_error *err)
{
	struct round_ctx r = { .gp = gp, .greedy = gp->sampling.temperature <= 0, .cb = cb, .user = user, .st = st };
	int n_ctx = e->be->n_ctx, rc = SKIPPER_OK, began = 0;
	struct skipper_states prompt_states;
	float *mean = NULL;
	double t_start = now(), t0;
	int32_t first;

	memset(st, 0, sizeof *st);
	st->n_prompt = n_prompt;
	if (n_prompt <= 0)
		return skipper_fail(err, SKIPPER_ERR_ARG, "empty prompt");
	if (gp->max_tokens <= 0)
		return SKIPPER_OK;
	if (n_prompt + 1 > n_ctx)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "prompt of %d tokens does not fit the context of %d (raise [model] ctx)",
		                    n_prompt, n_ctx);
	if (!r.greedy && (rc = need_sampling_buffers(e, err)))
		return rc;
	skipper_rng_seed(&e->rng, gp->seed);
	e->request_id++;

	/* Prefill with the full model; its last row gives the first token. */
	if ((e->needs & SKIPPER_NEED_PROMPT_MEAN) && e->pol &&
	    !(mean = malloc((size_t)e->be->model->hp.n_embd * sizeof *mean)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	{
		int n_rows = 0;
		if ((rc = prefill(e, prompt, n_prompt, r.greedy, mean, &n_rows, err))) {
			free(mean);
			return rc;
		}
		if (e->cap) {
			for (int i = 0; i < n_rows; i++) {
				e->cap_pos[i] = e->b_rows[i];
				e->cap_tok[i] = prompt[e->b_rows[i]];
			}
			prompt_states = (struct skipper_states){ .n_rows = n_rows, .n_points = e->n_points,
			                                         .n_embd = e->be->model->hp.n_embd, .pos = e->cap_pos,
			                                         .token = e->cap_tok, .data = e->cap_sel };
		}
		if (r.greedy) {
			first = e->v_top[0];
		} else {
			skipper_process_logits(&gp->sampling, e->logits, e->n_vocab, e->p, e->scratch);
			first = skipper_sample_probs(e->p, e->n_vocab, &e->rng);
		}
	}
	st->t_prefill = now() - t_start;
	r.n_past = n_prompt;
	e->committed = r.n_past;
	if ((rc = emit(e, &r, first))) {
		free(mean);
		return skipper_fail(err, rc, "out of memory");
	}
	r.root = first;

	if (e->pol) {
		struct skipper_request req = { .id = e->request_id, .prompt = prompt, .n_prompt = n_prompt,
		                               .n_layer = e->n_layer, .max_tokens = gp->max_tokens, .greedy = r.greedy,
		                               .prompt_mean = mean, .states = e->cap ? &prompt_states : NULL };
		t0 = now();
		rc = skipper_policy_begin(e->pol, &req, err);
		st->t_policy += now() - t0;
		free(mean);
		if (rc)
			return rc;
		began = 1;
	}

	while (!r.done) {
		/* Never draft past max_tokens (a round always adds one bonus token)
		 * nor past the context. */
		int cap = gp->max_tokens - r.n_gen - 1, n_draft = 0;
		if (cap > MAX_DRAFT)
			cap = MAX_DRAFT;
		if (cap > n_ctx - r.n_past - 1)
			cap = n_ctx - r.n_past - 1;
		if (r.n_past + 1 > n_ctx) {
			rc = skipper_fail(err, SKIPPER_ERR_RANGE, "context of %d tokens is full (raise [model] ctx)", n_ctx);
			break;
		}
		if (cap < 0)
			cap = 0;
		memset(e->skip_attn, 0, (size_t)e->n_layer);
		memset(e->skip_mlp, 0, (size_t)e->n_layer);
		if (e->pol) {
			struct skipper_plan plan = { .n_layer = e->n_layer, .skip_attn = e->skip_attn, .skip_mlp = e->skip_mlp,
			                             .max_draft = cap, .capture = e->cap != NULL, .round = st->rounds,
			                             .n_committed = r.n_past, .n_generated = r.n_gen };
			t0 = now();
			rc = skipper_policy_select_draft(e->pol, &plan, err);
			st->t_policy += now() - t0;
			if (rc)
				break;
			n_draft = plan.max_draft < cap ? plan.max_draft : cap;
			r.capture = e->cap && plan.capture; /* the policy may only turn captures off */
			if (n_draft < 0)
				n_draft = 0;
		} else if (e->fixed_max_draft > 0) {
			memcpy(e->skip_attn, e->fixed_attn, (size_t)e->n_layer);
			memcpy(e->skip_mlp, e->fixed_mlp, (size_t)e->n_layer);
			n_draft = e->fixed_max_draft < cap ? e->fixed_max_draft : cap;
		}
		if (n_draft > 0) {
			double p0 = st->t_policy; /* should_exit time is the policy's, not drafting's */
			t0 = now();
			rc = draft(e, &r, n_draft, &n_draft, err);
			st->t_draft += now() - t0 - (st->t_policy - p0);
			if (rc)
				break;
		}
		int drafted0 = st->drafted, accepted0 = st->accepted, first_round = st->drafted == 0;
		if ((rc = verify_and_accept(e, &r, n_draft, err)))
			break;
		if (!e->pol && e->fixed_max_draft > 0)
			fixed_adapt(e, first_round, st->accepted - accepted0, st->drafted - drafted0);
	}

	st->n_generated = r.n_gen;
	st->t_total = now() - t_start;
	st->alpha = st->drafted ? (double)st->accepted / st->drafted : 0;
	st->mean_accepted = st->rounds ? (double)(r.n_gen - 1) / st->rounds : 1.0;
	/* the first token comes out of the prefill; the rest out of decoding */
	if (r.n_gen > 1 && st->t_total - st->t_prefill > 0)
		st->tokens_per_s = (r.n_gen - 1) / (st->t_total - st->t_prefill);
	if (began) {
		struct skipper_stats ps = { .n_prompt = n_prompt, .n_generated = r.n_gen, .rounds = st->rounds,
		                            .verify_passes = st->rounds, .drafted = st->drafted, .accepted = st->accepted,
		                            .seconds = st->t_total, .prefill_seconds = st->t_prefill,
		                            .draft_seconds = st->t_draft, .verify_seconds = st->t_verify,
		                            .policy_seconds = st->t_policy };
		struct skipper_error e2 = { 0 };
		int rc2 = skipper_policy_end(e->pol, &ps, rc ? &e2 : err);
		if (rc2 && !rc)
			rc = rc2;
	}
	return rc;
}
