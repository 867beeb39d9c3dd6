/* Context-lookup drafts: n-gram matching over the token history and the
 * acceptance model that sizes them (see lookup.h). */
#include <stdlib.h>
#include <string.h>

#include "lookup.h"

/* How far the text before a[j] and before the key (ctx[nc - g ..]) agree
 * beyond the g tokens both end with, up to LOOKUP_CONTEXT; a -1 in a (the
 * line between two requests of a history) ends it. */
static int agree_before(const struct lookup_collect *c, int j)
{
	int l = 0;
	while (l < LOOKUP_CONTEXT && j - 1 - l >= 0 && c->nc - c->g - 1 - l >= 0 && c->a[j - 1 - l] >= 0 &&
	       c->a[j - 1 - l] == c->ctx[c->nc - c->g - 1 - l])
		l++;
	return l;
}

void lookup_collect_init(struct lookup_collect *c, const int32_t *a, int na, const int32_t *ctx, int nc, int g,
                         int max_out, int branches)
{
	if (branches > LOOKUP_BRANCHES)
		branches = LOOKUP_BRANCHES;
	if (max_out > LOOKUP_TREE_NODES / LOOKUP_BRANCHES)
		max_out = LOOKUP_TREE_NODES / LOOKUP_BRANCHES;
	*c = (struct lookup_collect){ .a = a, .na = na, .ctx = ctx, .nc = nc, .g = g, .max_out = max_out,
		                      .max = branches };
}

/* Keep the occurrence at a[j] (taken from the most recent back): merged
 * into a kept branch whose continuation it agrees with, else kept while
 * fewer than max are, else in place of the worst when it agrees longer
 * before (an older one never wins a tie). */
void lookup_collect_add(struct lookup_collect *c, int j)
{
	int start = j + c->g, len = 0, agree = agree_before(c, j), m = c->m;
	struct lookup_branch *b = c->b;

	while (len < c->max_out && start + len < c->na && c->a[start + len] >= 0)
		len++;
	if (len < 1 || c->max < 1)
		return;
	for (int i = 0; i < m; i++) {
		int k = len < b[i].len ? len : b[i].len;
		if (memcmp(c->a + start, c->a + b[i].start, (size_t)k * sizeof *c->a) != 0)
			continue;
		b[i].count++;
		if (agree > b[i].agree) {
			b[i].agree = agree;
			b[i].j = j;
		}
		if (len > b[i].len) {
			b[i].start = start;
			b[i].len = len;
		}
		return;
	}
	int at = m;
	if (m == c->max) {
		at = 0;
		for (int i = 1; i < m; i++)
			if (b[i].agree < b[at].agree || (b[i].agree == b[at].agree && b[i].j < b[at].j))
				at = i;
		if (agree <= b[at].agree)
			return;
	}
	b[at] = (struct lookup_branch){ .j = j, .agree = agree, .start = start, .len = len, .count = 1 };
	if (m < c->max)
		c->m++;
}

static int branch_order(const void *pa, const void *pb)
{
	const struct lookup_branch *a = pa, *b = pb;
	if (a->agree != b->agree)
		return a->agree > b->agree ? -1 : 1;
	return (a->j < b->j) - (a->j > b->j);
}

/* A history's continuations rank by how often they were taken first. */
static int branch_order_count(const void *pa, const void *pb)
{
	const struct lookup_branch *a = pa, *b = pb;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return branch_order(pa, pb);
}

/* Merge the ranked continuations into t, the best-ranked first. */
int lookup_collect_tree(struct lookup_collect *c, struct lookup_tree *t)
{
	uint8_t has_child[LOOKUP_TREE_NODES + 1] = { 0 }; /* [node + 1] */
	const struct lookup_branch *b = c->b;

	t->n = t->spine = 0;
	if (!c->m)
		return 0;
	qsort(c->b, (size_t)c->m, sizeof *c->b, c->by_count ? branch_order_count : branch_order);
	for (int i = 0; i < c->m; i++) {
		int par = -1;
		for (int d = 0; d < b[i].len; d++) {
			int32_t tok = c->a[b[i].start + d];
			int child = -1;
			for (int k = par + 1; k < t->n && child < 0; k++)
				if (t->parent[k] == par && t->tok[k] == tok)
					child = k;
			if (child < 0) {
				child = t->n++;
				t->tok[child] = tok;
				t->parent[child] = (int16_t)par;
				t->count[child] = 0;
				t->first[child] = !has_child[par + 1];
				has_child[par + 1] = 1;
			}
			t->count[child] += b[i].count;
			par = child;
		}
	}
	t->spine = b[0].len;
	return t->spine;
}

