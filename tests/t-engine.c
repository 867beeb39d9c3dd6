/* The engine's guarantees on tiny generated models:
 *  - greedy SSD == autoregressive, token for token, for many masks, draft
 *    lengths, chain and tree verification;
 *  - after generation the committed KV cache is bitwise the AR cache;
 *  - speculative sampling (chain and tree) reproduces the exact sequence
 *    distribution of the model (chi-square).
 * On the backend SKIPPER_TEST_BACKEND names (testbackend.h): t-engine-cuda.sh
 * runs the same checks on the GPU, or skips where there is none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "engine/costs_cache.h"
#include "engine/engine.h"
#include "engine/lookup.h"
#include "model/model.h"
#include "policy/policy_host.h"
#include "model/quant.h"
#include "tap.h"
#include "testbackend.h"
#include "testmodel.h"
#include "tokenizer/tokenizer.h"

static struct skipper_model *model;
static struct skipper_tokenizer *tok;
static struct skipper_error err;

/* SKIPPER_TEST_QUICK=1 (t-cudaemu-engine.sh: emulated kernels are slow)
 * trims the greedy grid to a fixed and a random mask at two draft lengths
 * and leaves out the sampling test (thousands of generations; the device's
 * top-k probabilities are checked by t-cuda-backend, the sampling logic
 * does not depend on the backend and is checked on the CPU). */
static int quick(void)
{
	const char *q = getenv("SKIPPER_TEST_QUICK");
	return q && *q == '1';
}

/* ---- a test policy: fixed mask, fixed draft length, optional top-k tree ---- */

struct tp_state {
	uint8_t attn[64], mlp[64];
	int n_layer, k, width;
};

static struct tp_state tp_cfg; /* what the next create() copies */

/* The draft vocabulary ([generate] draft_vocab) that run_open gives policy
 * runs, and what tp_verify saw of it: drafted tokens and their top-k ids
 * checked, and those outside the subset. */
static int32_t *subset_ids;
static uint8_t *subset_has;
static int subset_n, subset_checked, subset_outside;

static int tp_create(const struct skipper_host *h, void *ctx, void **state)
{
	struct tp_state *s = malloc(sizeof *s);
	*s = tp_cfg;
	*state = s;
	return 0;
}
static void tp_destroy(void *s) { free(s); }
static int tp_select(void *state, struct skipper_plan *plan)
{
	struct tp_state *s = state;
	memcpy(plan->skip_attn, s->attn, (size_t)plan->n_layer);
	memcpy(plan->skip_mlp, s->mlp, (size_t)plan->n_layer);
	if (plan->max_draft > s->k)
		plan->max_draft = s->k;
	return 0;
}
/* spine + leaf siblings: at each depth the chain token, then the next
 * width-1 top-k tokens as leaves */
static int tp_verify(void *state, const struct skipper_draft *d, struct skipper_tree *t)
{
	struct tp_state *s = state;
	int n = 0, chain_parent = -1;
	for (int j = 0; subset_has && j < d->n; j++) {
		subset_checked++;
		subset_outside += !subset_has[d->tokens[j]];
		for (int w = 0; w < d->top_k; w++)
			subset_outside += d->top_ids[j * d->top_k + w] >= 0 && !subset_has[d->top_ids[j * d->top_k + w]];
	}
	if (s->width <= 1)
		return 0;
	for (int j = 0; j < d->n; j++) {
		int chain = n;
		t->tokens[n] = d->tokens[j];
		t->parent[n++] = chain_parent;
		for (int w = 0, added = 1; w < d->top_k && added < s->width && n < t->capacity; w++) {
			int32_t x = d->top_ids[j * d->top_k + w];
			if (x == d->tokens[j])
				continue;
			t->tokens[n] = x;
			t->parent[n++] = chain_parent;
			added++;
		}
		chain_parent = chain;
	}
	t->n = n;
	return 0;
}

static const struct skipper_policy tp_desc = {
	.name = "test-tree", .version = "1",
	.needs = SKIPPER_NEED_TOPK, .top_k = 4,
	.create = tp_create, .destroy = tp_destroy, .select_draft = tp_select, .verify = tp_verify,
};

/* ---- a state-recording policy: same plan as above, configurable needs ---- */

static struct {
	float mean[4096];
	int have_mean, points, rows;
	int odd_off;          /* clear plan.capture on odd rounds */
	int with, without;    /* on_accept calls with / without states */
	int round_off;        /* the last plan had capture cleared */
	int bad;              /* on_accept calls whose states disagree with the plan */
	int timed, untimed;   /* verdicts with draft_seconds > 0 when drafted (== 0 when not); the others */
	float *log; /* every captured row (begin, then each on_accept), [rows][points][n_embd] */
} rec;

static void rec_states(const struct skipper_states *st)
{
	size_t per = (size_t)st->n_points * st->n_embd;
	rec.log = realloc(rec.log, (rec.rows + st->n_rows) * per * sizeof *rec.log);
	memcpy(rec.log + rec.rows * per, st->data, st->n_rows * per * sizeof *rec.log);
	rec.rows += st->n_rows;
	rec.points = st->n_points;
}
static int rec_begin(void *state, const struct skipper_request *req)
{
	if ((rec.have_mean = req->prompt_mean != NULL))
		memcpy(rec.mean, req->prompt_mean, model->view.hp.n_embd * sizeof *rec.mean);
	if (req->states)
		rec_states(req->states);
	return 0;
}
static int rec_accept(void *state, const struct skipper_verdict *v)
{
	if (v->states)
		rec_states(v->states);
	rec.with += v->states != NULL;
	rec.without += v->states == NULL;
	rec.bad += (v->states == NULL) != rec.round_off;
	if (v->n_drafted > 0 ? v->draft_seconds > 0 && v->verify_seconds > 0 : v->draft_seconds == 0)
		rec.timed++;
	else
		rec.untimed++;
	return 0;
}
static int rec_select(void *state, struct skipper_plan *plan)
{
	rec.round_off = rec.odd_off && plan->capture && plan->round % 2;
	if (rec.round_off)
		plan->capture = 0;
	return tp_select(state, plan);
}

static struct skipper_policy rec_desc = {
	.name = "test-states", .version = "1",
	.create = tp_create, .destroy = tp_destroy, .select_draft = rec_select, .begin = rec_begin,
	.on_accept = rec_accept,
};
static const struct skipper_policy *next_desc = &tp_desc; /* what run_open loads */
static int next_lookup; /* run_open turns context lookup on */
static int next_branches = LOOKUP_BRANCHES; /* with trees of up to this many continuations */
static int next_curve_told; /* work_run: the cost curve set to what the work clock charges */

struct run {
	struct skipper_backend *be;
	struct skipper_engine *eng;
	const struct skipper_policy *desc; /* the policy, NULL: none */
	struct skipper_engine_opts o;      /* what eng was made with */
	struct skipper_policy_env env;
	/* corpus n-grams (ngrams_set) */
	int32_t ng_ctx[SKIPPER_NGRAM_MAX_CTX * 512], ng_next[512];
	uint8_t ng_n[512];
	float ng_p[512];
	struct skipper_ngram_set ng;
};

/* (Re)make r->eng as r->o says, with a fresh instance of r->desc. */
static void run_make(struct run *r)
{
	skipper_engine_free(r->eng);
	r->eng = NULL;
	r->o.lib = NULL;
	r->o.env = r->desc ? &r->env : NULL;
	if ((r->desc && skipper_policy_load_builtin(r->desc, &r->o.lib, &err)) ||
	    skipper_engine_new(r->be, tok, &r->o, &r->eng, &err))
		BAIL(err.msg);
}

static void run_open(struct run *r, const struct tp_state *policy)
{
	memset(r, 0, sizeof *r);
	r->be = test_backend_open(&model->view, test_backend_kind(), 256, 1); /* thread counts: t-backend */
	if (policy) {
		tp_cfg = *policy;
		r->desc = next_desc;
		r->env.n_layer = model->view.hp.n_layer;
		r->env.n_embd = model->view.hp.n_embd;
		r->env.n_vocab = model->view.hp.n_vocab;
		r->env.n_ctx = 256;
		r->o.draft_vocab = subset_ids;
		r->o.n_draft_vocab = subset_n;
	}
	r->o.lookup = (struct skipper_lookup_opts){ .enable = next_lookup, .min_ngram = 1, .max_ngram = 3,
		                                    .max_draft = 8, .branches = next_branches };
	r->o.no_guard = 1; /* draft on this tiny model even where it does not pay */
	run_make(r);
}

