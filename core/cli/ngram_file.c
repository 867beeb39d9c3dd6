/* Corpus n-gram files ([lookup] ngrams): counting what the model wrote
 * after each context of 1..4 tokens (skipper vocab --ngrams). The session
 * reads them (core/session/vocab_files.c).
 *
 * The file is text: two '#' header lines, then one context per line,
 * "next count total c1 [c2 [c3 [c4]]]": after the tokens c1.. the model
 * wrote next count times out of total. Only contexts whose most frequent
 * next token came at least twice are written; once is no evidence. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/engine.h"

#define CTX_MAX SKIPPER_NGRAM_MAX_CTX /* the stride of skipper_engine_set_ngrams */

int ngram_corpus_push(struct ngram_corpus *c, int32_t tok, int generated)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 4096;
		int32_t *t = realloc(c->tok, cap * sizeof *t);
		if (!t)
			return -1;
		c->tok = t;
		uint8_t *g = realloc(c->gen, cap);
		if (!g)
			return -1;
		c->gen = g;
		c->cap = cap;
	}
	c->tok[c->n] = tok;
	c->gen[c->n++] = (uint8_t)generated;
	if (generated)
		c->n_generated++;
	return 0;
}

void ngram_corpus_free(struct ngram_corpus *c)
{
	free(c->tok);
	free(c->gen);
	memset(c, 0, sizeof *c);
}

struct record {
	int32_t ctx[CTX_MAX]; /* unused tail: -1 */
	int32_t next;
};

static int by_context(const void *a, const void *b)
{
	const struct record *x = a, *y = b;
	for (int i = 0; i < CTX_MAX; i++)
		if (x->ctx[i] != y->ctx[i])
			return x->ctx[i] < y->ctx[i] ? -1 : 1;
	return (x->next > y->next) - (x->next < y->next);
}

/* Every (context, next) pair at a generated position, contexts not
 * reaching back past a -1 (the start of a prompt's tokens); *n_out pairs,
 * malloc'ed. */
static struct record *collect(const struct ngram_corpus *c, size_t *n_out)
{
	struct record *r = malloc(sizeof *r * (c->n_generated * CTX_MAX + 1));
	size_t n = 0;
	if (!r)
		return NULL;
	for (size_t i = 0; i < c->n; i++) {
		if (!c->gen[i])
			continue;
		for (int len = 1; len <= CTX_MAX && (size_t)len <= i; len++) {
			if (c->tok[i - len] < 0)
				break;
			struct record *x = &r[n++];
			for (int j = 0; j < CTX_MAX; j++)
				x->ctx[j] = j < len ? c->tok[i - len + j] : -1;
			x->next = c->tok[i];
		}
	}
	*n_out = n;
	return r;
}

/* The contexts of r[0..n) (sorted) whose most frequent next came twice or
 * more, as file lines; returns how many. */
static long write_contexts(FILE *f, const struct record *r, size_t n)
{
	long lines = 0;
	for (size_t i = 0; i < n;) {
		size_t end = i, best_n = 0, total = 0;
		int32_t best = -1;
		while (end < n && !memcmp(r[end].ctx, r[i].ctx, sizeof r[i].ctx)) {
			size_t run = end;
			while (run < n && !memcmp(r[run].ctx, r[end].ctx, sizeof r[i].ctx) && r[run].next == r[end].next)
				run++;
			if (run - end > best_n) {
				best_n = run - end;
				best = r[end].next;
			}
			total += run - end;
			end = run;
		}
		if (best_n >= 2) {
			fprintf(f, "%d %zu %zu", best, best_n, total);
			for (int j = 0; j < CTX_MAX && r[i].ctx[j] >= 0; j++)
				fprintf(f, " %d", r[i].ctx[j]);
			fputc('\n', f);
			lines++;
		}
		i = end;
	}
	return lines;
}

int ngram_file_write(FILE *f, const struct ngram_corpus *c, const char *model, const char *data, int n_prompts)
{
	size_t n = 0;
	struct record *r = collect(c, &n);

	if (!r) {
		fprintf(stderr, "skipper vocab: out of memory\n");
		return EXIT_FAILURE_GENERIC;
	}
	qsort(r, n, sizeof *r, by_context);
	fprintf(f, "# skipper n-grams: what the model wrote after a context (next count total context...), "
	           "for [lookup] ngrams\n");
	fprintf(f, "# model %s, corpus %s: %d prompts, %zu tokens written by the model\n", model, data, n_prompts,
	        c->n_generated);
	write_contexts(f, r, n);
	free(r);
	return EXIT_OK;
}