/* Occurrences examined per proposal at most, the most recent first: a
 * history that repeats one phrase thousands of times (a 32k context of one
 * token) took 0.9 ms a round without a bound, 4 % of the 1.5B's step. */
#define LOOKUP_SCAN 1024

int lookup_propose(const int32_t *hist, int n, int min_ngram, int max_ngram, int max_out, int branches,
                   struct lookup_tree *t, int *ngram)
{
	struct lookup_collect c;

	if (max_ngram > LOOKUP_MAX_NGRAM)
		max_ngram = LOOKUP_MAX_NGRAM;
	t->n = t->spine = 0;
	*ngram = 0;
	for (int g = max_ngram < n - 1 ? max_ngram : n - 1; g >= min_ngram && g >= 1; g--) {
		const int32_t *key = hist + n - g;
		int seen = 0;
		/* the earlier occurrences with at least one token after them */
		lookup_collect_init(&c, hist, n, hist, n, g, max_out, branches);
		for (int j = n - g - 1; j >= 0 && seen < LOOKUP_SCAN; j--)
			if (hist[j] == key[0] && memcmp(hist + j, key, (size_t)g * sizeof *key) == 0) {
				lookup_collect_add(&c, j);
				seen++;
			}
		if (lookup_collect_tree(&c, t)) {
			*ngram = g;
			return t->spine;
		}
	}
	return 0;
}

/* Evidence kept per round: about the last 30 rounds count. */
#define DECAY 0.97

double lookup_accept_rate(const struct lookup_stats *s, int n)
{
	/* prior: half of the proposed tokens accepted, worth 2 tokens of
	 * evidence. Replayed on the Spec-Bench token streams of the 1.5B, a
	 * prior of 3 in 4 worth 4 tokens gave the same mean gain but lost up to
	 * 8 % on short answers that copy nothing, before the evidence came in. */
	return (s->hits[n][s->streak] + 1.0) / (s->tries[n][s->streak] + 2.0);
}

double lookup_evidence(const struct lookup_stats *s)
{
	double t = 0;
	for (int n = 0; n <= LOOKUP_MAX_NGRAM; n++)
		t += s->tries[n][0] + s->tries[n][1];
	return t;
}

double lookup_alt_rate(const struct lookup_stats *s)
{
	/* prior: one in four, worth 4 rounds */
	return (s->alt_hits + 1.0) / (s->alt_tries + 4.0);
}

void lookup_record_alt(struct lookup_stats *s, const struct lookup_tree *t, const uint8_t *sel,
                       const int32_t *target, int n_target)
{
	int node = -1;

	for (int d = 0; d < n_target; d++) {
		int next = -1, best = -1, others = 0;
		for (int c = node + 1; c < t->n; c++) {
			if (t->parent[c] != node)
				continue;
			if (t->first[c])
				best = c;
			else if (sel[c])
				others = 1;
			if (sel[c] && t->tok[c] == target[d])
				next = c;
		}
		if (best >= 0 && t->tok[best] == target[d] && next == best) {
			node = next;
			continue;
		}
		if (others && (best < 0 || t->tok[best] != target[d])) {
			s->alt_tries += 1;
			s->alt_hits += next >= 0;
		}
		return;
	}
}

void lookup_record(struct lookup_stats *s, int n, int k, int accepted)
{
	for (int g = 0; g <= LOOKUP_MAX_NGRAM; g++)
		for (int t = 0; t < 2; t++) {
			s->hits[g][t] *= DECAY;
			s->tries[g][t] *= DECAY;
		}
	s->alt_hits *= DECAY;
	s->alt_tries *= DECAY;
	if (k <= 0)
		return;
	s->hits[n][s->streak] += accepted;
	/* the accepted tokens, and the one that was rejected if any */
	s->tries[n][s->streak] += accepted + (accepted < k);
	s->streak = accepted == k;
}