static void run_close(struct run *r)
{
	skipper_engine_free(r->eng);
	r->be->ops->destroy(r->be);
}

struct toks {
	int32_t t[512];
	int n;
};

static int collect(void *user, int32_t t)
{
	struct toks *k = user;
	if (k->n < 512)
		k->t[k->n++] = t;
	return 0;
}

static int generate(struct run *r, const int32_t *prompt, int n, const struct skipper_gen_params *gp, struct toks *out,
                    struct skipper_run_stats *st)
{
	out->n = 0;
	if (skipper_engine_generate(r->eng, prompt, n, gp, collect, out, st, &err)) {
		diag("generate: %s", err.msg);
		return -1;
	}
	return 0;
}

/* Committed KV of two backends bitwise equal over [0, n). */
static int same_kv(struct skipper_backend *a, struct skipper_backend *b, int n)
{
	int d = model->view.hp.n_head_kv * model->view.hp.head_dim;
	float *ka = malloc(d * sizeof *ka), *va = malloc(d * sizeof *va), *kb = malloc(d * sizeof *kb),
	      *vb = malloc(d * sizeof *vb);
	int same = 1;
	for (int l = 0; l < model->view.hp.n_layer && same; l++)
		for (int s = 0; s < n && same; s++) {
			skipper_backend_kv_read(a, 0, l, s, ka, va, &err);
			skipper_backend_kv_read(b, 0, l, s, kb, vb, &err);
			same = !memcmp(ka, kb, d * sizeof *ka) && !memcmp(va, vb, d * sizeof *va);
			if (!same)
				diag("KV differs at layer %d slot %d", l, s);
		}
	free(ka);
	free(va);
	free(kb);
	free(vb);
	return same;
}

static void mask_set(uint8_t *m, const char *pattern, int n)
{
	for (int i = 0; i < n; i++)
		m[i] = pattern[i % strlen(pattern)] == '1';
}

static void greedy_lossless(int32_t *prompt, int n_prompt)
{
	struct skipper_gen_params gp = { .max_tokens = 40, .seed = 1 };
	struct run ar, ssd;
	struct toks ref, got;
	struct skipper_run_stats st;
	int L = model->view.hp.n_layer;
	uint64_t rnd = 12345;
	static const char *masks[][2] = { { "0", "0" }, { "1", "1" }, { "0110", "0100" }, { "1", "0" }, { "0", "1" } };

	run_open(&ar, NULL);
	if (generate(&ar, prompt, n_prompt, &gp, &ref, &st))
		BAIL("AR generation failed");
	ok(ref.n > 1, "AR generated %d tokens", ref.n);
	is_int(st.mean_accepted * 100, 100, "AR: M = 1.00");

	for (int mi = 0; mi < 6; mi++)
		for (int k = 1; k <= 8; k *= 2)
			for (int width = 1; width <= 3; width += 2) {
				struct tp_state p = { .n_layer = L, .k = k, .width = width };
				if (quick() && ((mi != 2 && mi != 5) || (k != 2 && k != 8)))
					continue;
				if (mi < 5) {
					mask_set(p.attn, masks[mi][0], L);
					mask_set(p.mlp, masks[mi][1], L);
				} else {
					for (int i = 0; i < L; i++) { /* random mask */
						rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
						p.attn[i] = (rnd >> 33) & 1;
						p.mlp[i] = (rnd >> 40) & 1;
					}
				}
				run_open(&ssd, &p);
				if (generate(&ssd, prompt, n_prompt, &gp, &got, &st) == 0) {
					ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t),
					   "greedy SSD == AR: mask %d, draft %d, %s (M %.2f, alpha %.2f)", mi, k,
					   width > 1 ? "tree" : "chain", st.mean_accepted, st.alpha);
					ok(same_kv(ar.be, ssd.be, skipper_engine_committed(ssd.eng)) &&
					       skipper_engine_committed(ssd.eng) == skipper_engine_committed(ar.eng),
					   "committed KV equals AR's (%d slots)", skipper_engine_committed(ssd.eng));
				} else {
					ok(0, "generation failed");
				}
				run_close(&ssd);
			}
	run_close(&ar);
}

/* The draft head over the even vocabulary ids (subset_ids NULL: off again). */
static void subset_set(int on)
{
	int nv = model->view.hp.n_vocab;
	free(subset_ids);
	free(subset_has);
	subset_ids = NULL;
	subset_has = NULL;
	subset_n = 0;
	if (!on)
		return;
	subset_ids = malloc(sizeof *subset_ids * (size_t)nv);
	subset_has = calloc((size_t)nv, 1);
	if (!subset_ids || !subset_has)
		BAIL("out of memory");
	for (int i = 0; i < nv; i += 2) {
		subset_ids[subset_n++] = i;
		subset_has[i] = 1;
	}
}

/* Draft passes over a vocabulary subset: greedy output and committed KV stay
 * AR's though the subset lacks half of AR's tokens, and (on a backend that
 * narrows its head) every drafted token and top-k id lies in the subset. */
static void draft_vocab_lossless(int32_t *prompt, int n_prompt)
{
	struct skipper_gen_params gp = { .max_tokens = 40, .seed = 1 };
	struct run ar, ssd;
	struct toks ref, got;
	struct skipper_run_stats st;
	int L = model->view.hp.n_layer, missing = 0;

	run_open(&ar, NULL);
	if (generate(&ar, prompt, n_prompt, &gp, &ref, &st))
		BAIL("AR generation failed");
	subset_set(1);
	for (int i = 0; i < ref.n; i++)
		missing += !subset_has[ref.t[i]];
	ok(missing > 0 && missing < ref.n, "the subset holds some of AR's tokens, not all (%d of %d missing)", missing,
	   ref.n);
	for (int width = 1; width <= 3; width += 2) {
		struct tp_state p = { .n_layer = L, .k = 4, .width = width };
		mask_set(p.attn, "0110", L);
		mask_set(p.mlp, "0100", L);
		subset_checked = subset_outside = 0;
		run_open(&ssd, &p);
		if (generate(&ssd, prompt, n_prompt, &gp, &got, &st))
			BAIL("SSD generation failed");
		ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t) &&
		       same_kv(ar.be, ssd.be, skipper_engine_committed(ssd.eng)),
		   "draft vocabulary of %d: greedy SSD == AR, same KV (%s, M %.2f, alpha %.2f)", subset_n,
		   width > 1 ? "tree" : "chain", st.mean_accepted, st.alpha);
		if (ssd.be->ops->set_head_subset)
			ok(subset_checked > 0 && subset_outside == 0,
			   "drafts and their top-k stay in the subset (%d drafted tokens, %d outside)", subset_checked,
			   subset_outside);
		else
			tap_skip(1, "this backend computes the full head in drafts (exact too)");
		run_close(&ssd);
	}
	subset_set(0);
	run_close(&ar);
}

/* Context lookup alone and beside a layer-skip draft (chain and tree): the
 * output and the committed KV stay those of plain decoding. The prompt
 * repeats itself so that lookup has something to propose. */
static int lookup_drafted, lookup_accepted; /* over both test models */
static int ngram_drafted, ngram_accepted;
/* Corpus n-grams for r's next engine (run_make): after the n_ctx tokens
 * ctx[i * n_ctx ..] comes next[i], with probability p. */
static void ngrams_set(struct run *r, const int32_t *ctx, int n_ctx, const int32_t *next, int n, float p)
{
	for (int i = 0; i < n && i < 512; i++) {
		memcpy(r->ng_ctx + SKIPPER_NGRAM_MAX_CTX * i, ctx + n_ctx * i, n_ctx * sizeof *ctx);
		r->ng_n[i] = (uint8_t)n_ctx;
		r->ng_next[i] = next[i];
		r->ng_p[i] = p;
	}
	r->ng = (struct skipper_ngram_set){ r->ng_ctx, r->ng_n, r->ng_next, r->ng_p, n < 512 ? n : 512 };
	r->o.ngrams = &r->ng; /* for the next run_make */
}

/* The tree's nodes as "token/parent/count/first" items, for comparing
 * with the expected shape in one string. */
static const char *tree_shape(const struct lookup_tree *t)
{
	static char buf[512];
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < t->n && at < sizeof buf - 32; i++)
		at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%d/%d/%d/%d", i ? " " : "", t->tok[i], t->parent[i],
		                       t->count[i], t->first[i]);
	return buf;
}

/* Which earlier occurrences lookup copies: the longest suffix n-gram
 * first; its occurrences' continuations ranked by how far the tokens
 * before them agree, the most recent first among equals; at most max_out
 * tokens each, never past the history's end; continuations that agree
 * merged (counted, the longer kept); at most `branches` of them. */
