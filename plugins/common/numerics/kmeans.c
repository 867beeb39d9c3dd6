#include <stdlib.h>
#include <string.h>

#include "kmeans.h"
#include "rng.h"
#include "vec.h"

/* k-means++: spread the initial centres so Lloyd does not start with two
 * centres in one cluster (the usual cause of a wrong split on small data). */
static void seed_centres(const float *x, int n, int d, int k, struct splitmix *rng, float *c, double *dmin)
{
	int first = (int)(splitmix_u64(rng) % (uint64_t)n);
	memcpy(c, x + (size_t)first * d, (size_t)d * sizeof *c);
	for (int i = 0; i < n; i++)
		dmin[i] = vec_dist2(x + (size_t)i * d, c, (size_t)d);
	for (int j = 1; j < k; j++) {
		double tot = 0, r;
		int pick = (j - 1) % n; /* all points coincide with centres: reuse rows */
		for (int i = 0; i < n; i++)
			tot += dmin[i];
		if (tot > 0) {
			r = splitmix_double(rng) * tot;
			for (pick = 0; pick < n - 1; pick++) {
				r -= dmin[pick];
				if (r < 0)
					break;
			}
		}
		float *cj = c + (size_t)j * d;
		memcpy(cj, x + (size_t)pick * d, (size_t)d * sizeof *c);
		for (int i = 0; i < n; i++) {
			double dd = vec_dist2(x + (size_t)i * d, cj, (size_t)d);
			if (dd < dmin[i])
				dmin[i] = dd;
		}
	}
}

int kmeans(const float *x, int n, int d, int k, int max_iter, uint64_t seed, float *c, int *assign)
{
	struct splitmix rng;
	double *dmin, *sum;
	int *as, *cnt;

	if (n <= 0 || d <= 0 || k <= 0)
		return -1;
	dmin = malloc((size_t)n * sizeof *dmin);
	as = malloc((size_t)n * sizeof *as);
	cnt = malloc((size_t)k * sizeof *cnt);
	sum = malloc((size_t)k * (size_t)d * sizeof *sum);
	if (!dmin || !as || !cnt || !sum) {
		free(dmin), free(as), free(cnt), free(sum);
		return -1;
	}
	splitmix_seed(&rng, seed);
	seed_centres(x, n, d, k, &rng, c, dmin);
	for (int i = 0; i < n; i++)
		as[i] = -1;
	for (int it = 0; it < (max_iter > 0 ? max_iter : 100); it++) {
		int changed = 0;
		for (int i = 0; i < n; i++) {
			int best = 0;
			double bd = vec_dist2(x + (size_t)i * d, c, (size_t)d);
			for (int j = 1; j < k; j++) {
				double dd = vec_dist2(x + (size_t)i * d, c + (size_t)j * d, (size_t)d);
				if (dd < bd)
					bd = dd, best = j;
			}
			if (as[i] != best)
				as[i] = best, changed = 1;
		}
		if (!changed)
			break;
		memset(cnt, 0, (size_t)k * sizeof *cnt);
		memset(sum, 0, (size_t)k * (size_t)d * sizeof *sum);
		for (int i = 0; i < n; i++) {
			cnt[as[i]]++;
			for (int t = 0; t < d; t++)
				sum[(size_t)as[i] * d + t] += x[(size_t)i * d + t];
		}
		/* An emptied cluster keeps its centre: moving it to a random point
		 * would make the result depend on more RNG draws for no gain. */
		for (int j = 0; j < k; j++)
			if (cnt[j])
				for (int t = 0; t < d; t++)
					c[(size_t)j * d + t] = (float)(sum[(size_t)j * d + t] / cnt[j]);
	}
	if (assign)
		memcpy(assign, as, (size_t)n * sizeof *as);
	free(dmin), free(as), free(cnt), free(sum);
	return 0;
}
