#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bo.h"
#include "gp.h"
#include "rng.h"

struct bo {
	struct bo_opts o;
	struct splitmix rng;
	int n, cap;
	double *x, *y; /* observations [cap][dim], [cap] */
	struct gp gp;
};

struct bo *bo_new(const struct bo_opts *opts)
{
	struct bo *b;
	if (!opts || opts->dim <= 0)
		return NULL;
	if (!(b = calloc(1, sizeof *b)))
		return NULL;
	b->o = *opts;
	if (b->o.kappa <= 0)
		b->o.kappa = 2.576;
	if (b->o.noise <= 0)
		b->o.noise = 1e-2;
	if (b->o.n_random <= 0)
		b->o.n_random = 10000;
	if (b->o.n_starts <= 0)
		b->o.n_starts = 10;
	splitmix_seed(&b->rng, opts->seed);
	return b;
}

void bo_free(struct bo *b)
{
	if (!b)
		return;
	gp_clear(&b->gp);
	free(b->x);
	free(b->y);
	free(b);
}

int bo_count(const struct bo *b) { return b->n; }

static void uniform(struct bo *b, double *x)
{
	for (int i = 0; i < b->o.dim; i++)
		x[i] = splitmix_double(&b->rng);
}

static double ucb(const struct bo *b, const double *x)
{
	double m, v;
	gp_predict(&b->gp, x, &m, &v);
	return m + b->o.kappa * sqrt(v);
}

/* Derivative-free stand-in for L-BFGS-B: compass search with a halving step,
 * clipped to the box. UCB is smooth, so this converges to the same local
 * maxima; it only needs predictions. */
static double refine(const struct bo *b, double *x, double fx)
{
	int d = b->o.dim;
	for (double step = 0.25; step >= 1.0 / 128; step /= 2) {
		int improved = 1;
		for (int sweeps = 0; improved && sweeps < 8; sweeps++) {
			improved = 0;
			for (int i = 0; i < d; i++)
				for (int s = -1; s <= 1; s += 2) {
					double old = x[i], v = old + s * step;
					if (v < 0)
						v = 0;
					if (v > 1)
						v = 1;
					if (v == old)
						continue;
					x[i] = v;
					double f = ucb(b, x);
					if (f > fx) {
						fx = f;
						improved = 1;
					} else {
						x[i] = old;
					}
				}
		}
	}
	return fx;
}

int bo_suggest(struct bo *b, double *x)
{
	int d = b->o.dim, ns = b->o.n_starts, rc = 0;
	double *cand, *top, *topf;

	if (b->n == 0) {
		uniform(b, x);
		return 0;
	}
	if (gp_fit(&b->gp, b->x, b->y, b->n, d, b->o.noise, b->o.lengthscale)) {
		uniform(b, x);
		return -1;
	}
	cand = malloc((size_t)d * sizeof *cand);
	top = malloc((size_t)ns * (size_t)d * sizeof *top);
	topf = malloc((size_t)ns * sizeof *topf);
	if (!cand || !top || !topf) {
		uniform(b, x);
		rc = -1;
		goto out;
	}
	for (int k = 0; k < ns; k++)
		topf[k] = -HUGE_VAL;
	/* keep the ns best random candidates (insertion into a sorted list) */
	for (int r = 0; r < b->o.n_random; r++) {
		uniform(b, cand);
		double f = ucb(b, cand);
		if (f <= topf[ns - 1])
			continue;
		int k = ns - 1;
		while (k > 0 && topf[k - 1] < f) {
			topf[k] = topf[k - 1];
			memcpy(top + (size_t)k * d, top + (size_t)(k - 1) * d, (size_t)d * sizeof *top);
			k--;
		}
		topf[k] = f;
		memcpy(top + (size_t)k * d, cand, (size_t)d * sizeof *top);
	}
	double best = -HUGE_VAL;
	for (int k = 0; k < ns && topf[k] > -HUGE_VAL; k++) {
		double f = refine(b, top + (size_t)k * d, topf[k]);
		if (f > best) {
			best = f;
			memcpy(x, top + (size_t)k * d, (size_t)d * sizeof *x);
		}
	}
out:
	free(cand);
	free(top);
	free(topf);
	return rc;
}

int bo_observe(struct bo *b, const double *x, double y)
{
	int d = b->o.dim;
	if (b->o.max_obs > 0 && b->n >= b->o.max_obs) {
		/* a sliding window: drop the oldest */
		b->n = b->o.max_obs - 1;
		memmove(b->x, b->x + d, (size_t)b->n * (size_t)d * sizeof *b->x);
		memmove(b->y, b->y + 1, (size_t)b->n * sizeof *b->y);
	}
	if (b->n == b->cap) {
		int cap = b->cap ? b->cap * 2 : 64;
		double *nx = realloc(b->x, (size_t)cap * (size_t)d * sizeof *nx);
		if (!nx)
			return -1;
		b->x = nx;
		double *ny = realloc(b->y, (size_t)cap * sizeof *ny);
		if (!ny)
			return -1;
		b->y = ny;
		b->cap = cap;
	}
	for (int i = 0; i < d; i++)
		b->x[(size_t)b->n * d + i] = x[i] < 0 ? 0 : x[i] > 1 ? 1 : x[i];
	b->y[b->n++] = y;
	return 0;
}

int bo_best(const struct bo *b, double *x, double *y)
{
	int best = -1;
	for (int i = 0; i < b->n; i++)
		if (best < 0 || b->y[i] > b->y[best])
			best = i;
	if (best < 0)
		return -1;
	if (x)
		memcpy(x, b->x + (size_t)best * b->o.dim, (size_t)b->o.dim * sizeof *x);
	if (y)
		*y = b->y[best];
	return 0;
}

void bo_binary(const double *x, int dim, unsigned char *z)
{
	for (int i = 0; i < dim; i++)
		z[i] = x[i] > 0.5;
}