static void lookup_choice(void)
{
	/* "1 2 3 4" after 9 (then 5 6 8) and after 8 (then 7 7 0); the
	 * history ends "9 1 2 3 4" */
	static const int32_t ctx[] = { 9, 1, 2, 3, 4, 5, 6, 8, 1, 2, 3, 4, 7, 7, 0, 9, 1, 2, 3, 4 };
	/* "7" after 5 (then 3) and after 6 (then 4); the history ends "2 7" */
	static const int32_t tie[] = { 5, 7, 3, 6, 7, 4, 2, 7 };
	/* "7" then "2 6 0 7", and twice "1 5", then "4 7" and "3 7" */
	static const int32_t fan[] = { 3, 7, 1, 5, 3, 7, 1, 5, 4, 7, 2, 6, 0, 7 };
	/* "2" then "3 1 2" (to the end, after the longest agreement) and "3 1 2 3 1 2" */
	static const int32_t cyc[] = { 1, 2, 3, 1, 2, 3, 1, 2 };
	struct lookup_tree t;
	int g, k = lookup_propose(ctx, 20, 1, 4, 3, 1, &t, &g);
	ok(k == 3 && g == 4 && t.n == 3 && !strcmp(tree_shape(&t), "5/-1/1/1 6/0/1/1 8/1/1/1"),
	   "lookup copies the occurrence whose earlier context agrees (%d tokens: %s; n-gram %d)", k, tree_shape(&t), g);
	k = lookup_propose(tie, 8, 1, 4, 8, 1, &t, &g);
	ok(k == 3 && g == 1 && !strcmp(tree_shape(&t), "4/-1/1/1 2/0/1/1 7/1/1/1"),
	   "lookup copies the most recent of occurrences whose contexts agree equally, up to the history's end (%s)",
	   tree_shape(&t));
	k = lookup_propose(ctx, 20, 1, 4, 3, 8, &t, &g);
	ok(k == 3 && !strcmp(tree_shape(&t), "5/-1/1/1 6/0/1/1 8/1/1/1 7/-1/1/0 7/3/1/1 0/4/1/1"),
	   "a tree holds the other occurrence's continuation beside the spine (%s)", tree_shape(&t));
	k = lookup_propose(fan, 14, 1, 1, 4, 8, &t, &g);
	ok(k == 4 && !strcmp(tree_shape(&t), "2/-1/1/1 6/0/1/1 0/1/1/1 7/2/1/1 1/-1/2/0 5/4/2/1 4/5/1/1 7/6/1/1 3/5/1/0 "
	                                      "7/8/1/1"),
	   "continuations share their common prefix and count its occurrences (%s)", tree_shape(&t));
	k = lookup_propose(fan, 14, 1, 1, 2, 8, &t, &g);
	ok(k == 2 && !strcmp(tree_shape(&t), "2/-1/1/1 6/0/1/1 1/-1/2/0 5/2/2/1"),
	   "continuations equal over max_out tokens are one, counted twice (%s)", tree_shape(&t));
	k = lookup_propose(fan, 14, 1, 1, 4, 2, &t, &g);
	ok(k == 4 && !strcmp(tree_shape(&t), "2/-1/1/1 6/0/1/1 0/1/1/1 7/2/1/1 1/-1/1/0 5/4/1/1 4/5/1/1 7/6/1/1"),
	   "at most `branches` continuations, the best-ranked (%s)", tree_shape(&t));
	k = lookup_propose(cyc, 8, 1, 1, 6, 8, &t, &g);
	ok(k == 6 && !strcmp(tree_shape(&t), "3/-1/2/1 1/0/2/1 2/1/2/1 3/2/2/1 1/3/2/1 2/4/2/1"),
	   "a continuation cut by the history's end merges with a longer one that agrees, which is kept (%s)",
	   tree_shape(&t));

	/* "9 1 2 3" then 7, then "1 2 3 5" 1100 times, then "9 1 2 3": the
	 * first occurrence agrees best, but only the 1024 most recent are
	 * looked at */
	static int32_t many[5 + 4 * 1100 + 4];
	int nm = 0;
	static const int32_t head[] = { 9, 1, 2, 3, 7 }, rep4[] = { 1, 2, 3, 5 };
	memcpy(many, head, sizeof head);
	nm = 5;
	for (int i = 0; i < 1100; i++, nm += 4)
		memcpy(many + nm, rep4, sizeof rep4);
	memcpy(many + nm, head, 4 * sizeof *head);
	nm += 4;
	k = lookup_propose(many, nm, 1, 3, 2, 8, &t, &g);
	ok(k == 2 && g == 3 && t.tok[0] == 5 && t.count[0] == 1024 && !strstr(tree_shape(&t), "7/"),
	   "the 1024 most recent occurrences are looked at, not an older one that agrees better (%s)",
	   tree_shape(&t));
	/* the same with 3 repeats: the first occurrence is looked at and wins */
	memcpy(many + 5 + 4 * 3, head, 4 * sizeof *head);
	k = lookup_propose(many, 5 + 4 * 3 + 4, 1, 3, 2, 8, &t, &g);
	ok(k == 2 && t.tok[0] == 7, "of a few occurrences the one that agrees best leads (%s)", tree_shape(&t));

	/* where the model leaves the spine: the other verified way taken,
	 * none taken, or the spine followed to its end (nothing learnt) */
	struct lookup_stats s = { 0 };
	static const uint8_t sel[] = { 1, 1, 0, 1, 0, 0 };
	static const int32_t took_other[] = { 7, 7 }, followed[] = { 5, 9 }, took_none[] = { 4 };
	lookup_propose(ctx, 20, 1, 4, 3, 8, &t, &g);
	double prior = lookup_alt_rate(&s);
	lookup_record_alt(&s, &t, sel, took_other, 2);
	lookup_record_alt(&s, &t, sel, followed, 2);
	lookup_record_alt(&s, &t, sel, took_none, 1);
	ok(prior == 0.25 && s.alt_tries == 2 && s.alt_hits == 1 && fabs(lookup_alt_rate(&s) - 2.0 / 6.0) < 1e-12,
	   "the other ways' rate learns where the model left the spine (prior %.2f, %g of %g, rate %.3f)", prior,
	   s.alt_hits, s.alt_tries, lookup_alt_rate(&s));
}

static void lookup_lossless(const int32_t *prompt, int n_prompt)
{
	struct skipper_gen_params gp = { .max_tokens = 48, .seed = 1 };
	int32_t rep[64];
	int n = 0, L = model->view.hp.n_layer;
	struct run ar, ssd;
	struct toks ref, got;
	struct skipper_run_stats st;

	for (int i = 0; i < 3; i++)
		for (int j = 0; j < n_prompt && n < 64; j++)
			rep[n++] = prompt[j];
	run_open(&ar, NULL);
	if (generate(&ar, rep, n, &gp, &ref, &st))
		BAIL("AR generation failed");
	/* corpus n-grams: the pairs of the output itself (v = 4, 5: mostly
	 * right), each token followed by the next id (v = 6: mostly wrong),
	 * or every other pair so (v = 7: rounds alternate between the
	 * context's copies and the corpus's) */
	int32_t ctx[512], next[512];
	int n_pairs = 0;
	ctx[n_pairs] = rep[n - 1];
	next[n_pairs++] = ref.t[0];
	for (int i = 1; i < ref.n; i++, n_pairs++) {
		ctx[n_pairs] = ref.t[i - 1];
		next[n_pairs] = ref.t[i];
	}
	for (int v = 0; v < 8; v++) {
		static const char *what[] = { " alone", " + chain draft", " + chain draft", " + tree draft",
			                      " + corpus n-grams", " + corpus n-grams + tree draft",
			                      " + wrong corpus n-grams", " + corpus n-grams half wrong" };
		struct tp_state p = { .n_layer = L, .k = v == 1 ? 2 : 4, .width = v == 3 || v == 5 ? 3 : 1 };
		mask_set(p.attn, v == 2 ? "1" : "0110", L);
		mask_set(p.mlp, "0100", L);
		next_lookup = 1;
		run_open(&ssd, v == 0 || v == 4 || v >= 6 ? NULL : &p);
		next_lookup = 0;
		if (v >= 4) {
			int32_t wrong[512];
			for (int i = 0; i < n_pairs; i++)
				wrong[i] = v == 7 && i % 2 ? next[i] : (ctx[i] + 1) % model->view.hp.n_vocab;
			ngrams_set(&ssd, ctx, 1, v >= 6 ? wrong : next, n_pairs, 0.9f);
			run_make(&ssd);
		}
		if (generate(&ssd, rep, n, &gp, &got, &st) == 0) {
			ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t),
			   "greedy lookup%s == AR (lookup %d / %d accepted, corpus %d / %d, all drafts %d / %d)", what[v],
			   st.lookup_accepted, st.lookup_drafted, st.ngram_accepted, st.ngram_drafted, st.accepted,
			   st.drafted);
			if (v == 4 || v == 5) {
				ngram_drafted += st.ngram_drafted;
				ngram_accepted += st.ngram_accepted;
			}
			ok(same_kv(ar.be, ssd.be, skipper_engine_committed(ssd.eng)) &&
			       skipper_engine_committed(ssd.eng) == skipper_engine_committed(ar.eng),
			   "committed KV equals AR's (%d slots)", skipper_engine_committed(ssd.eng));
			lookup_drafted += st.lookup_drafted;
			lookup_accepted += st.lookup_accepted;
		} else {
			ok(0, "generation failed");
		}
		run_close(&ssd);
	}
	run_close(&ar);
}

