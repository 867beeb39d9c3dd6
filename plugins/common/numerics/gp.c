#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gp.h"

double gp_matern52(double r, double l)
{
	double s = sqrt(5.0) * r / l;
	return (1.0 + s + s * s / 3.0) * exp(-s);
}

static double dist(const double *a, const double *b, int d)
{
	double s = 0;
	for (int i = 0; i < d; i++)
		s += (a[i] - b[i]) * (a[i] - b[i]);
	return sqrt(s);
}

/* In-place lower Cholesky of a[n][n]; -1 if not positive definite. */
static int cholesky(double *a, int n)
{
	for (int j = 0; j < n; j++) {
		double s = a[j * n + j];
		for (int k = 0; k < j; k++)
			s -= a[j * n + k] * a[j * n + k];
		if (!(s > 0))
			return -1;
		a[j * n + j] = sqrt(s);
		for (int i = j + 1; i < n; i++) {
			double t = a[i * n + j];
			for (int k = 0; k < j; k++)
				t -= a[i * n + k] * a[j * n + k];
			a[i * n + j] = t / a[j * n + j];
		}
		for (int i = 0; i < j; i++)
			a[i * n + j] = 0;
	}
	return 0;
}

/* Solve L v = b (forward) in place. */
static void lsolve(const double *l, int n, double *b)
{
	for (int i = 0; i < n; i++) {
		double s = b[i];
		for (int k = 0; k < i; k++)
			s -= l[i * n + k] * b[k];
		b[i] = s / l[i * n + i];
	}
}

/* Solve L^T v = b (backward) in place. */
static void ltsolve(const double *l, int n, double *b)
{
	for (int i = n - 1; i >= 0; i--) {
		double s = b[i];
		for (int k = i + 1; k < n; k++)
			s -= l[k * n + i] * b[k];
		b[i] = s / l[i * n + i];
	}
}

/* Factor and solve for one length scale; fills chol/alpha/lml. */
static int fit_one(struct gp *g, const double *yn, double l)
{
	int n = g->n;
	for (int i = 0; i < n; i++)
		for (int j = 0; j <= i; j++) {
			double k = gp_matern52(dist(g->x + (size_t)i * g->d, g->x + (size_t)j * g->d, g->d), l);
			g->chol[i * n + j] = g->chol[j * n + i] = k + (i == j ? g->noise : 0);
		}
	if (cholesky(g->chol, n))
		return -1;
	memcpy(g->alpha, yn, (size_t)n * sizeof *yn);
	lsolve(g->chol, n, g->alpha);
	double quad = 0, logdet = 0;
	for (int i = 0; i < n; i++)
		quad += g->alpha[i] * g->alpha[i], logdet += log(g->chol[i * n + i]);
	ltsolve(g->chol, n, g->alpha);
	g->lml = -0.5 * quad - logdet - 0.5 * n * log(2 * M_PI);
	g->lengthscale = l;
	return 0;
}

int gp_fit(struct gp *g, const double *x, const double *y, int n, int d, double noise, double lengthscale)
{
	double *yn;
	int rc = 0;

	gp_clear(g);
	if (n <= 0 || d <= 0 || noise < 0)
		return -1;
	g->n = n, g->d = d, g->noise = noise;
	g->x = malloc((size_t)n * (size_t)d * sizeof *g->x);
	g->chol = malloc((size_t)n * (size_t)n * sizeof *g->chol);
	g->alpha = malloc((size_t)n * sizeof *g->alpha);
	g->work = malloc((size_t)n * sizeof *g->work);
	yn = malloc((size_t)n * sizeof *yn);
	if (!g->x || !g->chol || !g->alpha || !g->work || !yn) {
		free(yn);
		gp_clear(g);
		return -1;
	}
	memcpy(g->x, x, (size_t)n * (size_t)d * sizeof *x);
	double m = 0, v = 0;
	for (int i = 0; i < n; i++)
		m += y[i];
	m /= n;
	for (int i = 0; i < n; i++)
		v += (y[i] - m) * (y[i] - m);
	v = sqrt(v / n);
	g->ymean = m;
	g->ystd = v > 0 ? v : 1.0; /* constant targets: nothing to scale */
	for (int i = 0; i < n; i++)
		yn[i] = (y[i] - m) / g->ystd;

	if (lengthscale > 0) {
		rc = fit_one(g, yn, lengthscale);
	} else {
		double best = -HUGE_VAL, bl = 1.0;
		for (int k = 0; k <= 24; k++) {
			double l = 0.1 * pow(10.0, k / 8.0);
			if (fit_one(g, yn, l) == 0 && g->lml > best)
				best = g->lml, bl = l;
		}
		rc = fit_one(g, yn, bl);
	}
	free(yn);
	if (rc)
		gp_clear(g);
	return rc;
}

void gp_predict(const struct gp *g, const double *x, double *mean, double *var)
{
	int n = g->n;
	double *kv = g->work, mu = 0;
	for (int i = 0; i < n; i++) {
		kv[i] = gp_matern52(dist(x, g->x + (size_t)i * g->d, g->d), g->lengthscale);
		mu += kv[i] * g->alpha[i];
	}
	*mean = g->ymean + g->ystd * mu;
	if (!var)
		return;
	lsolve(g->chol, n, kv);
	double s = 1.0;
	for (int i = 0; i < n; i++)
		s -= kv[i] * kv[i];
	*var = (s > 0 ? s : 0) * g->ystd * g->ystd;
}

void gp_clear(struct gp *g)
{
	free(g->x);
	free(g->chol);
	free(g->alpha);
	free(g->work);
	memset(g, 0, sizeof *g);
}
