/* Bayesian optimisation (maximisation) over the box [0,1]^dim with a GP
 * surrogate (gp.h) and the UCB acquisition mu + kappa * sigma, as an
 * ask/tell loop so the caller owns the expensive evaluation:
 *
 *     struct bo *bo = bo_new(&opts);
 *     for (it ...) { bo_suggest(bo, x); y = f(x); bo_observe(bo, x, y); }
 *     bo_best(bo, x, &y);
 *
 * Binary searches (skip masks) use the relaxation of bayes_opt's users: the
 * GP sees the continuous x, the caller thresholds it (bo_binary, > 0.5).
 * Deterministic for a given seed and observation sequence.
 * Ownership: bo_new allocates, bo_free frees; x buffers are the
 * caller's. */
#ifndef COMMON_NUMERICS_BO_H
#define COMMON_NUMERICS_BO_H

#include <stdint.h>

struct bo_opts {
	int dim;
	uint64_t seed;
	double kappa;       /* UCB exploration weight (0 = 2.576) */
	double noise;       /* GP observation noise on normalised targets (0 = 1e-2) */
	double lengthscale; /* fixed Matérn length scale; 0 = refit by marginal likelihood each step */
	int n_random;       /* random candidates scored per suggestion (0 = 10000) */
	int n_starts;       /* best candidates refined by local search (0 = 10) */
	int max_obs;        /* the GP is fitted on the newest max_obs observations, older
	                       ones are dropped: bounds the O(n^3) fit and O(n^2)
	                       predictions of a long search (0 = keep all) */
};

struct bo;

struct bo *bo_new(const struct bo_opts *opts);
void bo_free(struct bo *bo);

/* Next point to evaluate into x[dim]: uniform random while nothing is
 * observed, else the UCB maximiser. 0, or -1 if the GP cannot be fitted or
 * no memory (x then holds a uniform random point, still usable). */
int bo_suggest(struct bo *bo, double *x);
/* Record f(x) = y. Points outside [0,1] are clipped; with max_obs the oldest
 * observation is dropped once max_obs are held. 0 or -1 (no memory). */
int bo_observe(struct bo *bo, const double *x, double y);
/* Best observation held (not the GP optimum) and its value; -1 if none. */
int bo_best(const struct bo *bo, double *x, double *y);
int bo_count(const struct bo *bo);

/* z[i] = x[i] > 0.5. */
void bo_binary(const double *x, int dim, unsigned char *z);

#endif