/* A clock for the guard that counts modelled work instead of seconds, so
 * that what it decides does not depend on the machine or its load: a pass
 * costs 0.1 (embedding and head) plus, per sub-layer that runs, 1 / (2
 * n_layer) for its first row and `row` (a quarter unless a test says
 * otherwise: a CPU's verify curve is about that shape) of that for each
 * other row. */
struct work_clock {
	struct skipper_backend_ops ops;
	const struct skipper_backend_ops *real;
	double t, row;
	int trees; /* verify passes over a tree */
};
static struct work_clock wclock;

static int counted_forward(struct skipper_backend *be, const struct skipper_forward *fw, struct skipper_error *e)
{
	int n_layer = be->model->hp.n_layer, runs = 0;
	for (int l = 0; l < n_layer; l++)
		runs += (!fw->skip_attn || !fw->skip_attn[l]) + (!fw->skip_mlp || !fw->skip_mlp[l]);
	wclock.t += 0.1 + runs / (2.0 * n_layer) * (1 + wclock.row * (fw->n - 1));
	wclock.trees += fw->parent != NULL && fw->kv_write;
	return wclock.real->forward(be, fw, e);
}

static double work_now(void *ctx)
{
	return ((struct work_clock *)ctx)->t;
}

/* Run r's passes through counted_forward and its engine on the work clock,
 * from 0; work_clock_off restores the backend. */
static void work_clock_on(struct run *r)
{
	wclock.real = r->be->ops;
	wclock.ops = *r->be->ops;
	wclock.ops.forward = counted_forward;
	wclock.t = 0;
	wclock.trees = 0;
	wclock.row = 0.25;
	r->be->ops = &wclock.ops;
	skipper_engine_set_clock(r->eng, work_now, &wclock);
}

static void work_clock_off(struct run *r)
{
	r->be->ops = wclock.real;
}

/* The guard: a draft that is never accepted (every sub-layer skipped) costs
 * more than plain steps, so drafting pauses; the output stays AR's. */
static void guard_pauses(const int32_t *prompt, int n_prompt)
{
	struct skipper_gen_params gp = { .max_tokens = 96, .seed = 1 };
	struct tp_state p = { .n_layer = model->view.hp.n_layer, .k = 4, .width = 1 };
	struct run ar, ssd;
	struct toks ref, got;
	struct skipper_run_stats st;

	mask_set(p.attn, "1", p.n_layer);
	mask_set(p.mlp, "1", p.n_layer);
	run_open(&ar, NULL);
	run_open(&ssd, &p);
	ssd.o.no_guard = 0;
	run_make(&ssd);
	work_clock_on(&ssd);
	if (generate(&ar, prompt, n_prompt, &gp, &ref, &st) || generate(&ssd, prompt, n_prompt, &gp, &got, &st))
		BAIL("generation failed");
	ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t), "guarded SSD == AR");
	ok(st.backoffs >= 1 && st.drafted < 4 * (st.rounds / 2),
	   "a draft that never pays is paused (%d pauses, %d tokens drafted over %d rounds, %d accepted)", st.backoffs,
	   st.drafted, st.rounds, st.accepted);
	work_clock_off(&ssd);
	run_close(&ssd);
	run_close(&ar);
}

/* The cost curve's step follows the plain rounds: a curve cached in a busy
 * hour (here: a step of 1000 work units) is corrected by what plain steps
 * cost now (0.1 + 1 units on the work clock). */
static void step_follows(const int32_t *prompt, int n_prompt)
{
	struct skipper_gen_params gp = { .max_tokens = 16, .seed = 1 };
	const struct skipper_costs *c;
	struct skipper_run_stats st;
	struct toks got;
	struct run r;

	run_open(&r, NULL);
	if (skipper_engine_costs(r.eng, &c, &err))
		BAIL(err.msg);
	((struct skipper_costs *)c)->step_seconds = 1000;
	work_clock_on(&r);
	if (generate(&r, prompt, n_prompt, &gp, &got, &st))
		BAIL("generation failed");
	ok(fabs(c->step_seconds - 1.1) < 1e-9, "the costs' step follows the plain rounds (%.6f, want 1.1)",
	   c->step_seconds);
	work_clock_off(&r);
	run_close(&r);
}

/* Measure a cost curve into a cache file, replace its "verify N" lines
 * with set[] ("verify N V\n"), read it back into *c (r stays open). */
static void rewritten_curve(const char *path, const char *const *set, int n_set, struct run *r,
                            const struct skipper_costs **c)
{
	char line[256];
	FILE *in, *out;
	char *text = NULL;
	size_t len = 0;

	run_open(r, NULL);
	r->o.cost_cache = path;
	run_make(r);
	if (skipper_engine_costs(r->eng, c, &err)) /* measures, writes the cache */
		BAIL(err.msg);
	run_close(r);
	if (!(in = fopen(path, "r")) || !(out = open_memstream(&text, &len)))
		BAIL("cannot rewrite the cost cache");
	while (fgets(line, sizeof line, in)) {
		const char *put = line;
		for (int i = 0; i < n_set; i++)
			if (!strncmp(line, set[i], (size_t)(strchr(set[i] + 7, ' ') - set[i] + 1)))
				put = set[i];
		fputs(put, out);
	}
	fclose(in);
	fclose(out);
	if (!(out = fopen(path, "w")))
		BAIL("cannot rewrite the cost cache");
	fputs(text, out);
	fclose(out);
	free(text);
	run_open(r, NULL);
	r->o.cost_cache = path;
	run_make(r);
	if (skipper_engine_costs(r->eng, c, &err))
		BAIL(err.msg);
}

/* A curve with a point timed while something else ran (6 rows at 16.5
 * steps) and one below its neighbour (3 rows at 1 step) comes out bounded:
 * no pass costs more than two smaller ones that make it up, and the curve
 * is non-decreasing. One point timed high among lower ones (2 rows at 1.5
 * steps, 3 to 5 at 1.1) is pooled with them, not copied onto them. (A
 * cache file holding such a curve is refused instead: t-costs.) */
static void curve_bounded(void)
{
	struct skipper_costs c = { .n_max = 12 };

	for (int n = 1; n <= c.n_max; n++)
		c.verify[n] = 1.0 + 0.2 * (n - 1);
	c.verify[6] = 16.5;
	c.verify[3] = 1;
	skipper_costs_bound(&c);
	int sub = 1, mono = 1;
	for (int n = 2; n <= c.n_max; n++) {
		mono = mono && c.verify[n] >= c.verify[n - 1];
		for (int a = 1; a <= n / 2; a++)
			sub = sub && c.verify[n] <= c.verify[a] + c.verify[n - a] + 1e-12;
	}
	ok(sub && c.verify[6] < 16.5 && mono,
	   "a curve's outlier is bounded by smaller passes (6 rows: %.3f steps, 3 rows: %.3f, 2 rows: %.3f;%s%s)",
	   c.verify[6], c.verify[3], c.verify[2], sub ? "" : " not subadditive", mono ? "" : " decreasing");

	for (int n = 1; n <= c.n_max; n++)
		c.verify[n] = 1.0 + 0.2 * (n - 1);
	c.verify[2] = 1.5;
	c.verify[3] = c.verify[4] = c.verify[5] = 1.1;
	skipper_costs_bound(&c);
	ok(c.verify[2] <= 1.2 + 1e-9 && c.verify[5] <= 1.2 + 1e-9 && c.verify[2] <= c.verify[3] &&
	       c.verify[5] <= c.verify[6],
	   "a point timed high is pooled with the lower ones after it (2 / 3 / 5 / 6 rows: %.3f / %.3f / %.3f / %.3f "
	   "steps, want at most 1.2 up to 5 rows and non-decreasing)",
	   c.verify[2], c.verify[3], c.verify[5], c.verify[6]);
}

