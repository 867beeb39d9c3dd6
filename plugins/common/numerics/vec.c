/* Accumulate in double: embeddings of a few thousand floats lose digits in
 * float sums, and routing ties should not depend on summation order. */
#include <math.h>

#include "vec.h"

double vec_dot(const float *a, const float *b, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)a[i] * b[i];
	return s;
}

double vec_dist2(const float *a, const float *b, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		double d = (double)a[i] - b[i];
		s += d * d;
	}
	return s;
}

double vec_cosine(const float *a, const float *b, size_t n)
{
	double na = vec_dot(a, a, n), nb = vec_dot(b, b, n);
	if (na <= 0 || nb <= 0)
		return 0;
	return vec_dot(a, b, n) / sqrt(na * nb);
}

void vec_normalize(float *v, size_t n)
{
	double s = sqrt(vec_dot(v, v, n));
	if (s <= 0)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = (float)(v[i] / s);
}

int vec_nearest_cosine(const float *q, const float *rows, int n_rows, size_t n, double *sim)
{
	int best = -1;
	double bs = -2;
	for (int r = 0; r < n_rows; r++) {
		double c = vec_cosine(q, rows + (size_t)r * n, n);
		if (c > bs) {
			bs = c;
			best = r;
		}
	}
	if (sim)
		*sim = best >= 0 ? bs : 0;
	return best;
}
