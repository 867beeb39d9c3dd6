/* Each round's plan: how far the policy may draft, and which of lookup's
 * proposals (the context's chain or tree, or the corpus n-grams' chain)
 * is worth verifying, sized by the cost curve: a proposal is cut where
 * the tokens it is expected to yield per decode step are highest. */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "base/error.h"

/* What verifying k candidates expected to add `gain` accepted tokens is
 * worth. Alone: the round's tokens per decode step, the root's one and the
 * gain over a pass of k + 1 rows. In a pass shared with other sequences
 * (batch.c): the gain less what the k rows add to the pass, priced at the
 * tokens per step the pass yields, so that a row is added only while it
 * raises the whole pass's tokens per step (others: how many sequences
 * share it). round_floor is the value of verifying nothing, with a margin
 * for the round's own work. */
static double round_value(const struct skipper_engine *e, int others, int k, double gain)
{
	if (!others)
		return (1.0 + gain) / engine_verify_cost(e, k + 1);
	int base = others + 1;
	return gain - e->batch.rate * (engine_verify_cost(e, base + k) - engine_verify_cost(e, base));
}

static double round_floor(int others) { return others ? 0.02 : 1.02; }

/* The k of a proposal with per-token acceptance p[0..n) that maximises
 * round_value; *value gets it, or round_floor with k = 0 when no k beats
 * that. */
static int best_cut(const struct skipper_engine *e, int others, const float *p, int n, double *value)
{
	double chain = 1, expected = 0;
	int best = 0;
	*value = round_floor(others);
	for (int k = 1; k <= n; k++) {
		chain *= p[k - 1];
		expected += chain;
		double v = round_value(e, others, k, expected);
		if (v > *value) {
			*value = v;
			best = k;
		}
	}
	return best;
}