/* Lookup's guard, on a prompt whose greedy continuation repeats what it
 * already holds (copying that pays): with extra rows at a quarter of a
 * step it never pauses and beats plain steps on the work clock; with extra
 * rows dearer than a whole step (where no acceptance pays, and the
 * engine's cost curve does not know it) lookup learns what passes cost
 * from its first rounds (or its guard pauses it) and ends within a tenth
 * of plain decoding, while unguarded lookup drafts on. The output stays
 * AR's. */
static double work_run(const int32_t *prompt, int n_prompt, int lookup, const struct tp_state *policy, int guard,
                       double row, struct skipper_run_stats *st, struct toks *got)
{
	struct skipper_gen_params gp = { .max_tokens = 128, .seed = 1 };
	struct run r;

	next_lookup = lookup;
	run_open(&r, policy);
	next_lookup = 0;
	r.o.no_guard = !guard;
	run_make(&r);
	if (next_curve_told) { /* the engine's curve: what the work clock charges */
		const struct skipper_costs *c;
		if (skipper_engine_costs(r.eng, &c, &err))
			BAIL(err.msg);
		struct skipper_costs w = *c;
		w.step_seconds = 1.1; /* 0.1 + 1 */
		for (int n = 1; n <= w.n_max; n++)
			w.verify[n] = 1.0 + row * (n - 1) / 1.1;
		w.ctx_row = w.ctx_extra_row = 0; /* the work clock charges no context */
		skipper_engine_set_costs(r.eng, &w);
	}
	work_clock_on(&r);
	wclock.row = row;
	if (generate(&r, prompt, n_prompt, &gp, got, st))
		BAIL("generation failed");
	work_clock_off(&r);
	run_close(&r);
	return wclock.t;
}

static void lookup_guard(const int32_t *prompt, int n_prompt)
{
	struct skipper_run_stats st;
	struct toks ref, got;
	int32_t rep[64];
	int n = 0;

	work_run(prompt, n_prompt, 0, NULL, 0, 0.25, &st, &ref);
	for (int i = 0; i < n_prompt && n < 16; i++)
		rep[n++] = prompt[i];
	for (int i = 0; i < ref.n && n < 64; i++)
		rep[n++] = ref.t[i];
	for (int dear = 0; dear < 2; dear++) {
		double row = dear ? 1.5 : 0.25, t_ar = work_run(rep, n, 0, NULL, 0, row, &st, &ref);
		double t = work_run(rep, n, 1, NULL, 1, row, &st, &got);
		ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t), "guarded lookup == AR (rows at %.2f)",
		   row);
		if (!dear) {
			ok(st.backoffs == 0 && st.lookup_accepted >= st.lookup_drafted / 2 && t < 0.75 * t_ar,
			   "copying that pays is never paused (%d pauses, %d / %d accepted, %.1f vs AR %.1f work)", st.backoffs,
			   st.lookup_accepted, st.lookup_drafted, t, t_ar);
		} else {
			struct skipper_run_stats st2;
			double t_free = work_run(rep, n, 1, NULL, 0, row, &st2, &got);
			ok(t < 1.1 * t_ar && 2 * st.lookup_drafted < st2.lookup_drafted,
			   "verification dearer than its tokens stops lookup within a few rounds (%d pauses, %d drafted; %.1f "
			   "work, unguarded %d drafted, %.1f, AR %.1f)",
			   st.backoffs, st.lookup_drafted, t, st2.lookup_drafted, t_free, t_ar);
		}
	}

	/* beside a layer-skip draft, whose passes cost before anything is
	 * verified: guarded, a round that lookup's copy would serve better
	 * than the skip drafts have (or, before they have drafted, better than
	 * plain steps) is lookup's alone; unguarded, both draft every round */
	struct tp_state p = { .n_layer = model->view.hp.n_layer, .k = 4, .width = 1 };
	struct skipper_run_stats st2;
	mask_set(p.attn, "0110", p.n_layer);
	mask_set(p.mlp, "0100", p.n_layer);
	double t_ar = work_run(rep, n, 0, NULL, 0, 0.25, &st, &ref);
	double t = work_run(rep, n, 1, &p, 1, 0.25, &st, &got);
	ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t), "guarded lookup + skip draft == AR");
	double t_both = work_run(rep, n, 1, &p, 0, 0.25, &st2, &got);
	int skip = st.drafted - st.lookup_drafted, skip_both = st2.drafted - st2.lookup_drafted;
	ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t), "unguarded lookup + skip draft == AR");
	ok(st.lookup_accepted > 0 && 2 * skip < skip_both && t < t_both && t < 0.75 * t_ar,
	   "lookup's copies go first where they promise more (skip drafts %d, unguarded %d; lookup %d / %d accepted; "
	   "%.1f work, unguarded %.1f, AR %.1f)",
	   skip, skip_both, st.lookup_accepted, st.lookup_drafted, t, t_both, t_ar);
}

/* Greedy lookup alone (unguarded) with trees of up to `branches`
 * continuations, on the work clock with rows at 2 % of a step and a
 * curve that says so (a GPU's shape: extra rows nearly free); *trees
 * gets the passes that verified a tree. Returns the work. */
static double tree_run(const int32_t *prompt, int n_prompt, int branches, struct skipper_run_stats *st,
                       struct toks *got, int *trees)
{
	next_branches = branches;
	next_curve_told = 1;
	double t = work_run(prompt, n_prompt, 1, NULL, 0, 0.02, st, got);
	next_branches = LOOKUP_BRANCHES;
	next_curve_told = 0;
	*trees = wclock.trees;
	return t;
}

/* Where the best-ranked earlier continuation of a 3-gram is wrong and
 * another is right, greedy lookup rounds verify trees of both: output as
 * AR's, fewer passes and less work than verifying the best-ranked one
 * alone. On this model the next token follows from the last one, so the
 * output o after the prompt's tail is known before the prompt is built:
 * each "o[i-2] o[i-1] o[i]" occurs once after a token that also precedes
 * it in the output, then w (ranked first, wrong), and once after z, then
 * o[i+1] (right). */
static void lookup_trees(const int32_t *prompt, int n_prompt)
{
	struct skipper_run_stats st, st1;
	struct toks o, ref, got, got1;
	int32_t rep[128], z = -1, w = -1;
	int n = 0, trees, trees1;
	const int32_t *tail = prompt + n_prompt - 4;

	work_run(tail, 4, 0, NULL, 0, 0.25, &st, &o);
	for (int32_t t = 1; t < model->view.hp.n_vocab && w < 0; t++) {
		int used = skipper_tokenizer_is_eog(tok, t);
		for (int i = 0; i < o.n && !used; i++)
			used = o.t[i] == t;
		if (!used && z < 0)
			z = t;
		else if (!used)
			w = t;
	}
	for (int i = 3; i < 12 && i + 1 < o.n; i++) {
		int32_t wrong[] = { o.t[i - 3], o.t[i - 2], o.t[i - 1], o.t[i], w };
		int32_t right[] = { z, o.t[i - 2], o.t[i - 1], o.t[i], o.t[i + 1] };
		memcpy(rep + n, right, sizeof right);
		memcpy(rep + n + 5, wrong, sizeof wrong);
		n += 10;
	}
	memcpy(rep + n, tail, 4 * sizeof *tail);
	n += 4;
	work_run(rep, n, 0, NULL, 0, 0.25, &st, &ref);
	double t = tree_run(rep, n, LOOKUP_BRANCHES, &st, &got, &trees);
	double t1 = tree_run(rep, n, 1, &st1, &got1, &trees1);
	ok(w >= 0 && got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t) && got1.n == ref.n &&
	       !memcmp(got1.t, ref.t, ref.n * sizeof *ref.t),
	   "greedy lookup with trees == AR, and with one continuation (%d tokens)", ref.n);
	ok(trees > 0 && trees1 == 0 && st.rounds < st1.rounds && t < t1,
	   "trees of continuations: %d of %d passes, %.1f work; one continuation: %d passes, %.1f work", trees,
	   st.rounds, t, st1.rounds, t1);
}

/* ---- state captures for policies ---- */

