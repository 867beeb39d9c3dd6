/* The files that size and feed drafting for a model: the ranking of its
 * vocabulary that draft passes' LM head covers ([generate] draft_vocab,
 * made by skipper vocab) and the corpus n-grams of lookup ([lookup]
 * ngrams, made by skipper vocab --ngrams: two '#' header lines, then one
 * context per line, "next count total c1 [c2 [c3 [c4]]]": after the
 * tokens c1.. the model wrote next count times out of total). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/file.h"
#include "base/text.h"
#include "session.h"

#define CTX_MAX SKIPPER_NGRAM_MAX_CTX

/* path (a regular file) for reading; the error names the setting: "KEY
 * PATH: why". */
static FILE *open_named(const char *path, const char *key, struct skipper_error *err)
{
	FILE *f = skipper_open_regular(path, "r", 0, NULL, err);
	if (!f) {
		char why[SKIPPER_ERROR_MAX];
		snprintf(why, sizeof why, "%s", err->msg);
		skipper_fail(err, SKIPPER_ERR_CONFIG, "%s %s", key, why);
	}
	return f;
}

/* Room for more entries in g (cap: its room so far). */
static int rows_grow(struct skipper_ngram_set *g, int *room)
{
	int cap = *room ? 2 * *room : 4096;
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
	*room = cap;
	return 0;
}

/* One line into g; 0, or -1 with *why set. */
static int parse_line(char *line, int V, struct skipper_ngram_set *g, int *room, const char **why)
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
	if (g->n == *room && rows_grow(g, room)) {
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

void session_ngrams_free(struct skipper_ngram_set *g)
{
	free(g->ctx);
	free(g->next);
	free(g->ctx_n);
	free(g->p);
	memset(g, 0, sizeof *g);
}

int session_ngrams(struct skipper_session *s, const struct skipper_config *cfg, struct skipper_ngram_set *g,
                   struct skipper_error *err)
{
	const char *want = skipper_config_get(cfg, "lookup", "ngrams");
	char *found = NULL, *line = NULL;
	const char *file = want, *why = NULL;
	size_t cap = 0;
	long len;
	int lineno = 0, room = 0, rc = SKIPPER_OK;
	FILE *f;

	memset(g, 0, sizeof *g);
	if (!want || !strcmp(want, "off"))
		return SKIPPER_OK;
	if (!strcmp(want, "auto") && !(file = found = session_model_data_file(s, "ngrams.txt")))
		return SKIPPER_OK; /* none ships for this model: context lookup alone */
	if (!(f = open_named(file, "[lookup] ngrams", err))) {
		free(found);
		return SKIPPER_ERR_CONFIG;
	}
	while ((len = skipper_read_line(f, &line, &cap, SKIPPER_LINE_MAX)) != -1) {
		lineno++;
		why = len < -1 ? skipper_read_line_why(len) : NULL;
		if (!why && line[len - 1] != '\n')
			why = "cut short (no newline at the end: a truncated file?)";
		if (!why && (line[0] == '#' || line[0] == '\n'))
			continue;
		if (why || parse_line(line, s->model->view.hp.n_vocab, g, &room, &why)) {
			rc = skipper_fail(err, SKIPPER_ERR_CONFIG, "%s:%d: %s", file, lineno, why);
			break;
		}
	}
	if (!rc && ferror(f))
		rc = skipper_fail(err, SKIPPER_ERR_CONFIG, "[lookup] ngrams %s: %s", file, strerror(errno));
	fclose(f);
	free(line);
	free(found);
	if (rc)
		session_ngrams_free(g);
	return rc;
}

/* "id count": a token id of a vocabulary of V and a count (a whole
 * number); 0, or -1 with *why set. */
static int parse_rank_line(const char *line, int V, long *id, const char **why)
{
	char *end;
	long long count;

	errno = 0;
	*id = strtol(line, &end, 10);
	if (end == line || errno || *id < 0 || *id >= V) {
		*why = "not a token id of this model";
		return -1;
	}
	const char *c = end;
	count = strtoll(c, &end, 10);
	if (end == c || errno || count < 0 || (*end && strspn(end, " \t\r\n") != strlen(end))) {
		*why = "expected \"id count\": a token id and a whole number";
		return -1;
	}
	return 0;
}

int session_draft_vocab(struct skipper_session *s, const struct skipper_config *cfg, int drafts, int32_t **ids_out,
                        int *n_out, struct skipper_error *err)
{
	const char *file = skipper_config_get(cfg, "generate", "draft_vocab_file");
	const char *value = skipper_config_get(cfg, "generate", "draft_vocab");
	char *found = NULL, *line = NULL;
	const char *why = NULL;
	size_t cap = 0;
	long want = 0, len = 0;
	int32_t *ids = NULL;
	uint8_t *seen = NULL;
	int n = 0, rc = SKIPPER_OK, V = s->model->view.hp.n_vocab, lineno = 0;
	int automatic = value && strcmp(value, "auto") == 0;
	FILE *f;

	*ids_out = NULL;
	*n_out = 0;
	/* auto: as many ids as the ranking holds; a run without draft passes
	 * (none, lookup) has no use for one and does not read it */
	if (automatic) {
		if (!drafts)
			return SKIPPER_OK;
		want = V; /* a ranking of every id is the whole head */
	} else if (skipper_config_get_int(cfg, "generate", "draft_vocab", &want, NULL) || want <= 0 || want >= V) {
		return SKIPPER_OK;
	}
	if ((!file || !*file) && !(file = found = session_model_data_file(s, "draft-vocab.txt"))) {
		if (automatic)
			return SKIPPER_OK;
		return skipper_fail(err, SKIPPER_ERR_CONFIG,
		                    "[generate] draft_vocab = %ld needs a ranking of %s's vocabulary: none ships for it; "
		                    "make one with skipper vocab and name it in [generate] draft_vocab_file",
		                    want, s->model->view.name);
	}
	if (!(f = open_named(file, "[generate] draft_vocab_file", err))) {
		free(found);
		return SKIPPER_ERR_CONFIG;
	}
	if (!(ids = malloc(sizeof *ids * (size_t)want)) || !(seen = calloc((size_t)V, 1))) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* every line is checked, also past the ids taken: a damaged file is
	 * refused whatever draft_vocab asks of it */
	while ((len = skipper_read_line(f, &line, &cap, SKIPPER_LINE_MAX)) > 0) {
		long id;
		lineno++;
		if (line[len - 1] != '\n') {
			why = "cut short (no newline at the end: a truncated file?)";
			break;
		}
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (parse_rank_line(line, V, &id, &why))
			break;
		if (seen[id]) {
			why = "a repeated token id";
			break;
		}
		seen[id] = 1;
		if (n < want)
			ids[n++] = (int32_t)id;
	}
	if (!why && len < -1) {
		lineno++;
		why = skipper_read_line_why(len);
	}
	if (why)
		rc = skipper_fail(err, SKIPPER_ERR_CONFIG, "%s:%d: %s", file, lineno, why);
	else if (ferror(f))
		rc = skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: %s", file, strerror(errno));
	else if (automatic ? n == 0 : n < want)
		rc = automatic ? skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: no token ids", file)
		               : skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: %d token ids, [generate] draft_vocab asks for %ld",
		                              file, n, want);
out:
	fclose(f);
	free(line);
	free(seen);
	free(found);
	if (rc) {
		free(ids);
		return rc;
	}
	*ids_out = ids;
	*n_out = n;
	return SKIPPER_OK;
}
