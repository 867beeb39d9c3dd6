/* A small Gaussian-process surrogate for SWIFT's BO proposals
 * (swift.md §3 and §8 item 7): Matérn-5/2 kernel with one shared
 * length-scale picked from a log grid by marginal likelihood, noise
 * variance `noise` on standardised targets, UCB acquisition maximised over
 * random points of [0,1]^D plus a short local refinement.
 *
 * Written here because plugins/common (the shared GP) was not on main when
 * this policy was built; it has no state beyond one call.
 * Ownership: swift_gp_ucb_argmax allocates and frees its own work space;
 * every pointer argument is the caller's. */
#ifndef SKIPPER_SWIFT_GP_H
#define SKIPPER_SWIFT_GP_H

#include "skipper/policy.h"

/* Fit on n points X[n][dim] with targets y[n] and write the UCB maximiser
 * (mean + kappa * std) found among n_cand random points (+ refinement) to
 * best[dim]. Returns 0, SKIPPER_POLICY_NOMEM, or SKIPPER_POLICY_ERROR when
 * the kernel matrix cannot be factorised. */
int swift_gp_ucb_argmax(const struct skipper_host *h, void *ctx, struct skipper_rng *rng, const float *X,
                        const double *y, int n, int dim, double noise, double kappa, int n_cand, float *best);

/* Posterior mean and std at x after fitting (X, y) with length-scale ell:
 * exposed for tests. */
int swift_gp_predict(const float *X, const double *y, int n, int dim, double noise, double ell, const float *x,
                     double *mean, double *std);

#endif
