/* The cost curve of a backend and model on this machine (struct
 * skipper_costs): timed passes, medians, and a small cache file so that a
 * model is measured once per machine, backend and thread count.
 *
 * Passes are read-only (kv_write = 0) after a committed prefix of COST_CTX
 * slots, so nothing a request left in the cache is touched and attention
 * costs what it costs at a short, realistic context. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_impl.h"
#include "base/error.h"

#define COST_CTX 128
/* passes timed per point at most */
#define COST_REPS 9
/* the row counts timed; the others are interpolated */
static const int sizes[] = { 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32 };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One pass of n rows with the given masks, every row's top-1 computed as
 * a verification needs it (the id alone), or with head_subset as a draft
 * step does (the draft head's, with its probability, which the exit rules
 * read); *seconds gets its time. */
static int one_pass(struct skipper_engine *e, int n, const uint8_t *skip_attn, const uint8_t *skip_mlp,
                    int head_subset, double *seconds, struct skipper_error *err)
{
	int32_t tok[SKIPPER_COST_MAX_ROWS], rows[SKIPPER_COST_MAX_ROWS], ids[SKIPPER_COST_MAX_ROWS];
	float probs[SKIPPER_COST_MAX_ROWS];

	for (int i = 0; i < n; i++) {
		tok[i] = (int32_t)((i * 7919 + 13) % e->n_vocab);
		rows[i] = i;
	}
	struct skipper_forward fw = { .n = n, .tokens = tok, .n_past = COST_CTX, .kv_write = 0,
	                              .skip_attn = skip_attn, .skip_mlp = skip_mlp, .n_out = n, .out_rows = rows,
	                              .top_k = 1, .top_ids = ids, .top_probs = head_subset ? probs : NULL,
	                              .head_subset = head_subset };
	double t0 = engine_now();
	int rc = e->be->ops->forward(e->be, &fw, err);
	*seconds = engine_now() - t0;
	return rc;
}

static double median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	return t[n / 2];
}

/* Median, over reps, of a pass's seconds over those of a plain decode step
 * timed right before it. The memory speed of a shared machine drifts by
 * tens of percent within a minute: a step timed once, before all the
 * batches, let that drift into every point of the curve, and a curve off
 * by that much costs lookup up to 5 % of its gain (replayed on the 1.5B's
 * Spec-Bench token streams). Side by side, the drift cancels. */
