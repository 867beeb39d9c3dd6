/* The cost curve of a backend and model on this machine (struct
 * skipper_costs): timed passes, medians, and a small cache file so that a
 * model is measured once per machine, backend and thread count.
 *
 * Passes are read-only (kv_write = 0) after a committed prefix of COST_CTX
 * slots, so nothing a request left in the cache is touched and attention
 * costs what it costs at a short, realistic context; a few more after
 * COST_FAR slots tell what each token of context adds, so that the engine
 * prices the curve at a request's own context (engine_costs_price). The
 * cache file itself is costs_cache.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "costs_cache.h"
#include "base/error.h"

#define COST_CTX 128
/* the context at which what the context adds is timed, at most: a step
 * there reads 32 times the K/V it reads at COST_CTX, well above noise */
#define COST_FAR 4096
#define COST_FAR_REPS 9
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
static int pass_at(struct skipper_engine *e, int n_past, int n, const uint8_t *skip_attn, const uint8_t *skip_mlp,
                   int head_subset, double *seconds, struct skipper_error *err)
{
	int32_t tok[SKIPPER_COST_MAX_ROWS], rows[SKIPPER_COST_MAX_ROWS], ids[SKIPPER_COST_MAX_ROWS];
	float probs[SKIPPER_COST_MAX_ROWS];

	for (int i = 0; i < n; i++) {
		tok[i] = (int32_t)((i * 7919 + 13) % e->n_vocab);
		rows[i] = i;
	}
	struct skipper_forward fw = { .n = n, .tokens = tok, .seq = e->seq, .n_past = n_past, .kv_write = 0,
	                              .skip_attn = skip_attn, .skip_mlp = skip_mlp, .n_out = n, .out_rows = rows,
	                              .top_k = 1, .top_ids = ids, .top_probs = head_subset ? probs : NULL,
	                              .head_subset = head_subset };
	double t0 = engine_now();
	int rc = skipper_backend_forward(e->be, &fw, err);
	*seconds = engine_now() - t0;
	return rc;
}

