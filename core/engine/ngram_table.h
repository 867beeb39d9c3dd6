/* Corpus n-gram drafts: what the model tends to write after a few tokens,
 * counted over its own answers to a corpus (skipper vocab --ngrams,
 * [lookup] ngrams). A hash table from a context of 1..NGRAM_MAX_CTX tokens
 * to the token that most often followed it and how often (p). Lookup
 * proposes its chain where the prompt and output offer nothing better:
 * the drafts that are not copies (the "Here is", "```python", "return"
 * of an answer). Only the context's hash is kept: a collision costs a
 * rejected draft, never a wrong output. Internal to core/engine/. */
#ifndef SKIPPER_NGRAM_TABLE_H
#define SKIPPER_NGRAM_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define NGRAM_MAX_CTX SKIPPER_NGRAM_MAX_CTX

struct ngram_slot {
	uint64_t key; /* 0 = empty */
	int32_t next;
	float p;
};

struct ngram_table {
	struct ngram_slot *slot;
	size_t mask; /* slots - 1 (a power of two, at least twice the entries) */
	size_t n;
};

/* Room for n entries; returns -1 when out of memory. The table owns its
 * slots: ngram_table_free. */
int ngram_table_init(struct ngram_table *t, size_t n);
void ngram_table_free(struct ngram_table *t);

/* ctx[0..n) (1 <= n <= NGRAM_MAX_CTX) is followed by next with probability
 * p; a repeated context keeps the later entry. */
void ngram_table_put(struct ngram_table *t, const int32_t *ctx, int n, int32_t next, float p);

/* Up to max_out tokens into out with their probabilities in p: from the
 * end of hist[0..n_hist), the next token of the longest context in the
 * table, then the same from the history with that token appended, while
 * the product of the probabilities stays at least min_chain. Returns how
 * many. */
int ngram_propose(const struct ngram_table *t, const int32_t *hist, int n_hist, int max_out, double min_chain,
                  int32_t *out, float *p);

/* How the table's probabilities fare on this request: tokens accepted
 * against the sum of the probabilities of the tokens tried (those accepted
 * and the first rejected), decayed every proposal as lookup_stats is. */
struct ngram_stats {
	double hits, expected;
};

/* The acceptance to expect of a token the table gives probability p. */
double ngram_accept_rate(const struct ngram_stats *s, float p);

/* Record a proposal of k tokens with table probabilities p[0..k), the
 * first `accepted` of them accepted. */
void ngram_record(struct ngram_stats *s, const float *p, int k, int accepted);

#endif
