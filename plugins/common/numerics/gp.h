/* Gaussian-process regression with a Matérn-5/2 kernel, for Bayesian
 * optimisation (bo.h) and any plugin that wants a surrogate model.
 *
 * Model (the one bayes_opt 1.4.3 builds on scikit-learn, see
 * skipper-policy-bo-static(5)): targets are normalised to zero mean and unit
 * standard deviation, the kernel has unit amplitude and one isotropic length
 * scale, and `noise` is added to the diagonal of the training covariance.
 * Predictions are returned in the caller's units; the variance is that of
 * the latent function (noise not included).
 *
 * Ownership: a gp is caller-allocated; gp_fit allocates its arrays,
 * gp_clear frees them. Not thread-safe per object. */
#ifndef COMMON_NUMERICS_GP_H
#define COMMON_NUMERICS_GP_H

struct gp {
	int d, n;
	double lengthscale, noise;
	double ymean, ystd;
	double *x;     /* [n][d] training inputs (copy) */
	double *chol;  /* [n][n] lower Cholesky factor of K + noise I */
	double *alpha; /* [n] (K + noise I)^-1 * normalised y */
	double *work;  /* [n] prediction scratch: predictions on one gp are not reentrant */
	double lml;    /* log marginal likelihood of the normalised targets */
};

/* Matérn-5/2 correlation at Euclidean distance r: (1 + s + s²/3) e^-s with
 * s = sqrt(5) r / lengthscale. */
double gp_matern52(double r, double lengthscale);

/* Fit on x[n][d], y[n]. lengthscale > 0 is used as given; <= 0 picks the
 * value with the highest log marginal likelihood on a fixed log grid over
 * [0.01, 100] (deterministic, unlike random restarts). Returns 0, -1 on bad
 * arguments, no memory or a covariance that is not positive definite.
 * Refitting an already fitted gp replaces the old fit. */
int gp_fit(struct gp *gp, const double *x, const double *y, int n, int d, double noise, double lengthscale);

/* Posterior mean and variance at x[d] (var may be NULL). Needs a fitted gp. */
void gp_predict(const struct gp *gp, const double *x, double *mean, double *var);

void gp_clear(struct gp *gp);

#endif
