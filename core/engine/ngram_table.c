/* Corpus n-gram drafts: the hash table and its chain (see ngram_table.h). */
#include <stdlib.h>
#include <string.h>

#include "ngram_table.h"

/* FNV-1a over the context's length and tokens; never 0 (the empty slot). */
static uint64_t ngram_key(const int32_t *ctx, int n)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
	for (int i = 0; i < n; i++)
		for (int b = 0; b < 4; b++)
			h = (h ^ (((uint32_t)ctx[i] >> (8 * b)) & 0xff)) * 1099511628211ull;
	return h ? h : 1;
}

int ngram_table_init(struct ngram_table *t, size_t n)
{
	size_t slots = 16;
	while (slots < 2 * n)
		slots *= 2;
	memset(t, 0, sizeof *t);
	if (!(t->slot = calloc(slots, sizeof *t->slot)))
		return -1;
	t->mask = slots - 1;
	return 0;
}

void ngram_table_free(struct ngram_table *t)
{
	free(t->slot);
	memset(t, 0, sizeof *t);
}

static struct ngram_slot *find(const struct ngram_table *t, uint64_t key)
{
	size_t i = (size_t)(key ^ (key >> 29)) & t->mask;
	while (t->slot[i].key && t->slot[i].key != key)
		i = (i + 1) & t->mask;
	return &t->slot[i];
}

void ngram_table_put(struct ngram_table *t, const int32_t *ctx, int n, int32_t next, float p)
{
	uint64_t key = ngram_key(ctx, n);
	struct ngram_slot *s = find(t, key);
	if (!s->key) {
		if (2 * (t->n + 1) > t->mask + 1)
			return; /* full: init was given fewer entries than put */
		t->n++;
	}
	*s = (struct ngram_slot){ key, next, p };
}

int ngram_propose(const struct ngram_table *t, const int32_t *hist, int n_hist, int max_out, double min_chain,
                  int32_t *out, float *p)
{
	/* the last NGRAM_MAX_CTX tokens of the history, then the chain */
	int32_t w[NGRAM_MAX_CTX + 64];
	int n = n_hist < NGRAM_MAX_CTX ? n_hist : NGRAM_MAX_CTX, k = 0;
	double chain = 1.0;

	if (!t->slot)
		return 0;
	if (max_out > 64)
		max_out = 64;
	memcpy(w, hist + n_hist - n, (size_t)n * sizeof *w);
	while (k < max_out) {
		const struct ngram_slot *s = NULL;
		for (int c = n < NGRAM_MAX_CTX ? n : NGRAM_MAX_CTX; c >= 1 && !s; c--) {
			s = find(t, ngram_key(w + n - c, c));
			if (!s->key)
				s = NULL;
		}
		if (!s || chain * s->p < min_chain)
			break;
		chain *= s->p;
		out[k] = w[n++] = s->next;
		p[k++] = s->p;
	}
	return k;
}

double ngram_accept_rate(const struct ngram_stats *s, float p)
{
	/* prior: the corpus is right, worth 2 tokens of evidence */
	double a = p * (s->hits + 2.0) / (s->expected + 2.0);
	return a < 0.98 ? a : 0.98;
}

void ngram_record(struct ngram_stats *s, const float *p, int k, int accepted)
{
	s->hits *= 0.97;
	s->expected *= 0.97;
	/* the accepted tokens, and the one that was rejected if any */
	for (int i = 0; i < k && i <= accepted; i++)
		s->expected += p[i];
	s->hits += accepted;
}