int engine_batch_draft_len(const struct skipper_engine *e, int n, int g)
{
	if (!e->batch.others)
		return n;
	/* a draft token costs its verification row and a g-th of a draft
	 * step over g rows, both at the pass's rate. Until the drafts have
	 * been verified a few times their acceptance is unknown: one token a
	 * round, where one sure to be accepted would pay, learns it */
	int learning = e->pace.skip_tries < 4;
	double s = learning ? 1.0 : engine_skip_accept(e);
	double step = engine_skip_step_cost(e) * engine_verify_cost(e, g) / g;
	double chain = 1, gain = 0, best = round_floor(e->batch.others);
	int k_best = 0;
	for (int k = 1; k <= (learning ? 1 : n); k++) {
		chain *= s;
		gain += chain;
		double v = round_value(e, e->batch.others, k, gain) - e->batch.rate * k * step;
		if (v > best) {
			best = v;
			k_best = k;
		}
	}
	return k_best;
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
 * always form a tree; as many of them as maximise round_value. Returns
 * that value (round_floor with none). Replayed on the 1.5B's plain
 * outputs for 90 Spec-Bench prompts: +2.4 % tokens per step over the
 * spine alone (code edits +4 %, RAG +4 %); side by side on the 1.5B, 24
 * prompts twice, 1.595x over plain decoding against 1.556x. */
static double tree_plan(struct skipper_engine *e, double a, int max)
{
	const struct lookup_tree *t = &e->lk.tree;
	struct node_pick pick[LOOKUP_TREE_NODES];
	double others[LOOKUP_TREE_NODES + 1] = { 0 }, p[LOOKUP_TREE_NODES];
	double r = lookup_alt_rate(&e->lk.stats), value = round_floor(e->batch.others), sum = 0;
	int best = 0;

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
	for (int k = 1; k <= t->n && k <= max; k++) {
		sum += pick[k - 1].p;
		double v = round_value(e, e->batch.others, k, sum);
		if (v > value) {
			value = v;
			best = k;
		}
	}
	memset(e->lk.sel, 0, (size_t)t->n);
	for (int k = 0; k < best; k++)
		e->lk.sel[pick[k].i] = 1;
	e->lk.tree_n = best;
	return value;
}

/* The history's proposal as a chain, at most max tokens: its spine (the
 * best-ranked continuation) in e->lk.htree, each token's chance in
 * table[] taken from the counts (how often the text went on so, of the
 * times it reached the token before: SuffixDecoding's path probability,
 * one step at a time). Returns its length. */
static int history_chain(struct skipper_engine *e, int max, float *table)
{
	const struct lookup_tree *t = &e->lk.htree;
	int match, n = history_propose(e->lk.history, e->lk.hist, e->lk.hist_n, LOOKUP_MAX_NGRAM, max,
	                               e->lk.opts.branches, &e->lk.htree, &match);
	double total = 0;
	for (int i = 0; i < t->n; i++)
		total += t->parent[i] < 0 ? t->count[i] : 0;
	for (int i = 0; i < n; i++) {
		double above = i ? t->count[i - 1] : total;
		table[i] = (float)(above > 0 ? t->count[i] / above : 0);
	}
	return n;
}

/* The lookup proposal worth verifying on its own, at most cap tokens
 * deep and `rows` rows: the context's chain, its tree when that promises
 * more, or the corpus n-grams' or the history's chain when those promise
 * more (each only while its guard lets it draft). Returns the round_value it promises
 * (round_floor when there is none). */
static double lookup_plan(struct skipper_engine *e, int cap, int rows, int context, int corpus, int history)
{
	int max = e->lk.opts.max_draft < cap ? e->lk.opts.max_draft : cap, n = 0;
	int max_nodes = e->lk.opts.max_draft < rows ? e->lk.opts.max_draft : rows;
	double v, v_corpus;

	e->lk.tree.n = 0;
	e->lk.tree_n = 0;
	if (context)
		n = lookup_propose(e->lk.hist, e->lk.hist_n, e->lk.opts.min_ngram, e->lk.opts.max_ngram, max, e->lk.opts.branches, &e->lk.tree,
		                   &e->lk.ngram);
	float a = (float)lookup_accept_rate(&e->lk.stats, e->lk.ngram);
	memcpy(e->lk.tok, e->lk.tree.tok, sizeof *e->lk.tok * (size_t)n);
	for (int i = 0; i < n; i++)
		e->lk.p[i] = a;
	e->lk.n = best_cut(e, e->batch.others, e->lk.p, n, &v);
	if (e->lk.tree.n > n) {
		double v_tree = tree_plan(e, a, max_nodes);
		if (v_tree > v)
			v = v_tree;
		else
			e->lk.tree_n = 0;
	}
	/* beside other sequences a proposal is priced at the pass's rate,
	 * which the prior's acceptance seldom pays, so the acceptance would
	 * never be learnt: while the sequence has less than half a token of
	 * evidence (none, or faded over some 20 rounds) a proposal is
	 * verified as it would be alone, where one token sure to be accepted
	 * would pay (a probe for every kind of match cost a batch of 4 more
	 * than its copies gave) */
	if (e->batch.others && n > 0 && !e->lk.n && !e->lk.tree_n && lookup_evidence(&e->lk.stats) < 0.5 &&
	    round_value(e, e->batch.others, 1, 1.0) > round_floor(e->batch.others))
		e->lk.n = best_cut(e, 0, e->lk.p, n, &(double){ 0 });
	e->lk.corpus = 0;
	if (corpus) {
		int32_t tok[MAX_DRAFT];
		float table[MAX_DRAFT], p[MAX_DRAFT];
		/* a chain below one chance in ten cannot pay for its rows */
		int m = ngram_propose(&e->lk.ngrams, e->lk.hist, e->lk.hist_n, max, 0.1, tok, table);
		for (int i = 0; i < m; i++)
			p[i] = (float)ngram_accept_rate(&e->lk.ng_stats, table[i]);
		int k = best_cut(e, e->batch.others, p, m, &v_corpus);
		if (v_corpus > v) {
			memcpy(e->lk.tok, tok, sizeof *tok * (size_t)k);
			memcpy(e->lk.p, p, sizeof *p * (size_t)k);
			memcpy(e->lk.table, table, sizeof *table * (size_t)k);
			e->lk.n = k;
			e->lk.tree_n = 0;
			e->lk.corpus = 1;
			v = v_corpus;
		}
	}
	e->lk.from_history = 0;
	if (history) {
		float table[MAX_DRAFT], p[MAX_DRAFT];
		double v_hist;
		int m = history_chain(e, max, table);
		for (int i = 0; i < m; i++)
			p[i] = (float)ngram_accept_rate(&e->lk.hist_stats, table[i]);
		int k = best_cut(e, e->batch.others, p, m, &v_hist);
		if (v_hist > v) {
			memcpy(e->lk.tok, e->lk.htree.tok, sizeof *e->lk.tok * (size_t)k);
			memcpy(e->lk.p, p, sizeof *p * (size_t)k);
			memcpy(e->lk.table, table, sizeof *table * (size_t)k);
			e->lk.n = k;
			e->lk.tree_n = 0;
			e->lk.corpus = 0;
			e->lk.from_history = 1;
			v = v_hist;
		}
	}
	return v;
}

/* A lookup proposal as the round's chain: a deterministic proposal, q = 1
 * on each of its tokens, which speculative sampling accepts with
 * probability p(token) and otherwise resamples from p without it. */
int engine_lookup_as_chain(struct skipper_engine *e, const struct round_ctx *r)
{
	for (int i = 0; i < e->lk.n; i++) {
		e->draft.tok[i] = e->lk.tok[i];
		e->draft.prob[i] = 1.0f;
		for (int j = 0; j < e->draft.top_k; j++) {
			e->draft.top_ids[i * e->draft.top_k + j] = j ? -1 : e->lk.tok[i];
			e->draft.top_probs[i * e->draft.top_k + j] = j ? 0.0f : 1.0f;
		}
		if (!r->greedy) {
			float *q = &e->draft.q[(size_t)i * e->n_vocab];
			memset(q, 0, (size_t)e->n_vocab * sizeof *q);
			q[e->lk.tok[i]] = 1.0f;
		}
	}
	return e->lk.n;
}

/* This round's plan, never past max_tokens (a round always adds one bonus
 * token) nor past the context: the skip mask (e->skip_*) and draft length
 * from the policy, and the context-lookup tokens worth
 * verifying (e->lk.n). A source whose drafting was slower than plain steps
 * sits out its pause; with sampling a round verifies one source's chain. */
int engine_plan_round(struct skipper_engine *e, struct round_ctx *r, int *n_draft, struct skipper_error *err)
{
	int cap = r->gp->max_tokens - r->n_gen - 1, n_ctx = e->be->n_ctx, rc;
	double lk_value = 0;

	*n_draft = 0;
	e->lk.n = 0;
	e->lk.tree_n = 0;
	r->lookup_only = 0;
	engine_costs_price(e, r->n_past);
	if (cap > MAX_DRAFT)
		cap = MAX_DRAFT;
	if (cap > n_ctx - r->n_past - 1)
		cap = n_ctx - r->n_past - 1;
	if (r->n_past + 1 > n_ctx)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "context of %d tokens is full (%s)", n_ctx, engine_ctx_advice(e));
	if (cap < 0)
		cap = 0;
	if (e->lk.opts.enable && cap > 0) {
		int context = engine_guard_open(e, &e->pace.guard[GUARD_LOOKUP]);
		int corpus = e->lk.ngrams.n && engine_guard_open(e, &e->pace.guard[GUARD_CORPUS]);
		int history = e->lk.history && engine_guard_open(e, &e->pace.guard[GUARD_HISTORY]);
		/* a tree's rows need only fit the context: siblings emit one token */
		int rows = n_ctx - r->n_past - 1 < MAX_DRAFT ? n_ctx - r->n_past - 1 : MAX_DRAFT;
		lk_value = lookup_plan(e, cap, rows, context, corpus, history);
	}
	int pcap = e->pol && !engine_guard_open(e, &e->pace.guard[GUARD_SKIP]) ? 0 : cap;
	/* a layer-skip draft costs model passes before anything is verified,
	 * lookup's costs none: when lookup promises more tokens per step than
	 * the skip drafts have delivered lately, the round is lookup's alone
	 * (with sampling, a round verifies one source's chain anyway; beside
	 * other sequences, whose pass prices a proposal by what it adds, any
	 * proposal worth its rows) */
	int lk_any = e->lk.n > 0 || e->lk.tree_n > 0;
	if (lk_any && (!r->greedy || e->batch.others || lk_value > engine_skip_rate(e)))
		pcap = 0;
	memset(e->draft.skip_attn, 0, (size_t)e->n_layer);
	memset(e->draft.skip_mlp, 0, (size_t)e->n_layer);
	if (e->pol) {
		struct skipper_plan plan = { .n_layer = e->n_layer, .skip_attn = e->draft.skip_attn, .skip_mlp = e->draft.skip_mlp,
		                             .max_draft = pcap, .capture = e->cap.buf != NULL, .round = r->st->rounds,
		                             .n_committed = r->n_past, .n_generated = r->n_gen };
		double t0 = engine_now();
		rc = skipper_policy_select_draft(e->pol, &plan, err);
		r->st->t_policy += engine_now() - t0;
		if (rc)
			return rc;
		*n_draft = plan.max_draft < pcap ? plan.max_draft : pcap;
		r->capture = e->cap.buf && plan.capture; /* the policy may only turn captures off */
		if (*n_draft < 0)
			*n_draft = 0;
	}
	r->lookup_only = *n_draft == 0 && lk_any;
	if (!r->lookup_only)
		e->lk.tree_n = 0; /* beside a policy's draft lookup adds its chain */
	return SKIPPER_OK;
}
