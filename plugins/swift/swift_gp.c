/* SWIFT's GP surrogate; see swift_gp.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swift_gp.h"

static double matern52(const float *a, const float *b, int dim, double ell)
{
	double d2 = 0, r;
	for (int k = 0; k < dim; k++) {
		double t = (double)a[k] - b[k];
		d2 += t * t;
	}
	r = sqrt(5.0 * d2) / ell;
	return (1.0 + r + r * r / 3.0) * exp(-r);
}

/* In-place lower Cholesky of the n x n matrix A; -1 if not positive definite. */
static int cholesky(double *A, int n)
{
	for (int j = 0; j < n; j++) {
		double s = A[(size_t)j * n + j];
		for (int k = 0; k < j; k++)
			s -= A[(size_t)j * n + k] * A[(size_t)j * n + k];
		if (!(s > 0))
			return -1;
		s = sqrt(s);
		A[(size_t)j * n + j] = s;
		for (int i = j + 1; i < n; i++) {
			double t = A[(size_t)i * n + j];
			for (int k = 0; k < j; k++)
				t -= A[(size_t)i * n + k] * A[(size_t)j * n + k];
			A[(size_t)i * n + j] = t / s;
		}
	}
	return 0;
}

/* Solve L z = b (forward) in place. */
static void forward_solve(const double *Lm, int n, double *b)
{
	for (int i = 0; i < n; i++) {
		double t = b[i];
		for (int k = 0; k < i; k++)
			t -= Lm[(size_t)i * n + k] * b[k];
		b[i] = t / Lm[(size_t)i * n + i];
	}
}

/* Solve L^T z = b (backward) in place. */
static void backward_solve(const double *Lm, int n, double *b)
{
	for (int i = n - 1; i >= 0; i--) {
		double t = b[i];
		for (int k = i + 1; k < n; k++)
			t -= Lm[(size_t)k * n + i] * b[k];
		b[i] = t / Lm[(size_t)i * n + i];
	}
}

struct fit {
	int n, dim;
	double ell, mu, sd;
	double *Lm, *alpha, *kv;
	const float *X;
};

/* Factorise K + noise I for length-scale ell on standardised y; returns the
 * log marginal likelihood (or -inf on failure). */
static double fit_at(struct fit *f, const double *ys, double noise)
{
	int n = f->n;
	double ll = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j <= i; j++) {
			double k = matern52(f->X + (size_t)i * f->dim, f->X + (size_t)j * f->dim, f->dim, f->ell);
			f->Lm[(size_t)i * n + j] = f->Lm[(size_t)j * n + i] = k + (i == j ? noise : 0);
		}
	if (cholesky(f->Lm, n))
		return -INFINITY;
	memcpy(f->alpha, ys, (size_t)n * sizeof *ys);
	forward_solve(f->Lm, n, f->alpha);
	for (int i = 0; i < n; i++) {
		ll -= 0.5 * f->alpha[i] * f->alpha[i];
		ll -= log(f->Lm[(size_t)i * n + i]);
	}
	backward_solve(f->Lm, n, f->alpha);
	return ll;
}

static void predict(const struct fit *f, const float *x, double *mean, double *std)
{
	double m = 0, v = 1.0;
	for (int i = 0; i < f->n; i++) {
		f->kv[i] = matern52(f->X + (size_t)i * f->dim, x, f->dim, f->ell);
		m += f->kv[i] * f->alpha[i];
	}
	forward_solve(f->Lm, f->n, f->kv);
	for (int i = 0; i < f->n; i++)
		v -= f->kv[i] * f->kv[i];
	*mean = f->mu + f->sd * m;
	*std = f->sd * sqrt(v > 0 ? v : 0);
}

static int fit_alloc(struct fit *f, int n)
{
	f->Lm = malloc((size_t)n * n * sizeof *f->Lm);
	f->alpha = malloc((size_t)n * sizeof *f->alpha);
	f->kv = malloc((size_t)n * sizeof *f->kv);
	return f->Lm && f->alpha && f->kv ? 0 : -1;
}

static void fit_free(struct fit *f)
{
	free(f->Lm);
	free(f->alpha);
	free(f->kv);
}

