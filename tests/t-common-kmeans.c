/* plugins/common/numerics K-means and cosine helpers on planted clusters. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/numerics/kmeans.h"
#include "common/numerics/rng.h"
#include "common/numerics/vec.h"
#include "tap.h"

int main(void)
{
	enum { N = 60, D = 4, K = 3 };
	static const float centre[K][D] = { { 5, 0, 0, 0 }, { 0, 5, 0, 0 }, { 0, 0, 5, 5 } };
	float x[N][D], c[K][D], c2[K][D];
	int as[N];
	struct splitmix r;

	splitmix_seed(&r, 3);
	for (int i = 0; i < N; i++)
		for (int j = 0; j < D; j++)
			x[i][j] = centre[i % K][j] + (float)(splitmix_double(&r) - 0.5);

	ok(kmeans(&x[0][0], N, D, K, 100, 11, &c[0][0], as) == 0, "kmeans runs");
	int consistent = 1;
	for (int i = 0; i < N; i++)
		consistent &= as[i] == as[i % K];
	ok(consistent && as[0] != as[1] && as[1] != as[2] && as[0] != as[2], "planted clusters recovered");
	double worst = 0;
	for (int k = 0; k < K; k++) {
		double d = vec_dist2(c[as[k]], centre[k], D);
		worst = d > worst ? d : worst;
	}
	ok(worst < 0.1, "centroids near the planted centres (worst squared distance %.4f)", worst);
	kmeans(&x[0][0], N, D, K, 100, 11, &c2[0][0], NULL);
	ok(memcmp(c, c2, sizeof c) == 0, "deterministic for a seed");

	float few[2][D] = { { 1, 0, 0, 0 }, { 0, 1, 0, 0 } }, many[5][D];
	ok(kmeans(&few[0][0], 2, D, 5, 10, 1, &many[0][0], NULL) == 0, "k > n allowed");

	float a[3] = { 1, 0, 0 }, b[3] = { 2, 2, 0 }, zero[3] = { 0, 0, 0 };
	ok(fabs(vec_cosine(a, b, 3) - 1 / sqrt(2.0)) < 1e-12, "cosine of 45 degrees");
	ok(vec_cosine(a, zero, 3) == 0, "cosine with a zero vector is 0");
	float rows[3][3] = { { 0, 1, 0 }, { 3, 1, 0 }, { -1, 0, 0 } };
	double sim;
	ok(vec_nearest_cosine(a, &rows[0][0], 3, 3, &sim) == 1 && fabs(sim - 3 / sqrt(10.0)) < 1e-9,
	   "nearest by cosine, not by length");
	vec_normalize(b, 3);
	ok(fabs(vec_dot(b, b, 3) - 1) < 1e-6, "normalize");
	return tap_done();
}
