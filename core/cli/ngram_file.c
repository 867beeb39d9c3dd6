/* Corpus n-gram files ([lookup] ngrams): counting what the model wrote
 * after each context of 1..4 tokens (skipper vocab --ngrams) and loading
 * such a file into an engine.
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

struct ngram_rows {
	int32_t *ctx, *next;
	uint8_t *ctx_n;
	float *p;
	int n, cap;
};

static int rows_grow(struct ngram_rows *g)
{
	int cap = g->cap ? 2 * g->cap : 4096;
	int32_t *ctx = realloc(g->ctx, sizeof *ctx * CTX_MAX * (size_t)cap);
	if (ctx)
		g->ctx = ctx;
	int32_t *next = realloc(g->next, sizeof *next * (size_t)cap);
	if (next)
		g->next = next;
	uint8_t *ctx_n = realloc(g->ctx_n, (size_t)cap);
	if (ctx_n)
		g->ctx_n = ctx_n;
	float *p = realloc(g->p, sizeof *p * (size_t)cap);
	if (p)
		g->p = p;
	if (!ctx || !next || !ctx_n || !p)
		return -1;
	g->cap = cap;
	return 0;
}

/* One line into g; 0, or -1 with *why set. */
static int parse_line(char *line, int V, struct ngram_rows *g, const char **why)
{
	long v[3 + CTX_MAX];
	int k = 0;
	char *s = line, *end;

	while (k < 3 + CTX_MAX) {
		errno = 0;
		v[k] = strtol(s, &end, 10);
		if (end == s)
			break;
		if (errno == ERANGE || v[k] > INT32_MAX || v[k] < INT32_MIN) {
			*why = "number out of range";
			return -1;
		}
		k++;
		s = end;
	}
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	if (*s || k < 4) {
		*why = "expected \"next count total\" and 1 to 4 context token ids";
		return -1;
	}
	for (int i = 0; i < k; i++)
		if ((i == 0 || i >= 3) && (v[i] < 0 || v[i] >= V)) {
			*why = "not a token id of this model";
			return -1;
		}
	if (v[1] < 1 || v[1] > v[2]) {
		*why = "count must be 1..total";
		return -1;
	}
	if (g->n == g->cap && rows_grow(g)) {
		*why = "out of memory";
		return -1;
	}
	for (int i = 0; i < k - 3; i++)
		g->ctx[CTX_MAX * (size_t)g->n + i] = (int32_t)v[3 + i];
	g->ctx_n[g->n] = (uint8_t)(k - 3);
	g->next[g->n] = (int32_t)v[0];
	/* one more observation than seen: 2 of 2 is no certainty */
	g->p[g->n++] = (float)((double)v[1] / (double)(v[2] + 1));
	return 0;
}

int cli_load_ngrams(struct cli_session *s, const struct skipper_config *cfg, struct skipper_engine *e)
{
	const char *want = skipper_config_get(cfg, "lookup", "ngrams");
	struct ngram_rows g = { 0 };
	struct skipper_error err = { 0 };
	char *found = NULL, *line = NULL;
	const char *file = want, *why = NULL;
	size_t cap = 0;
	long len;
	int lineno = 0, rc = EXIT_USAGE;
	FILE *f;

	if (!want || !strcmp(want, "off"))
		return EXIT_OK;
	if (!strcmp(want, "auto") && !(file = found = cli_model_data_file(s, "ngrams.txt")))
		return EXIT_OK; /* none ships for this model: context lookup alone */
	if (!(f = fopen(file, "r"))) {
		fprintf(stderr, "skipper: [lookup] ngrams %s: %s\n", file, strerror(errno));
		free(found);
		return EXIT_USAGE;
	}
	while ((len = cli_read_line(f, &line, &cap, CLI_LINE_MAX)) != -1) {
		lineno++;
		why = len == -2 ? "line too long" : len == -3 ? "NUL byte in line" : len == -4 ? "out of memory" : NULL;
		if (!why && (line[0] == '#' || line[0] == '\n'))
			continue;
		if (why || parse_line(line, s->model->view.hp.n_vocab, &g, &why)) {
			fprintf(stderr, "skipper: %s:%d: %s\n", file, lineno, why);
			goto out;
		}
	}
	if (ferror(f)) {
		fprintf(stderr, "skipper: [lookup] ngrams %s: %s\n", file, strerror(errno));
		goto out;
	}
	rc = EXIT_FAILURE_GENERIC;
	if (skipper_engine_set_ngrams(e, g.ctx, g.ctx_n, g.next, g.p, g.n, &err)) {
		fprintf(stderr, "skipper: %s: %s\n", file, err.msg);
		goto out;
	}
	rc = EXIT_OK;
out:
	fclose(f);
	free(line);
	free(found);
	free(g.ctx);
	free(g.next);
	free(g.ctx_n);
	free(g.p);
	return rc;
}
