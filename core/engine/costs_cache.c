/* The cost curve as data: its shape made to keep the rules (measured
 * points), its cache file read with every value checked and written
 * atomically (see costs_cache.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic.h"
#include "base/error.h"
#include "base/file.h"
#include "config/config.h"
#include "costs_cache.h"

/* a decode step of an hour is no measurement */
#define STEP_MAX_SECONDS 3600.0

enum key { K_ID, K_STEP, K_HEAD, K_DRAFT_HEAD, K_ATTN, K_MLP, K_CTX, K_CTX_ROW, K_CTX_EXTRA, K_VERIFY, K_N };
static const char *const key_names[K_N] = { "measured_for", "step_seconds", "head",        "draft_head",
	                                    "attn",         "mlp",          "context",     "context_row",
	                                    "context_extra_row", "verify" };

struct reader {
	const char *path;
	int line;
	int seen[K_N]; /* line of each key (verify: its first), 0 if none */
	struct skipper_error *err;
};

/* value as a number in [lo, hi] (lo excluded when open_lo) */
static int number(struct reader *r, const char *key, const char *value, double lo, int open_lo, double hi,
                  double *out)
{
	if (skipper_parse_double(value, out))
		return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: %s: '%.40s' is not a number", r->path, r->line,
		                    key, value);
	if (*out < lo || (open_lo && *out == lo) || *out > hi)
		return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: %s: %g is out of range %c%g, %g]", r->path,
		                    r->line, key, *out, open_lo ? '(' : '[', lo, hi);
	return SKIPPER_OK;
}

/* "verify N V": row N must follow the last one, V within the curve's rules */
static int verify_row(struct reader *r, const char *value, struct skipper_costs *c)
{
	char num[16];
	size_t k = strcspn(value, " ");
	long n;
	double v;
	int rc;

	if (k >= sizeof num || !value[k])
		return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: verify: expected 'verify ROWS STEPS'", r->path,
		                    r->line);
	memcpy(num, value, k);
	num[k] = '\0';
	if (skipper_parse_long(num, &n) || n < 1 || n > SKIPPER_COST_MAX_ROWS)
		return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: verify: '%s' is not a row count (1 to %d)",
		                    r->path, r->line, num, SKIPPER_COST_MAX_ROWS);
	if (n != c->n_max + 1)
		return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: verify %ld where verify %d was due (rows 1, 2, ... in order)",
		                    r->path, r->line, n, c->n_max + 1);
	/* in [1, n]: verify 1 is the step the curve counts in */
	if ((rc = number(r, "verify", value + k + 1, 1, 0, (double)n, &v)))
		return rc;
	if (n > 1 && v < c->verify[n - 1])
		return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: verify %ld: %g, less than the %g of verify %ld (a longer pass never costs less)",
		                    r->path, r->line, n, v, c->verify[n - 1], n - 1);
	c->verify[n] = v;
	c->n_max = (int)n;
	return SKIPPER_OK;
}

static int one_line(struct reader *r, char *line, const char *id, struct skipper_costs *c)
{
	size_t k = strcspn(line, " ");
	const char *value = line + k + (line[k] ? 1 : 0);
	int key;

	if (!*line || *line == '#')
		return SKIPPER_OK;
	for (key = 0; key < K_N; key++)
		if (strlen(key_names[key]) == k && !strncmp(line, key_names[key], k))
			break;
	if (key == K_N)
		return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: unknown key '%.*s'", r->path, r->line,
		                    (int)(k < 40 ? k : 40), line);
	if (!*value)
		return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: %s without a value", r->path, r->line,
		                    key_names[key]);
	if (r->seen[key] && key != K_VERIFY)
		return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: %s again (first on line %d)", r->path, r->line,
		                    key_names[key], r->seen[key]);
	if (!r->seen[key])
		r->seen[key] = r->line;
	switch (key) {
	case K_ID:
		if (strcmp(value, id) != 0)
			return skipper_fail(r->err, SKIPPER_ERR_MISMATCH, "%s:%d: measured for %.200s, not for %.200s",
			                    r->path, r->line, value, id);
		return SKIPPER_OK;
	case K_STEP:
		return number(r, "step_seconds", value, 0, 1, STEP_MAX_SECONDS, &c->step_seconds);
	case K_HEAD:
		return number(r, "head", value, 0, 1, 1, &c->head);
	case K_DRAFT_HEAD:
		return number(r, "draft_head", value, 0, 1, 1, &c->draft_head);
	case K_ATTN:
		return number(r, "attn", value, 0, 0, 1, &c->attn);
	case K_MLP:
		return number(r, "mlp", value, 0, 0, 1, &c->mlp);
	case K_CTX: {
		double v;
		int rc = number(r, "context", value, 1, 0, SKIPPER_COSTS_CTX_MAX, &v);
		if (rc)
			return rc;
		if (v != (int)v)
			return skipper_fail(r->err, SKIPPER_ERR_FORMAT, "%s:%d: context: %g is not a whole number of tokens",
			                    r->path, r->line, v);
		c->ctx = (int)v;
		return SKIPPER_OK;
	}
	case K_CTX_ROW:
		return number(r, "context_row", value, 0, 0, 1, &c->ctx_row);
	case K_CTX_EXTRA:
		return number(r, "context_extra_row", value, 0, 0, 1, &c->ctx_extra_row);
	default:
		return verify_row(r, value, c);
	}
}