static int one_pass(struct skipper_engine *e, int n, const uint8_t *skip_attn, const uint8_t *skip_mlp,
                    int head_subset, double *seconds, struct skipper_error *err)
{
	return pass_at(e, COST_CTX, n, skip_attn, skip_mlp, head_subset, seconds, err);
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

/* The last row a curve at this context has: the largest row count timed
 * that fits after COST_CTX committed slots. */
static int curve_rows(const struct skipper_engine *e)
{
	int fit = e->be->n_ctx - COST_CTX < SKIPPER_COST_MAX_ROWS ? e->be->n_ctx - COST_CTX : SKIPPER_COST_MAX_ROWS,
	    last = 1;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		if (sizes[i] <= fit)
			last = sizes[i];
	return last;
}

/* Pairs timed per row count: fewer for the long passes, which vary less. */
static int curve_reps(int n)
{
	return n <= 8 ? COST_REPS : 5;
}

/* Slots [from, to) of the engine's sequence written (copies of slot 0):
 * slots nothing wrote yet are, in a CPU cache, the kernel's one shared
 * page of zeros, which a pass reads without any memory traffic (timed so,
 * a token of context cost half of what it costs once written). The caller
 * passes slots past what the sequence holds. */
static int write_slots(struct skipper_engine *e, int from, int to, struct skipper_error *err)
{
	int32_t src[256] = { 0 }, dst[256];
	int rc = SKIPPER_OK;

	for (int at = from; at < to && !rc; at += 256) {
		int n = to - at < 256 ? to - at : 256;
		for (int i = 0; i < n; i++)
			dst[i] = at + i;
		rc = skipper_backend_kv_move(e->be, e->seq, src, dst, n, err);
	}
	return rc;
}

/* What the context adds (c->ctx_row, c->ctx_extra_row): passes of 1 and
 * of up to 8 rows after `far` committed slots, each against a step at
 * COST_CTX timed right before it. The passes only read the slots, so what
 * they hold serves, but they must be real memory (write_slots); a context
 * too short to tell leaves 0. */
static int measure_context(struct skipper_engine *e, struct skipper_costs *c, struct skipper_error *err)
{
	int far = e->be->n_ctx - SKIPPER_COST_MAX_ROWS < COST_FAR ? e->be->n_ctx - SKIPPER_COST_MAX_ROWS : COST_FAR;
	int rows = c->n_max < 8 ? c->n_max : 8, held = e->out.committed > 1 ? e->out.committed : 1, rc;
	double one[COST_FAR_REPS], many[COST_FAR_REPS], warm;

	c->ctx = COST_CTX;
	if (far < 4 * COST_CTX)
		return SKIPPER_OK;
	if ((rc = write_slots(e, held, far, err)) || (rc = pass_at(e, far, rows, NULL, NULL, 0, &warm, err)))
		return rc;
	for (int k = 0; k < COST_FAR_REPS; k++) {
		double step, t;
		if ((rc = one_pass(e, 1, NULL, NULL, 0, &step, err)) || (rc = pass_at(e, far, 1, NULL, NULL, 0, &t, err)))
			return rc;
		one[k] = t / step;
		if ((rc = one_pass(e, 1, NULL, NULL, 0, &step, err)) || (rc = pass_at(e, far, rows, NULL, NULL, 0, &t, err)))
			return rc;
		many[k] = t / step;
	}
	double more = far - COST_CTX, row = fmax(0.0, (median(one, COST_FAR_REPS) - 1.0) / more);
	double extra = rows > 1 ? ((median(many, COST_FAR_REPS) - c->verify[rows]) / more - row) / (rows - 1) : 0.0;
	c->ctx_row = row;
	/* a further row reads no K/V the first did not: it adds at most as much */
	c->ctx_extra_row = fmin(fmax(0.0, extra), row);
	return SKIPPER_OK;
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
	int n_max = curve_rows(e), n_sizes = 1;
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
	skipper_costs_bound(c);
	rc = measure_context(e, c, err);
out:
	free(all);
	free(none);
	return rc;
}

/* What the costs were measured for, the cache's measured_for: a file for
 * another backend or shape is measured again. */
static void identity(const struct skipper_engine *e, char *buf, size_t n)
{
	const struct skipper_model_view *m = e->be->model;
	snprintf(buf, n, "%s %s %d layers %d embd %d vocab %llu bytes draft vocab %d", e->be->ops->name, m->arch,
	         m->hp.n_layer, m->hp.n_embd, m->hp.n_vocab, (unsigned long long)m->weight_bytes, e->draft.head_n);
}

/* The cached curve at the engine's cost_cache into e->pace.base:
 * SKIPPER_OK, SKIPPER_ERR_NOT_FOUND (none there), or the file refused, err
 * holding one line that says why ("PATH:LINE: why: ignored, measuring
 * again"). */
static int load_cache(struct skipper_engine *e, struct skipper_error *err)
{
	struct skipper_costs c;
	char id[256];
	int rc;

	identity(e, id, sizeof id);
	rc = skipper_costs_read(e->pace.cost_cache, id, curve_rows(e), &c, err);
	if (rc == SKIPPER_OK) {
		skipper_costs_bound(&c);
		e->pace.base = c;
	} else if (rc != SKIPPER_ERR_NOT_FOUND) {
		/* the file's own words, then what becomes of it: one line */
		char why[SKIPPER_ERROR_MAX];
		snprintf(why, sizeof why, "%s", err->msg);
		skipper_fail(err, rc, "%.900s: ignored, measuring again", why);
	}
	return rc;
}

static void note(const struct skipper_engine *e, const char *msg)
{
	if (e->pace.note)
		e->pace.note(e->pace.note_ctx, msg);
}

int skipper_engine_costs(struct skipper_engine *e, const struct skipper_costs **out, struct skipper_error *err)
{
	const char *cache_path = e->pace.cost_cache;
	int rc;

	if (!e->pace.have_costs) {
		struct skipper_error why = { 0 };
		if (!cache_path || (rc = load_cache(e, &why)) != SKIPPER_OK) {
			char msg[SKIPPER_ERROR_MAX + 128];
			if (e->be->n_ctx < COST_CTX + 2)
				return skipper_fail(err, SKIPPER_ERR_RANGE, "a context of %d is too small to measure costs",
				                    e->be->n_ctx);
			if (cache_path && rc != SKIPPER_ERR_NOT_FOUND)
				note(e, why.msg);
			snprintf(msg, sizeof msg,
			         "measuring what verification and drafting cost on this machine (once, up to a minute: %s)",
			         cache_path ? cache_path : "not cached");
			note(e, msg);
			if ((rc = measure(e, &e->pace.base, err)))
				return rc;
			/* a cache that cannot be written only costs a measurement next time */
			if (cache_path) {
				struct skipper_error ignore = { 0 };
				char id[256];
				identity(e, id, sizeof id);
				skipper_costs_write(cache_path, id, &e->pace.base, &ignore);
			}
		}
		e->pace.have_costs = 1;
		engine_costs_price(e, e->r.n_past);
	}
	*out = &e->pace.costs;
	return SKIPPER_OK;
}

void skipper_engine_set_costs(struct skipper_engine *e, const struct skipper_costs *c)
{
	e->pace.base = *c;
	e->pace.have_costs = 1;
	engine_costs_price(e, e->r.n_past);
}

void engine_costs_price(struct skipper_engine *e, int n_past)
{
	if (e->pace.have_costs)
		econ_costs_at(&e->pace.base, e->n_layer, n_past, &e->pace.costs);
}

double engine_curve(const struct skipper_engine *e, int n)
{
	if (!e->pace.have_costs)
		return 1.0 + 0.15 * (n - 1); /* until measured: a cautious CPU-like guess */
	return econ_verify_cost(&e->pace.costs, n);
}
