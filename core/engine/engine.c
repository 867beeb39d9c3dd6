/* The engine's lifecycle and the request loop (DESIGN §2): prefill, then
 * rounds of plan -> draft (draft.c) -> verify and accept (verify.c) until
 * EOS or max_tokens. Acceptance is decided in verify.c and only there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "base/error.h"

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
	e->fixed_exit.gamma = threshold;
}

void skipper_engine_set_fixed_adaptive(struct skipper_engine *e, double alpha, double eps, double beta1,
                                       double beta2)
{
	e->fixed_exit.alpha = alpha;
	e->fixed_exit.eps = eps;
	e->fixed_exit.beta1 = beta1;
	e->fixed_exit.beta2 = beta2;
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
	free(e->hist);
	free(e->draft_ids);
	free(e->sub_logits);
	ngram_table_free(&e->ngrams);
	free(e);
}

int skipper_engine_set_draft_vocab(struct skipper_engine *e, const int32_t *ids, int n, struct skipper_error *err)
{
	int rc;
	if (n < 0 || n > e->n_vocab)
		return skipper_fail(err, SKIPPER_ERR_ARG, "draft vocabulary of %d tokens (the model has %d)", n, e->n_vocab);
	if (n == e->n_vocab)
		n = 0; /* the whole vocabulary: the full head */
	if (!e->be->ops->set_head_subset) {
		e->draft_n = 0;
		return SKIPPER_OK;
	}
	if ((rc = skipper_backend_set_head_subset(e->be, ids, n, err)))
		return rc;
	free(e->draft_ids);
	free(e->sub_logits);
	e->draft_ids = NULL;
	e->sub_logits = NULL;
	e->draft_n = 0;
	if (n > 0) {
		e->draft_ids = malloc(sizeof *e->draft_ids * (size_t)n);
		e->sub_logits = malloc(sizeof *e->sub_logits * (size_t)n);
		if (!e->draft_ids || !e->sub_logits) {
			skipper_backend_set_head_subset(e->be, NULL, 0, err);
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		}
		memcpy(e->draft_ids, ids, sizeof *ids * (size_t)n);
		e->draft_n = n;
	}
	e->have_costs = 0; /* a draft step costs something else now */
	return SKIPPER_OK;
}

void skipper_engine_set_guard(struct skipper_engine *e, int on)
{
	e->no_guard = !on;
}

void skipper_engine_set_clock(struct skipper_engine *e, double (*now)(void *ctx), void *ctx)
{
	e->clock = now;
	e->clock_ctx = ctx;
}

static double guard_now(const struct skipper_engine *e)
{
	return e->clock ? e->clock(e->clock_ctx) : engine_now();
}

void skipper_engine_set_lookup(struct skipper_engine *e, const struct skipper_lookup_opts *o)
{
	e->lk = *o;
	if (e->lk.max_ngram > LOOKUP_MAX_NGRAM)
		e->lk.max_ngram = LOOKUP_MAX_NGRAM;
	if (e->lk.min_ngram < 1)
		e->lk.min_ngram = 1;
	if (e->lk.max_draft > MAX_DRAFT)
		e->lk.max_draft = MAX_DRAFT;
	if (e->lk.branches < 1)
		e->lk.branches = 1;
	if (e->lk.branches > LOOKUP_BRANCHES)
		e->lk.branches = LOOKUP_BRANCHES;
}

