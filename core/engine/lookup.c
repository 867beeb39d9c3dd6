/* Context-lookup drafts: n-gram matching over the token history and the
 * acceptance model that sizes them (see lookup.h). */
#include <stdlib.h>
#include <string.h>

#include "lookup.h"

/* How far the context before hist[j] and before hist[n - g] agree beyond
 * the g tokens both end with, up to LOOKUP_CONTEXT. */
static int agree_before(const int32_t *hist, int n, int g, int j)
{
	int l = 0;
	while (l < LOOKUP_CONTEXT && j - 1 - l >= 0 && hist[j - 1 - l] == hist[n - g - 1 - l])
		l++;
	return l;
}

/* Occurrences with one continuation: the best-agreeing one's position
 * and agreement, where the longest continuation starts, how many. */
struct branch {
	int j, agree, start, len, count;
};

/* Keep an occurrence at j (scanned from the most recent back): merged
 * into a kept branch whose continuation it agrees with, else kept while
 * fewer than max are, else in place of the worst when it agrees longer
 * before (an older one never wins a tie). Returns how many are kept. */
static int keep_occurrence(const int32_t *hist, int n, int g, int j, int max_out, struct branch *b, int m, int max)
{
	int start = j + g, len = n - start < max_out ? n - start : max_out, agree = agree_before(hist, n, g, j);

	for (int i = 0; i < m; i++) {
		int c = len < b[i].len ? len : b[i].len;
		if (memcmp(hist + start, hist + b[i].start, (size_t)c * sizeof *hist) != 0)
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
		return m;
	}
	int at = m;
	if (m == max) {
		at = 0;
		for (int i = 1; i < m; i++)
			if (b[i].agree < b[at].agree || (b[i].agree == b[at].agree && b[i].j < b[at].j))
				at = i;
		if (agree <= b[at].agree)
			return m;
	}
	b[at] = (struct branch){ .j = j, .agree = agree, .start = start, .len = len, .count = 1 };
	return m == max ? m : m + 1;
}

static int branch_order(const void *pa, const void *pb)
{
	const struct branch *a = pa, *b = pb;
	if (a->agree != b->agree)
		return a->agree > b->agree ? -1 : 1;
	return (a->j < b->j) - (a->j > b->j);
}

/* Merge the ranked continuations into t, the best-ranked first. */
static void build_tree(const int32_t *hist, const struct branch *b, int m, struct lookup_tree *t)
{
	uint8_t has_child[LOOKUP_TREE_NODES + 1] = { 0 }; /* [node + 1] */

	t->n = 0;
	for (int i = 0; i < m; i++) {
		int par = -1;
		for (int d = 0; d < b[i].len; d++) {
			int32_t tok = hist[b[i].start + d];
			int child = -1;
			for (int c = par + 1; c < t->n && child < 0; c++)
				if (t->parent[c] == par && t->tok[c] == tok)
					child = c;
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
	t->spine = m ? b[0].len : 0;
}

/* Occurrences examined per proposal at most, the most recent first: a
 * history that repeats one phrase thousands of times (a 32k context of one
 * token) took 0.9 ms a round without a bound, 4 % of the 1.5B's step. */
#define LOOKUP_SCAN 1024

int lookup_propose(const int32_t *hist, int n, int min_ngram, int max_ngram, int max_out, int branches,
                   struct lookup_tree *t, int *ngram)
{
	struct branch b[LOOKUP_BRANCHES];

	if (max_ngram > LOOKUP_MAX_NGRAM)
		max_ngram = LOOKUP_MAX_NGRAM;
	if (branches > LOOKUP_BRANCHES)
		branches = LOOKUP_BRANCHES;
	if (max_out > LOOKUP_TREE_NODES / LOOKUP_BRANCHES)
		max_out = LOOKUP_TREE_NODES / LOOKUP_BRANCHES;
	t->n = t->spine = 0;
	*ngram = 0;
	if (branches < 1 || max_out < 1)
		return 0;
	for (int g = max_ngram < n - 1 ? max_ngram : n - 1; g >= min_ngram && g >= 1; g--) {
		const int32_t *key = hist + n - g;
		int m = 0, seen = 0;
		/* the earlier occurrences with at least one token after them */
		for (int j = n - g - 1; j >= 0 && seen < LOOKUP_SCAN; j--)
			if (hist[j] == key[0] && memcmp(hist + j, key, (size_t)g * sizeof *key) == 0) {
				m = keep_occurrence(hist, n, g, j, max_out, b, m, branches);
				seen++;
			}
		if (m > 0) {
			qsort(b, (size_t)m, sizeof *b, branch_order);
			build_tree(hist, b, m, t);
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
