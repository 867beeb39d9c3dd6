/* plugins/common/numerics GP and BO against known answers: a two-point posterior
 * worked out by hand (2x2 inverse, see the comment below) and BO finding
 * the optimum of synthetic functions with a fixed seed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/numerics/bo.h"
#include "common/numerics/gp.h"
#include "tap.h"

static int near(double a, double b, double tol)
{
	if (fabs(a - b) <= tol)
		return 1;
	diag("got %.12g want %.12g", a, b);
	return 0;
}

/* Quadratic bowl with its maximum (0) at c. */
static const double c3[3] = { 0.2, 0.8, 0.6 };
static double bowl(const double *x)
{
	double s = 0;
	for (int i = 0; i < 3; i++)
		s -= (x[i] - c3[i]) * (x[i] - c3[i]);
	return s;
}

int main(void)
{
	struct gp g = { 0 };
	double m, v;


	/* Matérn-5/2 at r = l: (1 + √5 + 5/3) e^-√5 */
	ok(near(gp_matern52(1.0, 1.0), (1 + sqrt(5.0) + 5.0 / 3) * exp(-sqrt(5.0)), 1e-15), "matern at r = l");
	ok(near(gp_matern52(0.0, 0.3), 1.0, 0), "matern at r = 0 is 1");

	/* x = {0, 1}, y = {0, 2}, l = 1, noise 0.01. Normalised y = {-1, 1}
	 * (mean 1, std 1). With k = matern(1), K = [[1.01, k], [k, 1.01]] and
	 * alpha = K^-1 y = (-1, 1) / (1.01 - k). At x*, mean = 1 + k*·alpha and
	 * var = 1 - k*ᵀ K^-1 k*; the values below are those expressions
	 * evaluated once by hand (python, double precision). */
	double x2[2] = { 0, 1 }, y2[2] = { 0, 2 }, q;
	ok(gp_fit(&g, x2, y2, 2, 1, 0.01, 1.0) == 0, "fit two points");
	q = 0.25;
	gp_predict(&g, &q, &m, &v);
	ok(near(m, 0.43352101967689305, 1e-12) && near(v, 0.05961433298936969, 1e-12), "posterior at 0.25");
	q = 0.5;
	gp_predict(&g, &q, &m, &v);
	ok(near(m, 1.0, 1e-12) && near(v, 0.10474310523499297, 1e-12), "posterior at 0.5 (symmetric)");
	q = 2.0;
	gp_predict(&g, &q, &m, &v);
	ok(near(m, 1.7928584749602827, 1e-12) && near(v, 0.7041157682179492, 1e-12), "posterior at 2 (extrapolation)");
	double k = gp_matern52(1.0, 1.0);
	ok(near(g.alpha[0], -1 / (1.01 - k), 1e-12) && near(g.alpha[1], 1 / (1.01 - k), 1e-12), "alpha = K^-1 y");

	/* a constant target has no spread: std 1, mean the constant */
	double yc[2] = { 3, 3 };
	ok(gp_fit(&g, x2, yc, 2, 1, 0.01, 0) == 0, "fit constant targets, length scale by likelihood");
	gp_predict(&g, &q, &m, NULL);
	ok(near(m, 3.0, 1e-9), "constant mean");
	ok(g.lengthscale >= 0.01 && g.lengthscale <= 100, "length scale on the grid (%g)", g.lengthscale);
	gp_clear(&g);

	/* BO on a continuous bowl in [0,1]^3 */
	struct bo_opts o = { .dim = 3, .seed = 1, .n_random = 2000 };
	struct bo *bo = bo_new(&o);
	double x[8], best;
	for (int it = 0; it < 30; it++) {
		bo_suggest(bo, x);
		bo_observe(bo, x, bowl(x));
	}
	bo_best(bo, x, &best);
	ok(best > -0.01, "bowl: best %.4f at (%.2f %.2f %.2f) within 0.1 of the optimum", best, x[0], x[1], x[2]);
	bo_free(bo);

	/* BO on a binary objective through the 0.5 threshold (the mask search's
	 * relaxation): 8 bits, +1 per bit matching the target, -3 for bit 2 set
	 * (a "vital" unit). Optimum: the target exactly. */
	static const unsigned char target[8] = { 1, 0, 0, 1, 1, 0, 1, 1 };
	double first = 0, xb[8];
	unsigned char z[8];
	for (int rep = 0; rep < 2; rep++) {
		struct bo_opts ob = { .dim = 8, .seed = 7, .n_random = 2000 };
		bo = bo_new(&ob);
		for (int it = 0; it < 40; it++) {
			double f = 0;
			bo_suggest(bo, xb);
			bo_binary(xb, 8, z);
			for (int i = 0; i < 8; i++)
				f += z[i] == target[i];
			f -= 3.0 * z[2];
			bo_observe(bo, xb, f);
		}
		bo_best(bo, xb, &best);
		bo_binary(xb, 8, z);
		if (rep == 0) {
			ok(best == 8 && memcmp(z, target, 8) == 0, "binary: BO finds the target set (best %g)", best);
			first = best;
			ok(bo_count(bo) == 40, "40 observations");
		} else {
			ok(best == first, "same seed, same result");
		}
		bo_free(bo);
	}
	/* max_obs: a window of the newest observations */
	{
		struct bo_opts ow = { .dim = 1, .seed = 3, .n_random = 200, .max_obs = 3 };
		double xs[1], y;
		bo = bo_new(&ow);
		for (int i = 0; i < 5; i++) {
			xs[0] = 0.1 * (i + 1);
			bo_observe(bo, xs, i == 0 ? 100.0 : (double)i);
		}
		ok(bo_count(bo) == 3, "max_obs 3: 3 of 5 observations held (%d)", bo_count(bo));
		int rb = bo_best(bo, xs, &y);
		ok(rb == 0 && y == 4.0 && near(xs[0], 0.5, 1e-15),
		   "the oldest (and best) observation was dropped: best %g at %g", y, xs[0]);
		ok(bo_suggest(bo, xs) == 0 && xs[0] >= 0 && xs[0] <= 1, "suggests from the window");
		bo_free(bo);
	}
	ok(bo_new(&(struct bo_opts){ .dim = 0 }) == NULL, "dim 0 refused");
	return tap_done();
}