int skipper_engine_set_ngrams(struct skipper_engine *e, const int32_t *ctx, const uint8_t *ctx_n,
                              const int32_t *next, const float *p, int n, struct skipper_error *err)
{
	ngram_table_free(&e->ngrams);
	e->ng_stats = (struct ngram_stats){ 0 };
	if (n <= 0)
		return SKIPPER_OK;
	for (int i = 0; i < n; i++)
		if (ctx_n[i] < 1 || ctx_n[i] > NGRAM_MAX_CTX || next[i] < 0 || next[i] >= e->n_vocab || !(p[i] > 0) ||
		    p[i] > 1)
			return skipper_fail(err, SKIPPER_ERR_ARG, "n-gram %d: context of %d tokens, next %d, p %g", i,
			                    ctx_n[i], next[i], p[i]);
	if (ngram_table_init(&e->ngrams, (size_t)n))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory (%d n-grams)", n);
	for (int i = 0; i < n; i++)
		ngram_table_put(&e->ngrams, ctx + NGRAM_MAX_CTX * (size_t)i, ctx_n[i], next[i], p[i]);
	return SKIPPER_OK;
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
	/* a row of the head per token: an id the model writes must be text */
	if (tok && skipper_tokenizer_n_vocab(tok) != e->n_vocab) {
		int nt = skipper_tokenizer_n_vocab(tok);
		free(e);
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: the vocabulary has %d tokens, the embedding %d rows",
		                    be->model->path ? be->model->path : be->model->name, nt,
		                    be->model->hp.n_vocab);
	}
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

/* Append to the lookup history (prompt, then committed output). */
static int hist_push(struct skipper_engine *e, const int32_t *t, int n)
{
	if (e->hist_n + n > e->hist_cap) {
		int cap = e->hist_cap ? e->hist_cap : 1024;
		while (cap < e->hist_n + n)
			cap *= 2;
		int32_t *h = realloc(e->hist, (size_t)cap * sizeof *h);
		if (!h)
			return SKIPPER_ERR_NOMEM;
		e->hist = h;
		e->hist_cap = cap;
	}
	memcpy(e->hist + e->hist_n, t, (size_t)n * sizeof *t);
	e->hist_n += n;
	return SKIPPER_OK;
}

/* Commit one output token: record, report, check EOS / max / callback. */
int engine_emit(struct skipper_engine *e, struct round_ctx *r, int32_t tok)
{
	if (r->done)
		return SKIPPER_OK;
	if (push_generated(e, r->n_gen, tok) || hist_push(e, &tok, 1))
		return SKIPPER_ERR_NOMEM;
	r->n_gen++;
	if (r->cb && r->cb(r->user, tok))
		r->done = 1;
	if (skipper_tokenizer_is_eog(e->tok, tok) || r->n_gen >= r->gp->max_tokens)
		r->done = 1;
	return SKIPPER_OK;
}