/* Greedy run with the recording policy under `needs`; log in rec, tokens in got. */
static int rec_run(int32_t *prompt, int n_prompt, uint64_t needs, int prompt_rows, struct toks *got)
{
	struct skipper_gen_params gp = { .max_tokens = 24, .seed = 1 };
	struct tp_state p = { .n_layer = model->view.hp.n_layer, .k = 3, .width = 1 };
	struct skipper_run_stats st;
	struct run r;
	int rc;
	mask_set(p.attn, "0110", p.n_layer);
	mask_set(p.mlp, "0100", p.n_layer);
	int odd_off = rec.odd_off;
	free(rec.log);
	memset(&rec, 0, sizeof rec);
	rec.odd_off = odd_off;
	rec_desc.needs = needs;
	rec_desc.prompt_rows = prompt_rows;
	next_desc = &rec_desc;
	run_open(&r, &p);
	rc = generate(&r, prompt, n_prompt, &gp, got, &st);
	run_close(&r);
	next_desc = &tp_desc;
	return rc;
}

/* A long prompt told as it goes (skipper_engine_set_progress): read in
 * pieces, it gives the tokens and the K/V of one pass, bitwise; the start,
 * every piece and the end (done == total) are told, in order; a non-zero answer stops
 * the request before any token, and the engine serves the next one as
 * before; a prompt of less than two pieces is read in one pass, untold. */
static struct {
	int calls, last, total, in_order, stop_at;
} told;

static int tell(void *ctx, int done, int total)
{
	(void)ctx;
	told.in_order &= done > told.last;
	told.calls++;
	told.last = done;
	told.total = total;
	return told.stop_at && told.calls >= told.stop_at;
}

static void prefill_progress(void)
{
	enum { N = 2 * SKIPPER_PREFILL_PIECE + 300 };
	struct skipper_gen_params gp = { .max_tokens = 8, .seed = 1 };
	struct skipper_engine_opts o = { 0 };
	struct skipper_backend *be[2];
	struct skipper_engine *eng[2];
	struct toks ref = { .n = 0 }, got = { .n = 0 };
	struct skipper_run_stats st;
	int32_t prompt[N];
	int rc;

	for (int i = 0; i < N; i++)
		prompt[i] = (int32_t)((i * 7919u + 13u) % (unsigned)model->view.hp.n_vocab);
	for (int k = 0; k < 2; k++) {
		be[k] = test_backend_open(&model->view, test_backend_kind(), N + 64, 1);
		if (skipper_engine_new(be[k], tok, &o, &eng[k], &err))
			BAIL(err.msg);
	}
	skipper_engine_set_progress(eng[1], tell, NULL);
	told = (__typeof__(told)){ .in_order = 1, .last = -1 };
	if (skipper_engine_generate(eng[0], prompt, N, &gp, collect, &ref, &st, &err) ||
	    skipper_engine_generate(eng[1], prompt, N, &gp, collect, &got, &st, &err))
		BAIL(err.msg);
	ok(ref.n > 1 && got.n == ref.n && !memcmp(got.t, ref.t, (size_t)ref.n * sizeof *ref.t),
	   "a %d-token prompt read in pieces of %d: the same %d tokens as one pass", N, SKIPPER_PREFILL_PIECE, ref.n);
	ok(same_kv(be[0], be[1], N), "... and the same K/V, bitwise");
	/* 0, pieces [0, 512) and [512, 812), the last 512 tokens in the main pass */
	ok(told.calls == 4 && told.last == N && told.total == N && told.in_order,
	   "told at the start, after each piece and at the end, in order (%d calls, last %d of %d)", told.calls, told.last, told.total);

	told = (__typeof__(told)){ .in_order = 1, .last = -1, .stop_at = 2 };
	got.n = 0;
	rc = skipper_engine_generate(eng[1], prompt, N, &gp, collect, &got, &st, &err);
	ok(rc == SKIPPER_ERR_INTERRUPTED && got.n == 0 && told.calls == 2 && strstr(err.msg, "512 of"),
	   "a non-zero answer stops the request after that piece, no token (%d: %s)", rc, err.msg);
	told = (__typeof__(told)){ .in_order = 1, .last = -1 };
	got.n = 0;
	if (skipper_engine_generate(eng[1], prompt, N, &gp, collect, &got, &st, &err))
		BAIL(err.msg);
	ok(got.n == ref.n && !memcmp(got.t, ref.t, (size_t)ref.n * sizeof *ref.t) && told.calls == 4,
	   "the next request runs as before");
	told = (__typeof__(told)){ .in_order = 1, .last = -1 };
	got.n = 0;
	if (skipper_engine_generate(eng[1], prompt, 2 * SKIPPER_PREFILL_PIECE - 1, &gp, collect, &got, &st, &err))
		BAIL(err.msg);
	ok(got.n > 0 && told.calls == 0, "a prompt of %d tokens: one pass, nothing told", 2 * SKIPPER_PREFILL_PIECE - 1);
	for (int k = 0; k < 2; k++) {
		skipper_engine_free(eng[k]);
		be[k]->ops->destroy(be[k]);
	}
}

static void state_captures(int32_t *prompt, int n_prompt)
{
	int L = model->view.hp.n_layer, E = model->view.hp.n_embd;
	struct skipper_gen_params gp = { .max_tokens = 24, .seed = 1 };
	struct skipper_run_stats st;
	struct toks ref, got;
	struct run ar;
	float *ref_mean = malloc(E * sizeof *ref_mean), *layer_log;
	int layer_rows, same;

	run_open(&ar, NULL);
	if (generate(&ar, prompt, n_prompt, &gp, &ref, &st) ||
	    skipper_engine_prompt_mean(ar.eng, prompt, n_prompt, ref_mean, &err))
		BAIL(err.msg);
	run_close(&ar);

	/* layer-boundary captures, then sub-layer ones: the same rows, and the
	 * sub-layer points 0 and 2l + 2 are the layer points 0 and l + 1 */
	uint64_t acc = SKIPPER_NEED_LAST_LAYER_STATES | SKIPPER_NEED_ACCEPTED_STATES;
	if (rec_run(prompt, n_prompt, acc, 2, &got))
		BAIL("generation with layer captures failed");
	layer_log = rec.log, layer_rows = rec.rows;
	rec.log = NULL;
	is_int(rec.points, L + 1, "layer captures: n_layer + 1 points per row");
	ok(rec.timed > 0 && rec.untimed == 0, "every verdict carries its round's draft and verify seconds (%d, %d not)",
	   rec.timed, rec.untimed);
	if (rec_run(prompt, n_prompt, acc | SKIPPER_NEED_SUBLAYER_STATES, 2, &got))
		BAIL("generation with sub-layer captures failed");
	ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t), "sub-layer captures: greedy SSD == AR");
	is_int(rec.points, 2 * L + 1, "sub-layer captures: 2 n_layer + 1 points per row");
	is_int(rec.rows, layer_rows, "sub-layer captures: the same rows as layer captures (%d)", layer_rows);
	same = rec.rows == layer_rows && rec.rows > 2;
	for (int i = 0; same && i < rec.rows; i++)
		for (int l = -1; l < L; l++)
			same &= !memcmp(rec.log + ((size_t)i * (2 * L + 1) + 2 * l + 2) * E,
			                layer_log + ((size_t)i * (L + 1) + l + 1) * E, E * sizeof(float));
	ok(same, "sub-layer point 2l+2 == layer point l+1 for every captured row");
	/* an attention boundary differs from the MLP boundary before it (not a copy) */
	ok(rec.rows > 0 && memcmp(rec.log + (size_t)1 * E, rec.log, E * sizeof(float)),
	   "sub-layer point 1 (after attention 0) != embeddings");
	free(layer_log);

	/* a policy clearing plan.capture gets no states for that round */
	rec.odd_off = 1;
	if (rec_run(prompt, n_prompt, acc, 2, &got))
		BAIL("generation with captures turned off on odd rounds failed");
	rec.odd_off = 0;
	ok(rec.with > 0 && rec.without > 0 && rec.bad == 0,
	   "plan.capture = 0: no states that round (%d rounds with, %d without, %d not as planned)", rec.with,
	   rec.without, rec.bad);
	ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t), "captures off on odd rounds: greedy SSD == AR");

	/* PROMPT_MEAN from the one prefill == the separate prompt-mean pass */
	if (rec_run(prompt, n_prompt, SKIPPER_NEED_PROMPT_MEAN, 0, &got))
		BAIL("generation with PROMPT_MEAN failed");
	ok(rec.have_mean && !memcmp(rec.mean, ref_mean, E * sizeof(float)), "prompt mean from the prefill == "
	   "skipper_engine_prompt_mean");
	ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t), "PROMPT_MEAN: greedy SSD == AR");
	/* with state captures too: the prefill is split in two calls */
	if (rec_run(prompt, n_prompt, SKIPPER_NEED_PROMPT_MEAN | acc | SKIPPER_NEED_SUBLAYER_STATES, 2, &got))
		BAIL("generation with PROMPT_MEAN and captures failed");
	same = rec.have_mean;
	for (int k = 0; k < E; k++)
		same &= fabsf(rec.mean[k] - ref_mean[k]) <= 1e-6f * (1 + fabsf(ref_mean[k]));
	ok(same, "prompt mean with state captures (split prefill) == skipper_engine_prompt_mean");
	ok(got.n == ref.n && !memcmp(got.t, ref.t, ref.n * sizeof *ref.t), "split prefill: greedy SSD == AR");
	free(rec.log);
	rec.log = NULL;
	free(ref_mean);
}