int skipper_costs_read(const char *path, const char *id, int n_max, struct skipper_costs *c,
                       struct skipper_error *err)
{
	struct reader r = { .path = path, .err = err };
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	long len;
	int rc = SKIPPER_OK;

	memset(c, 0, sizeof *c);
	if (!(f = skipper_open_regular(path, "r", SKIPPER_COSTS_FILE_MAX, "cost cache", err)))
		return err ? err->status : SKIPPER_ERR_IO;
	while (!rc && (len = skipper_read_line(f, &line, &cap, SKIPPER_COSTS_LINE_MAX)) != SKIPPER_LINE_EOF) {
		r.line++;
		if (len < 0) {
			rc = skipper_fail(err, len == SKIPPER_LINE_NOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_FORMAT,
			                  "%s:%d: %s", path, r.line,
			                  len == SKIPPER_LINE_NUL    ? "NUL byte in a text file"
			                  : len == SKIPPER_LINE_LONG ? "line longer than any the cache holds"
			                                             : "out of memory");
			break;
		}
		/* whole lines only: a last line cut short is a file cut short */
		if (line[len - 1] != '\n') {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: the last line has no end (the file was cut)", path,
			                  r.line);
			break;
		}
		line[len - 1] = '\0';
		rc = one_line(&r, line, id, c);
	}
	if (!rc && ferror(f))
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: read error", path);
	fclose(f);
	free(line);
	if (rc)
		return rc;
	for (int k = 0; k < K_N; k++)
		if (!r.seen[k])
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: no %s line", path, key_names[k]);
	if (c->draft_head > c->head) {
		r.line = r.seen[K_DRAFT_HEAD];
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: draft_head %g is more than head %g", path, r.line,
		                    c->draft_head, c->head);
	}
	if (c->ctx_extra_row > c->ctx_row) {
		r.line = r.seen[K_CTX_EXTRA];
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: context_extra_row %g is more than context_row %g", path,
		                    r.line, c->ctx_extra_row, c->ctx_row);
	}
	if (c->n_max != n_max)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: rows 1 to %d, where a curve at this context has 1 to %d",
		                    path, c->n_max, n_max);
	return SKIPPER_OK;
}

/* Pool-adjacent-violators over verify[2..n_max]: the non-decreasing
 * curve nearest to the points (least squares), none below one step. Where
 * one point came out high (verify(2) at 1.22-1.34 steps in some curves
 * measured minutes apart on a shared AMD EPYC, 1.11-1.15 in others), raising
 * every later point to it made passes of 2 to 5 rows cost the same, and
 * lookup drafted 4 tokens wherever it would have drafted 1: a 2-round
 * Spec-Bench run with such a curve drafted 12 % more, accepted less, and
 * lookup gained 1.30x over plain decoding against 1.36x. Pooling averages
 * the outlier with its neighbours instead. */
static void monotone(struct skipper_costs *c)
{
	double v[SKIPPER_COST_MAX_ROWS + 1];
	int len[SKIPPER_COST_MAX_ROWS + 1], top = 0;

	for (int n = 2; n <= c->n_max; n++) {
		v[top] = c->verify[n];
		len[top++] = 1;
		while (top > 1 && v[top - 2] > v[top - 1]) {
			v[top - 2] = (v[top - 2] * len[top - 2] + v[top - 1] * len[top - 1]) / (len[top - 2] + len[top - 1]);
			len[top - 2] += len[top - 1];
			top--;
		}
	}
	for (int b = 0, n = 2; b < top; b++)
		for (int i = 0; i < len[b]; i++)
			c->verify[n++] = fmax(1.0, v[b]);
}

/* A pass over a + b rows never needs to cost more than a pass over a rows
 * and one over b rows: the backend could run them one after the other. */
static void subadditive(struct skipper_costs *c)
{
	for (int n = 2; n <= c->n_max; n++)
		for (int a = 1; a <= n / 2; a++)
			c->verify[n] = fmin(c->verify[n], c->verify[a] + c->verify[n - a]);
}

/* See costs_cache.h. */
void skipper_costs_bound(struct skipper_costs *c)
{
	subadditive(c);
	monotone(c);
	subadditive(c);
	for (int n = 2; n <= c->n_max; n++)
		c->verify[n] = fmax(c->verify[n], c->verify[n - 1]);
}

int skipper_costs_write(const char *path, const char *id, const struct skipper_costs *c, struct skipper_error *err)
{
	struct skipper_atomic *a = skipper_atomic_open(path, err);
	FILE *f;

	if (!a)
		return err ? err->status : SKIPPER_ERR_IO;
	f = skipper_atomic_file(a);
	fprintf(f, "# skipper cost curve: seconds of a pass over n rows / seconds of one decode step\n");
	/* nine significant digits: rounding so keeps every rule a valid curve
	 * keeps (order, bounds, a positive head), so what is written reads
	 * back; files written with fewer digits read as well */
	fprintf(f, "measured_for %s\nstep_seconds %.9g\nhead %.9g\ndraft_head %.9g\nattn %.9g\nmlp %.9g\n", id,
	        c->step_seconds, c->head, c->draft_head, c->attn, c->mlp);
	fprintf(f, "context %d\ncontext_row %.9g\ncontext_extra_row %.9g\n", c->ctx, c->ctx_row, c->ctx_extra_row);
	for (int n = 1; n <= c->n_max; n++)
		fprintf(f, "verify %d %.9g\n", n, c->verify[n]);
	return skipper_atomic_commit(a, err);
}