/* Prefill, start the policy (begin hook), commit the first token. */
static int start_request(struct skipper_engine *e, struct round_ctx *r, const int32_t *prompt, int n_prompt,
                         int *began, struct skipper_error *err)
{
	const struct skipper_gen_params *gp = r->gp;
	struct skipper_run_stats *st = r->st;
	struct skipper_states prompt_states;
	float *mean = NULL;
	double t0 = engine_now();
	int n_rows = 0, rc;
	int32_t first;

	e->hist_n = 0;
	if (hist_push(e, prompt, n_prompt))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if ((e->needs & SKIPPER_NEED_PROMPT_MEAN) && e->pol &&
	    !(mean = malloc((size_t)e->be->model->hp.n_embd * sizeof *mean)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if ((rc = engine_prefill(e, prompt, n_prompt, r->greedy, mean, &n_rows, err))) {
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
	if (r->greedy) {
		first = e->v_top[0];
	} else {
		skipper_process_logits(&gp->sampling, e->logits, e->n_vocab, e->p, e->scratch);
		first = skipper_sample_probs(e->p, e->n_vocab, &e->rng);
	}
	st->t_prefill = engine_now() - t0;
	r->n_past = n_prompt;
	e->committed = r->n_past;
	r->root = first;

	/* the policy starts before the first token is shown: a policy that
	 * cannot run (no profile, say) fails with nothing printed */
	if (e->pol) {
		struct skipper_request req = { .id = e->request_id, .prompt = prompt, .n_prompt = n_prompt,
		                               .n_layer = e->n_layer, .max_tokens = gp->max_tokens, .greedy = r->greedy,
		                               .prompt_mean = mean, .states = e->cap ? &prompt_states : NULL };
		t0 = engine_now();
		rc = skipper_policy_begin(e->pol, &req, err);
		st->t_policy += engine_now() - t0;
		*began = rc == SKIPPER_OK;
	}
	free(mean);
	if (rc == SKIPPER_OK && (rc = engine_emit(e, r, first)))
		return skipper_fail(err, rc, "out of memory");
	return rc;
}

/* Tokens per second of plain steps: the recent plain rounds, or the
 * measured step before there were any; 0 = not known yet. */
static double plain_rate(const struct skipper_engine *e)
{
	if (e->plain_sec > 0)
		return e->plain_tok / e->plain_sec;
	return e->have_costs ? 1.0 / e->costs.step_seconds : 0.0;
}

/* Whether a draft source may draft this round (and one round of its pause
 * served if not). Without a measured plain step there is nothing to
 * compare with: every fifth round is then a plain one until there is. */
static int guard_open(const struct skipper_engine *e, struct guard *g)
{
	if (g->pause > 0) {
		g->pause--;
		return 0;
	}
	return e->no_guard || plain_rate(e) > 0 || g->rounds % 5 != 4;
}

/* A drafting round of source g committed tok tokens in sec seconds. When
 * the source's recent rounds yield fewer tokens per second than plain steps
 * do, it pauses (8 rounds, doubling while probes keep failing, at most 256,
 * or 32 for lookup) and is probed again afterwards: speculation never costs
 * more than noise.
 *
 * A layer-skip draft is judged over its last few rounds: each one costs
 * model passes. Lookup sizes every proposal by its own acceptance
 * statistics, so its guard only has to catch a systematic loss (a cost
 * curve that no longer holds) and judges it from 16 rounds on, over about
 * its last 20: over fewer, the variance of a few rejected proposals and
 * of the machine's memory speed (on a shared VM, rounds of one size
 * differ by a fifth within seconds) reads as a loss. On the Spec-Bench RAG
 * prompts (Qwen2.5-Coder-1.5B) a window of 4 paused lookup four times a
 * prompt and took its gain from 1.20x to 1.0x, replayed on the real token
 * streams; on the RAG, coding and writing prompts, where lookup gains
 * 5-20 %, a window of 10 from 8 rounds on still paused it 39 times in 27
 * runs (AMD EPYC, 2 threads), this one 15 times, unguarded lookup being
 * no slower. */
static void guard_record(struct skipper_engine *e, struct guard *g, double tok, double sec,
                         struct skipper_run_stats *st)
{
	int lookup = g != &e->guard[GUARD_SKIP];
	double plain = plain_rate(e), keep = lookup ? 0.95 : 0.75;
	g->tok = keep * g->tok + tok;
	g->sec = keep * g->sec + sec;
	g->rounds++;
	if (plain <= 0 || g->rounds < (lookup ? 16 : 4) || e->no_guard)
		return;
	if (g->tok / g->sec < 0.98 * plain) {
		/* lookup costs nothing to propose: short pauses */
		int max = lookup ? 32 : 256;
		g->pause = g->pause_len ? g->pause_len : 8;
		g->pause_len = 2 * g->pause < max ? 2 * g->pause : max;
		g->tok = g->sec = 0;
		g->rounds = 0;
		st->backoffs++;
	} else if (g->rounds >= 8) {
		g->pause_len = 8; /* it pays: a later pause starts short again */
	}
}

/* The k of a proposal with per-token acceptance p[0..n) that maximises
 * tokens per decode step, (1 + expected accepted) / cost of k + 1 rows;
 * *value gets that rate, or ECON_FLOOR (a plain step with a margin) with
 * k = 0 when no k beats it. */
static int best_cut(const struct skipper_engine *e, const float *p, int n, double *value)
{
	double chain = 1, expected = 0, tokens[MAX_DRAFT], cost[MAX_DRAFT];
	for (int k = 1; k <= n; k++) {
		chain *= p[k - 1];
		expected += chain;
		tokens[k - 1] = 1.0 + expected;
		cost[k - 1] = engine_verify_cost(e, k + 1);
	}
	return econ_best_ratio(tokens, cost, n, ECON_FLOOR, value);
}

struct node_pick {
	double p;
	int i;
};

static int pick_order(const void *pa, const void *pb)
{
	const struct node_pick *a = pa, *b = pb;
	if (a->p != b->p)
		return a->p > b->p ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

/* The nodes of the context's tree worth verifying together (lk_sel,
 * lk_tree_n of them). Given its parent accepted, a node is accepted with
 * a, the chain's rate, on the best-ranked way on, and otherwise with
 * (1 - a) r times its share of the other ways' occurrences, r being how
 * often the model took another verified way where it left the best one.
 * Each node is less likely than its parent, so the most likely nodes
 * always form a tree; as many of them as maximise tokens per decode step.
 * Returns that rate (ECON_FLOOR with none). Replayed on the 1.5B's plain
 * outputs for 90 Spec-Bench prompts: +2.4 % tokens per step over the
 * spine alone (code edits +4 %, RAG +4 %); side by side on the 1.5B, 24
 * prompts twice, 1.595x over plain decoding against 1.556x. */
static double tree_plan(struct skipper_engine *e, double a, int max)
{
	const struct lookup_tree *t = &e->lk_tree;
	struct node_pick pick[LOOKUP_TREE_NODES];
	double others[LOOKUP_TREE_NODES + 1] = { 0 }, p[LOOKUP_TREE_NODES];
	double tokens[LOOKUP_TREE_NODES], cost[LOOKUP_TREE_NODES];
	double r = lookup_alt_rate(&e->lk_stats), value, sum = 0;
	int best, n = t->n < max ? t->n : max;

	for (int i = 0; i < t->n; i++)
		if (!t->first[i])
			others[t->parent[i] + 1] += t->count[i];
	for (int i = 0; i < t->n; i++) {
		int par = t->parent[i];
		double up = par < 0 ? 1.0 : p[par];
		p[i] = up * (t->first[i] ? a : (1.0 - a) * r * t->count[i] / others[par + 1]);
		pick[i] = (struct node_pick){ p[i], i };
	}
	qsort(pick, (size_t)t->n, sizeof *pick, pick_order);
	for (int k = 1; k <= n; k++) {
		sum += pick[k - 1].p;
		tokens[k - 1] = 1.0 + sum;
		cost[k - 1] = engine_verify_cost(e, k + 1);
	}
	best = econ_best_ratio(tokens, cost, n, ECON_FLOOR, &value);
	memset(e->lk_sel, 0, (size_t)t->n);
	for (int k = 0; k < best; k++)
		e->lk_sel[pick[k].i] = 1;
	e->lk_tree_n = best;
	return value;
}

/* The lookup proposal worth verifying on its own, at most cap tokens
 * deep and `rows` rows: the context's chain, its tree when that promises
 * more, or the corpus n-grams' chain when those promise more tokens per
 * step (each only while its guard lets it draft). Returns the tokens per
 * decode step it promises (ECON_FLOOR when there is none). */
static double lookup_plan(struct skipper_engine *e, int cap, int rows, int context, int corpus)
{
	int max = e->lk.max_draft < cap ? e->lk.max_draft : cap, n = 0;
	int max_nodes = e->lk.max_draft < rows ? e->lk.max_draft : rows;
	double v, v_corpus;

	e->lk_tree.n = 0;
	e->lk_tree_n = 0;
	if (context)
		n = lookup_propose(e->hist, e->hist_n, e->lk.min_ngram, e->lk.max_ngram, max, e->lk.branches, &e->lk_tree,
		                   &e->lk_ngram);
	float a = (float)lookup_accept_rate(&e->lk_stats, e->lk_ngram);
	memcpy(e->lk_tok, e->lk_tree.tok, sizeof *e->lk_tok * (size_t)n);
	for (int i = 0; i < n; i++)
		e->lk_p[i] = a;
	e->lk_n = best_cut(e, e->lk_p, n, &v);
	if (e->lk_tree.n > n) {
		double v_tree = tree_plan(e, a, max_nodes);
		if (v_tree > v)
			v = v_tree;
		else
			e->lk_tree_n = 0;
	}
	e->lk_corpus = 0;
	if (corpus) {
		int32_t tok[MAX_DRAFT];
		float table[MAX_DRAFT], p[MAX_DRAFT];
		/* a chain below one chance in ten cannot pay for its rows */
		int m = ngram_propose(&e->ngrams, e->hist, e->hist_n, max, 0.1, tok, table);
		for (int i = 0; i < m; i++)
			p[i] = (float)ngram_accept_rate(&e->ng_stats, table[i]);
		int k = best_cut(e, p, m, &v_corpus);
		if (v_corpus > v) {
			memcpy(e->lk_tok, tok, sizeof *tok * (size_t)k);
			memcpy(e->lk_p, p, sizeof *p * (size_t)k);
			memcpy(e->lk_table, table, sizeof *table * (size_t)k);
			e->lk_n = k;
			e->lk_tree_n = 0;
			e->lk_corpus = 1;
			v = v_corpus;
		}
	}
	return v;
}

/* What the layer-skip drafts delivered lately, as a multiple of plain
 * steps' tokens per second: 1 until their guard has seen a few rounds;
 * without the guard, where a policy drafts whatever it costs, more than
 * any lookup proposal promises. */
static double skip_rate(const struct skipper_engine *e)
{
	const struct guard *g = &e->guard[GUARD_SKIP];
	double plain = plain_rate(e);
	if (e->no_guard)
		return HUGE_VAL;
	if (g->rounds < 4 || g->sec <= 0 || plain <= 0)
		return 1.0;
	return g->tok / g->sec / plain;
}

/* A lookup proposal as the round's chain: a deterministic proposal, q = 1
 * on each of its tokens, which speculative sampling accepts with
 * probability p(token) and otherwise resamples from p without it. */
static int lookup_as_chain(struct skipper_engine *e, const struct round_ctx *r)
{
	for (int i = 0; i < e->lk_n; i++) {
		e->d_tok[i] = e->lk_tok[i];
		e->d_prob[i] = 1.0f;
		for (int j = 0; j < e->top_k; j++) {
			e->d_top_ids[i * e->top_k + j] = j ? -1 : e->lk_tok[i];
			e->d_top_probs[i * e->top_k + j] = j ? 0.0f : 1.0f;
		}
		if (!r->greedy) {
			float *q = &e->d_q[(size_t)i * e->n_vocab];
			memset(q, 0, (size_t)e->n_vocab * sizeof *q);
			q[e->lk_tok[i]] = 1.0f;
		}
	}
	return e->lk_n;
}

/* What to do about a full context: a larger [model] ctx, unless the model
 * file's own context length is what capped it. */
static const char *ctx_advice(const struct skipper_engine *e)
{
	int train = e->be->model->hp.n_ctx_train;
	return train > 0 && e->be->n_ctx >= train ? "the model file's context_length, the most it allows"
	                                          : "raise [model] ctx";
}

/* This round's plan, never past max_tokens (a round always adds one bonus
 * token) nor past the context: the skip mask (e->skip_*) and draft length
 * from the policy or the fixed plan, and the context-lookup tokens worth
 * verifying (e->lk_n). A source whose drafting was slower than plain steps
 * sits out its pause; with sampling a round verifies one source's chain. */
static int plan_round(struct skipper_engine *e, struct round_ctx *r, int *n_draft, struct skipper_error *err)
{
	int cap = r->gp->max_tokens - r->n_gen - 1, n_ctx = e->be->n_ctx, rc;
	double lk_value = 0;

	*n_draft = 0;
	e->lk_n = 0;
	e->lk_tree_n = 0;
	r->lookup_only = 0;
	if (cap > MAX_DRAFT)
		cap = MAX_DRAFT;
	if (cap > n_ctx - r->n_past - 1)
		cap = n_ctx - r->n_past - 1;
	if (r->n_past + 1 > n_ctx)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "context of %d tokens is full (%s)", n_ctx, ctx_advice(e));
	if (cap < 0)
		cap = 0;
	if (e->lk.enable && cap > 0) {
		int context = guard_open(e, &e->guard[GUARD_LOOKUP]);
		int corpus = e->ngrams.n && guard_open(e, &e->guard[GUARD_CORPUS]);
		/* a tree's rows need only fit the context: siblings emit one token */
		int rows = n_ctx - r->n_past - 1 < MAX_DRAFT ? n_ctx - r->n_past - 1 : MAX_DRAFT;
		lk_value = lookup_plan(e, cap, rows, context, corpus);
	}
	int pcap = (e->pol || e->fixed_max_draft > 0) && !guard_open(e, &e->guard[GUARD_SKIP]) ? 0 : cap;
	/* a layer-skip draft costs model passes before anything is verified,
	 * lookup's costs none: when lookup promises more tokens per step than
	 * the skip drafts have delivered lately, the round is lookup's alone
	 * (with sampling, a round verifies one source's chain anyway) */
	int lk_any = e->lk_n > 0 || e->lk_tree_n > 0;
	if (lk_any && (!r->greedy || lk_value > skip_rate(e)))
		pcap = 0;
	memset(e->skip_attn, 0, (size_t)e->n_layer);
	memset(e->skip_mlp, 0, (size_t)e->n_layer);
	if (e->pol) {
		struct skipper_plan plan = { .n_layer = e->n_layer, .skip_attn = e->skip_attn, .skip_mlp = e->skip_mlp,
		                             .max_draft = pcap, .capture = e->cap != NULL, .round = r->st->rounds,
		                             .n_committed = r->n_past, .n_generated = r->n_gen };
		double t0 = engine_now();
		rc = skipper_policy_select_draft(e->pol, &plan, err);
		r->st->t_policy += engine_now() - t0;
		if (rc)
			return rc;
		*n_draft = plan.max_draft < pcap ? plan.max_draft : pcap;
		r->capture = e->cap && plan.capture; /* the policy may only turn captures off */
		if (*n_draft < 0)
			*n_draft = 0;
	} else if (e->fixed_max_draft > 0) {
		memcpy(e->skip_attn, e->fixed_attn, (size_t)e->n_layer);
		memcpy(e->skip_mlp, e->fixed_mlp, (size_t)e->n_layer);
		*n_draft = e->fixed_max_draft < pcap ? e->fixed_max_draft : pcap;
	}
	r->lookup_only = *n_draft == 0 && lk_any;
	if (!r->lookup_only)
		e->lk_tree_n = 0; /* beside a policy's draft lookup adds its chain */
	return SKIPPER_OK;
}

/* After a round: the guards and the plain-step rate learn from it. */
static void account_round(struct skipper_engine *e, struct round_ctx *r, int drafted, int n_gen0)
{
	double sec = guard_now(e) - r->t_round;
	int tok = r->n_gen - n_gen0;
	if (drafted == 0) {
		/* a plain step's cost: without a search the policy ran in its
		 * hooks (a DP inside a plain round is not the step's) */
		double p = r->st->t_policy - r->p_round;
		e->plain_tok = 0.75 * e->plain_tok + tok;
		e->plain_sec = 0.75 * e->plain_sec + (sec > p ? sec - p : sec);
		/* a cached curve may come from a busier (or quieter) hour: the
		 * step's seconds follow what plain rounds cost now, the curve's
		 * ratios stay as measured */
		if (e->have_costs && e->plain_tok >= 2)
			e->costs.step_seconds = e->plain_sec / e->plain_tok;
	} else {
		int g = !r->lookup_only ? GUARD_SKIP : e->lk_corpus ? GUARD_CORPUS : GUARD_LOOKUP;
		guard_record(e, &e->guard[g], tok, sec, r->st);
	}
	engine_learn_rows(e, r->lookup_only ? drafted + 1 : 0, sec);
}

/* Fill the run's totals and end the policy (end hook), keeping the first error. */
static int finish_request(struct skipper_engine *e, struct round_ctx *r, int n_prompt, double t_start, int began,
                          int rc, struct skipper_error *err)
{
	struct skipper_run_stats *st = r->st;

	st->n_generated = r->n_gen;
	st->t_total = engine_now() - t_start;
	st->alpha = st->drafted ? (double)st->accepted / st->drafted : 0;
	st->mean_accepted = st->rounds ? (double)(r->n_gen - 1) / st->rounds : 1.0;
	/* the first token comes out of the prefill; the rest out of decoding */
	if (r->n_gen > 1 && st->t_total - st->t_prefill > 0)
		st->tokens_per_s = (r->n_gen - 1) / (st->t_total - st->t_prefill);
	if (began) {
		struct skipper_stats ps = { .n_prompt = n_prompt, .n_generated = r->n_gen, .rounds = st->rounds,
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

int skipper_engine_generate(struct skipper_engine *e, const int32_t *prompt, int n_prompt,
                            const struct skipper_gen_params *gp, skipper_token_cb cb, void *user,
                            struct skipper_run_stats *st, struct skipper_error *err)
{
	struct round_ctx r = { .gp = gp, .greedy = gp->sampling.temperature <= 0, .cb = cb, .user = user, .st = st };
	double t_start = engine_now();
	int rc, began = 0;

	memset(st, 0, sizeof *st);
	st->n_prompt = n_prompt;
	st->draft_head = e->draft_n;
	if (n_prompt <= 0)
		return skipper_fail(err, SKIPPER_ERR_ARG, "empty prompt");
	if (gp->max_tokens <= 0)
		return SKIPPER_OK;
	if (n_prompt + 1 > e->be->n_ctx)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "prompt of %d tokens does not fit the context of %d (%s)",
		                    n_prompt, e->be->n_ctx, ctx_advice(e));
	if (!r.greedy && (rc = need_sampling_buffers(e, err)))
		return rc;
	skipper_rng_seed(&e->rng, gp->seed);
	e->request_id++;

	rc = start_request(e, &r, prompt, n_prompt, &began, err);
	while (!rc && !r.done) {
		int n_draft, n_gen0 = r.n_gen, drafted0 = st->drafted;
		r.t_round = guard_now(e);
		r.p_round = st->t_policy;
		r.t_draft = 0;
		if ((rc = plan_round(e, &r, &n_draft, err)))
			break;
		if (r.lookup_only) {
			n_draft = e->lk_tree_n ? 0 : lookup_as_chain(e, &r);
		} else if (n_draft > 0) {
			double p0 = st->t_policy, t0 = engine_now(); /* should_exit time is the policy's */
			rc = engine_draft(e, &r, n_draft, &n_draft, err);
			r.t_draft = engine_now() - t0 - (st->t_policy - p0);
			st->t_draft += r.t_draft;
			if (rc)
				break;
		}
		int accepted0 = st->accepted, first_round = st->drafted == 0;
		if ((rc = engine_verify(e, &r, n_draft, err)))
			break;
		/* the trials' Self-SD exit: the fixed plan's threshold adapts when alpha > 0 */
		if (!e->pol && e->fixed_max_draft > 0 && !r.lookup_only && e->fixed_exit.alpha > 0)
			econ_adaptive_update(&e->fixed_exit, first_round, st->accepted - accepted0, n_draft);
		account_round(e, &r, st->drafted - drafted0, n_gen0);
	}
	return finish_request(e, &r, n_prompt, t_start, began, rc, err);
}