/* ---- sampling ---- */

#define SEQ 3
static struct skipper_sampling samp = { .temperature = 1.0f, .top_k = 3, .top_p = 1.0f };

/* processed next-token distribution after prefix (full model) */
static void exact_next(struct skipper_backend *be, const int32_t *seq, int n, float *probs)
{
	int nv = model->view.hp.n_vocab;
	float *logits = malloc(nv * sizeof *logits);
	struct skipper_prob_id *scratch = malloc(nv * sizeof *scratch);
	int32_t row = n - 1, id;
	float p;
	struct skipper_forward fw = { .n = n, .tokens = seq, .n_past = 0, .kv_write = 1, .n_out = 1, .out_rows = &row,
	                              .top_k = 1, .top_ids = &id, .top_probs = &p, .logits = logits };
	if (skipper_backend_forward(be, &fw, &err))
		BAIL(err.msg);
	skipper_process_logits(&samp, logits, nv, probs, scratch);
	free(logits);
	free(scratch);
}

/* For the lookup sampling test, on a model whose every block is
 * near-redundant (so the next token depends on the last one only): a
 * prompt "a1 b1 a2 b2 ... c" where the a are the tokens the model may draw
 * after c and each b the most likely token after its a. Lookup then
 * proposes, whatever is drawn first, a token the model likes next: its
 * deterministic drafts (q = 1) are accepted often and rejected often. */
static int lookup_prompt(int32_t c, int32_t *out)
{
	int nv = model->view.hp.n_vocab, n = 0;
	float *p = malloc(nv * sizeof *p), *p2 = malloc(nv * sizeof *p2);
	struct run ex;

	run_open(&ex, NULL);
	out[n++] = c;
	for (int iter = 0; iter < 4; iter++) { /* the support settles at once on such a model */
		int m = 0;
		int32_t next[64];
		exact_next(ex.be, out, n, p);
		for (int a = 0; a < nv && m < 60; a++) {
			if (p[a] <= 0 || skipper_tokenizer_is_eog(tok, a))
				continue;
			next[m++] = a;
			int32_t two[2] = { c, a };
			exact_next(ex.be, two, 2, p2);
			int32_t b = 0;
			for (int x = 1; x < nv; x++)
				if (p2[x] > p2[b])
					b = x;
			next[m++] = b;
		}
		memcpy(out, next, m * sizeof *out);
		out[m] = c;
		n = m + 1;
	}
	run_close(&ex);
	free(p);
	free(p2);
	return n;
}

static int argmax(const float *p, int n)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		if (p[i] > p[best])
			best = i;
	return best;
}

/* lookup: 1 = context lookup, 2 = context lookup and corpus n-grams that
 * propose the most likely token after the previous one (a deterministic
 * proposal from another source). */
/* For the lookup tree sampling test: lookup_prompt's pairs "a b" each
 * followed by "a b2", b2 the other likely token after a, so that whatever
 * is drawn first has two continuations, both in the support. */
static int two_way_prompt(const int32_t *lp, int nl, int32_t *out)
{
	int nv = model->view.hp.n_vocab, n = 0;
	float *p = malloc(nv * sizeof *p);
	struct run ex;

	run_open(&ex, NULL);
	for (int i = 0; i + 1 < nl - 1; i += 2) {
		int32_t two[2] = { lp[nl - 1], lp[i] }, b2 = -1;
		exact_next(ex.be, two, 2, p);
		for (int x = 0; x < nv; x++)
			if (x != lp[i + 1] && p[x] > 0 && !skipper_tokenizer_is_eog(tok, x) && (b2 < 0 || p[x] > p[b2]))
				b2 = x;
		out[n++] = lp[i];
		out[n++] = lp[i + 1];
		if (b2 >= 0) {
			out[n++] = lp[i];
			out[n++] = b2;
		}
	}
	out[n++] = lp[nl - 1];
	run_close(&ex);
	free(p);
	return n;
}

static void sampling_distribution(int32_t *prompt, int n_prompt, int width, int lookup)
{
	int32_t ng_ctx[512], ng_next[512];
	int n_ng = 0;
	int nv = model->view.hp.n_vocab, n_cells = 0, N = 4000, L = model->view.hp.n_layer;
	struct skipper_test_cell cells[64];
	float *p1 = malloc(nv * sizeof *p1), *p2 = malloc(nv * sizeof *p2), *p3 = malloc(nv * sizeof *p3);
	int32_t seq[300];
	struct run ex, ssd;
	struct tp_state pol = { .n_layer = L, .k = 2, .width = width };
	double chi;
	int df, outside = 0;

	mask_set(pol.attn, "1", L); /* a poor draft: many rejections */
	mask_set(pol.mlp, "01", L);
	run_open(&ex, NULL);
	memcpy(seq, prompt, n_prompt * sizeof *seq);
	exact_next(ex.be, seq, n_prompt, p1);
	ng_ctx[n_ng] = prompt[n_prompt - 1];
	ng_next[n_ng++] = argmax(p1, nv);
	/* Generation stops at an end-of-generation token: such a sequence is
	 * shorter, padded with -1. */
	for (int a = 0; a < nv; a++) {
		if (p1[a] <= 0)
			continue;
		if (skipper_tokenizer_is_eog(tok, a)) {
			cells[n_cells++] = (struct skipper_test_cell){ { a, -1, -1 }, p1[a], 0 };
			continue;
		}
		seq[n_prompt] = a;
		exact_next(ex.be, seq, n_prompt + 1, p2);
		if (n_ng < 512) {
			ng_ctx[n_ng] = a;
			ng_next[n_ng++] = argmax(p2, nv);
		}
		for (int b = 0; b < nv; b++) {
			if (p2[b] <= 0)
				continue;
			if (skipper_tokenizer_is_eog(tok, b)) {
				cells[n_cells++] = (struct skipper_test_cell){ { a, b, -1 }, (double)p1[a] * p2[b], 0 };
				continue;
			}
			seq[n_prompt + 1] = b;
			exact_next(ex.be, seq, n_prompt + 2, p3);
			for (int c = 0; c < nv; c++)
				if (p3[c] > 0 && n_cells < 64)
					cells[n_cells++] = (struct skipper_test_cell){ { a, b, c }, (double)p1[a] * p2[b] * p3[c], 0 };
		}
	}
	run_close(&ex);

	/* lookup == 3: lookup trees, verified where extra rows cost 2 % of a
	 * step (the cached curve rewritten so) */
	char flat_path[] = "/tmp/skipper-t-engine-flat-XXXXXX";
	const struct skipper_costs *flat;
	if (lookup == 3) {
		static char lines[SKIPPER_COST_MAX_ROWS][32];
		const char *set[SKIPPER_COST_MAX_ROWS];
		int n_set = 0;
		close(mkstemp(flat_path));
		for (int n = 2; n <= SKIPPER_COST_MAX_ROWS && n_set < SKIPPER_COST_MAX_ROWS; n++, n_set++) {
			snprintf(lines[n_set], sizeof lines[n_set], "verify %d %.6f\n", n, 1.0 + 0.02 * (n - 1));
			set[n_set] = lines[n_set];
		}
		rewritten_curve(flat_path, set, n_set, &ssd, &flat);
		run_close(&ssd);
	}
	next_lookup = lookup;
	run_open(&ssd, width ? &pol : NULL);
	next_lookup = 0;
	work_clock_on(&ssd); /* counts the passes over trees */
	int lk_drafted = 0, lk_accepted = 0;
	for (int i = 0; i < N; i++) {
		struct skipper_gen_params gp = { .max_tokens = SEQ, .sampling = samp, .seed = 1000 + i };
		struct skipper_run_stats st;
		struct toks got;
		int found = 0;
		if (lookup) {
			/* a fresh engine: what lookup learnt from earlier samples (its
			 * acceptance, its pauses) would otherwise stop its proposals;
			 * with trees, on a curve where rows are nearly free */
			ssd.o.lookup = (struct skipper_lookup_opts){ .enable = 1, .min_ngram = 1, .max_ngram = 3,
				                                     .max_draft = 8, .branches = LOOKUP_BRANCHES };
			if (lookup == 2)
				ngrams_set(&ssd, ng_ctx, 1, ng_next, n_ng, 0.9f);
			if (lookup == 3)
				ssd.o.cost_cache = flat_path;
			run_make(&ssd);
			if (lookup == 3 && skipper_engine_costs(ssd.eng, &flat, &err))
				BAIL(err.msg);
		}
		if (generate(&ssd, prompt, n_prompt, &gp, &got, &st))
			break;
		lk_drafted += lookup == 2 ? st.ngram_drafted : st.lookup_drafted;
		lk_accepted += lookup == 2 ? st.ngram_accepted : st.lookup_accepted;
		for (int k = got.n; k < SEQ; k++)
			got.t[k] = -1;
		for (int c = 0; c < n_cells; c++)
			if (!memcmp(cells[c].t, got.t, sizeof cells[c].t)) {
				cells[c].count++;
				found = 1;
				break;
			}
		outside += !found; /* EOS ends early or a token outside top-k */
	}
	work_clock_off(&ssd);
	run_close(&ssd);
	if (lookup == 3)
		unlink(flat_path);
	chi = skipper_test_chi_square(cells, n_cells, N, &df);
	const char *what = lookup == 3 ? "lookup tree" : lookup == 2 ? (width ? "corpus n-grams or chain" : "corpus n-grams")
	                   : !width ? "lookup" : lookup ? "lookup or chain" : width > 1 ? "tree" : subset_n ? "subset-head chain" : "chain";
	diag("%s sampling: %d cells, df %d, chi-square %.2f, %d outside, %s tokens %d accepted of %d", what,
	     n_cells, df, chi, outside, lookup == 2 ? "corpus" : "lookup", lk_accepted, lk_drafted);
	/* 0.1% critical value ~ df + 3.1*sqrt(2 df) + 2 (Wilson-Hilferty bound is
	 * tighter; this keeps the false-alarm rate below 1e-3 for df in 5..60) */
	ok(df >= 3 && chi < df + 3.3 * sqrt(2.0 * df) + 3, "%s speculative sampling matches the model distribution",
	   what);
	if (lookup)
		ok(lk_drafted > N / 2 && lk_accepted > lk_drafted / 5 && lk_accepted < lk_drafted * 4 / 5,
		   "%s drafted in most runs, both accepted and rejected (%d of %d)",
		   lookup == 2 ? "corpus n-grams" : "lookup", lk_accepted, lk_drafted);
	if (lookup == 3)
		ok(wclock.trees > N / 4, "trees of lookup's continuations verified in %d of %d runs", wclock.trees, N);
	is_int(outside, 0, "every sample is a sequence of the exact support");
	free(p1);
	free(p2);
	free(p3);
}