/* Standardise y into ys and fit with the best length-scale of the grid. */
static int fit_best(struct fit *f, const double *y, double *ys, double noise)
{
	static const double grid[] = { 0.05, 0.1, 0.2, 0.4, 0.8, 1.6 };
	double best_ll = -INFINITY, best_ell = 0, var = 0;
	int n = f->n;
	f->mu = 0;
	for (int i = 0; i < n; i++)
		f->mu += y[i] / n;
	for (int i = 0; i < n; i++)
		var += (y[i] - f->mu) * (y[i] - f->mu) / n;
	f->sd = var > 1e-12 ? sqrt(var) : 1.0;
	for (int i = 0; i < n; i++)
		ys[i] = (y[i] - f->mu) / f->sd;
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		f->ell = grid[g] * sqrt((double)f->dim); /* distances grow like sqrt(dim) */
		double ll = fit_at(f, ys, noise);
		if (ll > best_ll) {
			best_ll = ll;
			best_ell = f->ell;
		}
	}
	if (!isfinite(best_ll))
		return -1;
	f->ell = best_ell;
	fit_at(f, ys, noise);
	return 0;
}

int swift_gp_predict(const float *X, const double *y, int n, int dim, double noise, double ell, const float *x,
                     double *mean, double *std)
{
	struct fit f = { .n = n, .dim = dim, .X = X };
	double *ys = malloc((size_t)n * sizeof *ys);
	int rc = -1;
	if (ys && !fit_alloc(&f, n)) {
		if (ell > 0) {
			double var = 0;
			f.mu = 0;
			for (int i = 0; i < n; i++)
				f.mu += y[i] / n;
			for (int i = 0; i < n; i++)
				var += (y[i] - f.mu) * (y[i] - f.mu) / n;
			f.sd = var > 1e-12 ? sqrt(var) : 1.0;
			for (int i = 0; i < n; i++)
				ys[i] = (y[i] - f.mu) / f.sd;
			f.ell = ell;
			rc = isfinite(fit_at(&f, ys, noise)) ? 0 : -1;
		} else {
			rc = fit_best(&f, y, ys, noise);
		}
		if (!rc)
			predict(&f, x, mean, std);
	}
	fit_free(&f);
	free(ys);
	return rc;
}

int swift_gp_ucb_argmax(const struct skipper_host *h, void *ctx, struct skipper_rng *rng, const float *X,
                        const double *y, int n, int dim, double noise, double kappa, int n_cand, float *best)
{
	struct fit f = { .n = n, .dim = dim, .X = X };
	double *ys = malloc((size_t)n * sizeof *ys), best_u = -INFINITY, m, s;
	float *x = malloc((size_t)dim * sizeof *x), *t = malloc((size_t)dim * sizeof *t);
	int rc = SKIPPER_POLICY_OK;

	if (!ys || !x || !t || fit_alloc(&f, n)) {
		rc = SKIPPER_POLICY_NOMEM;
		goto out;
	}
	if (fit_best(&f, y, ys, noise)) {
		h->set_error(ctx, "swift: GP kernel matrix is not positive definite");
		rc = SKIPPER_POLICY_ERROR;
		goto out;
	}
	for (int c = 0; c < n_cand; c++) {
		for (int k = 0; k < dim; k++)
			x[k] = (float)h->rng_double(ctx, rng);
		predict(&f, x, &m, &s);
		if (m + kappa * s > best_u) {
			best_u = m + kappa * s;
			memcpy(best, x, (size_t)dim * sizeof *x);
		}
	}
	/* local refinement: random coordinate moves from the best point */
	for (int it = 0; it < 100; it++) {
		memcpy(t, best, (size_t)dim * sizeof *t);
		for (int j = 0; j < 3; j++) {
			int k = (int)(h->rng_u64(ctx, rng) % (uint64_t)dim);
			float v = t[k] + (float)(0.2 * (h->rng_double(ctx, rng) - 0.5));
			t[k] = v < 0 ? 0 : v > 1 ? 1 : v;
		}
		predict(&f, t, &m, &s);
		if (m + kappa * s > best_u) {
			best_u = m + kappa * s;
			memcpy(best, t, (size_t)dim * sizeof *t);
		}
	}
out:
	fit_free(&f);
	free(ys);
	free(x);
	free(t);
	return rc;
}