static int pass_ratio(struct skipper_engine *e, int n, const uint8_t *skip_attn, const uint8_t *skip_mlp,
                      int head_subset, int reps, double *ratio, struct skipper_error *err)
{
	double r[COST_REPS], step, t;
	int rc;

	for (int i = 0; i < reps; i++) {
		if ((rc = one_pass(e, 1, NULL, NULL, 0, &step, err)) ||
		    (rc = one_pass(e, n, skip_attn, skip_mlp, head_subset, &t, err)))
			return rc;
		r[i] = t / step;
	}
	*ratio = median(r, reps);
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

/* A point above that bound was timed while something else ran (a test
 * suite on the other core once left a curve whose 6 rows cost 16.5 steps,
 * cached for good), so it is lowered to it before the pooling, which would
 * spread it. Points out of order (noise where passes cost about the same:
 * a GPU's first rows are nearly free, and a curve measured on an H200
 * decreased) are pooled; the last raise only mends what lowering a point
 * again undid, so drafting never sees a longer draft as cheaper than a
 * shorter one. */
static void bound_curve(struct skipper_costs *c)
{
	subadditive(c);
	monotone(c);
	subadditive(c);
	for (int n = 2; n <= c->n_max; n++)
		c->verify[n] = fmax(c->verify[n], c->verify[n - 1]);
}

/* Pairs timed per row count: fewer for the long passes, which vary less. */
static int curve_reps(int n)
{
	return n <= 8 ? COST_REPS : 5;
}

static int measure(struct skipper_engine *e, struct skipper_costs *c, struct skipper_error *err)
{
	size_t L = (size_t)e->n_layer;
	uint8_t *all = malloc(L ? L : 1), *none = calloc(L ? L : 1, 1);
	double t[COST_REPS], r, noattn, nomlp;
	int rc = SKIPPER_OK;

	if (!all || !none) {
		free(all);
		free(none);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	memset(all, 1, L);
	memset(c, 0, sizeof *c);
	/* the first passes fault the weights in and warm the caches */
	for (int i = 0; i < COST_REPS && !rc; i++)
		rc = one_pass(e, 1, NULL, NULL, 0, &t[i], err);
	if (rc || (rc = pass_ratio(e, 1, all, none, 0, 5, &noattn, err)) ||
	    (rc = pass_ratio(e, 1, none, all, 0, 5, &nomlp, err)) || (rc = pass_ratio(e, 1, all, all, 0, 5, &r, err)))
		goto out;
	c->step_seconds = median(t + 3, COST_REPS - 3);
	c->head = c->draft_head = fmin(1.0, r);
	if (e->draft.head_n) { /* the draft head: all sub-layers skipped, the subset head */
		if ((rc = pass_ratio(e, 1, all, all, 1, 5, &r, err)))
			goto out;
		c->draft_head = fmin(c->head, r);
	}
	c->attn = fmax(0.0, (1.0 - noattn) / (double)L);
	c->mlp = fmax(0.0, (1.0 - nomlp) / (double)L);
	c->verify[1] = 1.0;
	int n_max = e->be->n_ctx - COST_CTX < SKIPPER_COST_MAX_ROWS ? e->be->n_ctx - COST_CTX : SKIPPER_COST_MAX_ROWS;
	int n_sizes = 1;
	while (n_sizes < (int)(sizeof sizes / sizeof sizes[0]) && sizes[n_sizes] <= n_max)
		n_sizes++;
	/* one pair (a step, then the pass) per size in turn, round after
	 * round: a burst of load then lands on every size alike instead of on
	 * the one size being timed, which bent the curve's shape */
	double ratio[sizeof sizes / sizeof sizes[0]][COST_REPS];
	for (int k = 0; k < COST_REPS && !rc; k++)
		for (int i = 1; i < n_sizes && !rc; i++) {
			double step;
			if (k < curve_reps(sizes[i]) && !(rc = one_pass(e, 1, NULL, NULL, 0, &step, err)) &&
			    !(rc = one_pass(e, sizes[i], NULL, NULL, 0, &r, err)))
				ratio[i][k] = r / step;
		}
	if (rc)
		goto out;
	int prev = 1;
	for (int i = 1; i < n_sizes; i++) {
		int n = sizes[i];
		c->verify[n] = median(ratio[i], curve_reps(n));
		for (int m = prev + 1; m < n; m++)
			c->verify[m] = c->verify[prev] + (c->verify[n] - c->verify[prev]) * (m - prev) / (n - prev);
		prev = n;
	}
	c->n_max = prev;
	bound_curve(c);
out:
	free(all);
	free(none);
	return rc;
}

/* The cache file: "key value" lines; what the costs were measured for is
 * part of it, so a file for another backend or shape is measured again. */
static void identity(const struct skipper_engine *e, char *buf, size_t n)
{
	const struct skipper_model *m = e->be->model;
	snprintf(buf, n, "%s %s %d layers %d embd %d vocab %llu bytes draft vocab %d", e->be->ops->name, m->arch,
	         m->hp.n_layer, m->hp.n_embd, m->hp.n_vocab, (unsigned long long)m->weight_bytes, e->draft.head_n);
}

static int read_cache(const struct skipper_engine *e, const char *path, struct skipper_costs *c)
{
	FILE *f = fopen(path, "r");
	char line[512], id[256], want[256];
	int got_id = 0;

	if (!f)
		return -1;
	identity(e, want, sizeof want);
	memset(c, 0, sizeof *c);
	while (fgets(line, sizeof line, f)) {
		int n;
		double v;
		if (sscanf(line, "measured_for %255[^\n]", id) == 1)
			got_id = strcmp(id, want) == 0;
		else if (sscanf(line, "verify %d %lf", &n, &v) == 2 && n >= 1 && n <= SKIPPER_COST_MAX_ROWS &&
		         v >= 0.5 && v < 1e4)
			c->verify[n] = v, c->n_max = n > c->n_max ? n : c->n_max;
		else if (sscanf(line, "step_seconds %lf", &v) == 1)
			c->step_seconds = v;
		else if (sscanf(line, "head %lf", &v) == 1)
			c->head = v;
		else if (sscanf(line, "draft_head %lf", &v) == 1)
			c->draft_head = v;
		else if (sscanf(line, "attn %lf", &v) == 1)
			c->attn = v;
		else if (sscanf(line, "mlp %lf", &v) == 1)
			c->mlp = v;
	}
	fclose(f);
	int good = got_id && c->n_max >= 1 && c->step_seconds > 0 && c->head >= 0 && c->head <= 1 &&
	           c->draft_head >= 0 && c->draft_head <= c->head && c->attn >= 0 &&
	           c->mlp >= 0 && c->verify[1] == 1.0;
	for (int n = 1; good && n <= c->n_max; n++)
		good = c->verify[n] > 0;
	if (good)
		bound_curve(c);
	return good ? 0 : -1;
}

static int write_cache(const struct skipper_engine *e, const char *path, const struct skipper_costs *c,
                       struct skipper_error *err)
{
	size_t len = strlen(path);
	char *tmp = malloc(len + 16), id[256];
	FILE *f;
	int rc = SKIPPER_OK;

	if (!tmp)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	snprintf(tmp, len + 16, "%s.tmp%ld", path, (long)getpid());
	if (!(f = fopen(tmp, "w"))) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	identity(e, id, sizeof id);
	fprintf(f, "# skipper cost curve: seconds of a pass over n rows / seconds of one decode step\n");
	fprintf(f, "measured_for %s\nstep_seconds %.9g\nhead %.6f\ndraft_head %.6f\nattn %.6f\nmlp %.6f\n", id,
	        c->step_seconds, c->head, c->draft_head, c->attn, c->mlp);
	for (int n = 1; n <= c->n_max; n++)
		fprintf(f, "verify %d %.4f\n", n, c->verify[n]);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

static void note(const struct skipper_engine *e, const char *fmt, const char *path)
{
	char msg[4200];
	if (!e->pace.note)
		return;
	snprintf(msg, sizeof msg, fmt, path);
	e->pace.note(e->pace.note_ctx, msg);
}

int skipper_engine_costs(struct skipper_engine *e, const struct skipper_costs **out, struct skipper_error *err)
{
	const char *cache_path = e->pace.cost_cache;
	int rc;

	if (!e->pace.have_costs) {
		if (!cache_path || read_cache(e, cache_path, &e->pace.costs) != 0) {
			if (e->be->n_ctx < COST_CTX + 2)
				return skipper_fail(err, SKIPPER_ERR_RANGE, "a context of %d is too small to measure costs",
				                    e->be->n_ctx);
			note(e, "measuring what verification and drafting cost on this machine (once: %s)",
			     cache_path ? cache_path : "not cached");
			if ((rc = measure(e, &e->pace.costs, err)))
				return rc;
			/* a cache that cannot be written only costs a measurement next time */
			if (cache_path) {
				struct skipper_error ignore = { 0 };
				write_cache(e, cache_path, &e->pace.costs, &ignore);
			}
		}
		e->pace.have_costs = 1;
	}
	*out = &e->pace.costs;
	return SKIPPER_OK;
}

/* The curve at n rows (past the measured range: the last slope continues). */
double engine_curve(const struct skipper_engine *e, int n)
{
	if (!e->pace.have_costs)
		return 1.0 + 0.15 * (n - 1); /* until measured: a cautious CPU-like guess */
	return econ_verify_cost(&e->pace.costs, n);
}