/* the test model's file, removed however the program ends (a skip for want
 * of a CUDA device, a bail-out) */
static char model_file[] = "/tmp/skipper-t-engine-XXXXXX";

static void remove_model_file(void)
{
	unlink(model_file);
}

int main(void)
{
	int fd = mkstemp(model_file);
	struct skipper_test_model_opts o;
	int32_t *prompt;
	size_t n_prompt;
	static const int dtypes[] = { SKIPPER_F32, SKIPPER_Q4_1 };

	close(fd);
	atexit(remove_model_file);
	for (int d = 0; d < 2; d++) {
		skipper_test_model_defaults(&o);
		o.dtype = dtypes[d];
		o.n_layer = 6;
		o.seed = 7 + d;
		o.redundant[2] = o.redundant[3] = 1;
		if (skipper_test_model_write(model_file, &o) || skipper_model_load(model_file, &model, &err) ||
		    skipper_tokenizer_from_gguf(model->gguf, &tok, &err))
			BAIL(err.msg);
		if (skipper_tokenize(tok, "The quick brown fox", 19, 0, 0, &prompt, &n_prompt, &err))
			BAIL(err.msg);
		diag("model dtype %s, prompt %zu tokens, backend %s", skipper_dtype_name(o.dtype), n_prompt,
		     test_backend_name(test_backend_kind()));
		greedy_lossless(prompt, (int)n_prompt);
		draft_vocab_lossless(prompt, (int)n_prompt);
		lookup_lossless(prompt, (int)n_prompt);
		guard_pauses(prompt, (int)n_prompt);
		step_follows(prompt, (int)n_prompt);
		if (d == 0)
			curve_bounded();
		state_captures(prompt, (int)n_prompt);
		if (d == 0 && quick()) /* emulated kernels: a 1,324-token prompt 8 times is minutes */
			diag("SKIPPER_TEST_QUICK: long prompts read in pieces not tested");
		else if (d == 0)
			prefill_progress();
		if (d == 0 && quick()) {
			diag("SKIPPER_TEST_QUICK: sampling distribution not tested");
		} else if (d == 0) {
			sampling_distribution(prompt, (int)n_prompt, 1, 0);
			sampling_distribution(prompt, (int)n_prompt, 3, 0);
			subset_set(1); /* q lives on the subset; targets outside it are never drafted */
			sampling_distribution(prompt, (int)n_prompt, 1, 0);
			subset_set(0);
		}
		free(prompt);
		skipper_tokenizer_free(tok);
		skipper_model_free(model);
	}
	lookup_choice();
	/* whether a model's text repeats itself depends on its numerics: one of the two is enough */
	ok(lookup_drafted > 0 && lookup_accepted > 0, "lookup proposed and got tokens accepted (%d of %d)",
	   lookup_accepted, lookup_drafted);
	ok(ngram_drafted > 0 && ngram_accepted > 0, "corpus n-grams of the output were drafted and accepted (%d of %d)",
	   ngram_accepted, ngram_drafted);
	/* a model whose next token depends on the last one: greedy text cycles,
	 * lookup's drafts are accepted or rejected often */
	skipper_test_model_defaults(&o);
	o.n_layer = 2;
	o.seed = 5;
	o.redundant[0] = o.redundant[1] = 1;
	if (skipper_test_model_write(model_file, &o) || skipper_model_load(model_file, &model, &err) ||
	    skipper_tokenizer_from_gguf(model->gguf, &tok, &err))
		BAIL(err.msg);
	{
		/* a tokenizer of another size than the model's head: refused,
		 * since an id the model writes must be text */
		const char *toks[3] = { "a", "b", "c" };
		struct skipper_tokenizer_spec sp = { .model = "llama", .n_vocab = 3, .tokens = toks, .bos = -1, .eos = -1,
		                                     .unk = -1, .eot = -1, .eom = -1, .pad = -1, .add_bos = -1,
		                                     .add_eos = -1, .add_space_prefix = -1 };
		struct skipper_tokenizer *small = NULL;
		struct skipper_backend *be = test_backend_open(&model->view, test_backend_kind(), 256, 1);
		struct skipper_engine *eng = NULL;
		int rc = skipper_tokenizer_from_arrays(&sp, &small, &err) ? -1 : skipper_engine_new(be, small, NULL, &eng, &err);
		ok(rc == SKIPPER_ERR_FORMAT && strstr(err.msg, "the vocabulary has 3 tokens"),
		   "a tokenizer whose vocabulary is not the model's is refused: %s", err.msg);
		skipper_engine_free(eng);
		be->ops->destroy(be);
		skipper_tokenizer_free(small);
	}
	int32_t lp[128];
	int nl = lookup_prompt(skipper_tokenizer_find(tok, "h"), lp);
	lookup_guard(lp, nl < 32 ? nl : 32);
	lookup_trees(lp, nl);
	if (!quick()) {
		/* lookup's deterministic drafts under speculative sampling */
		sampling_distribution(lp, nl, 0, 1);
		sampling_distribution(lp, nl, 1, 1);
		sampling_distribution(lp, nl, 0, 2);
		int32_t lt[256];
		int nt = two_way_prompt(lp, nl, lt);
		sampling_distribution(lt, nt, 0, 3);
	}
	skipper_tokenizer_free(tok);
	skipper_model_free(model);
	return tap_done();
}
