/* Dense float-vector helpers shared by plugins (cosine routing, K-means). */
#ifndef COMMON_NUMERICS_VEC_H
#define COMMON_NUMERICS_VEC_H

#include <stddef.h>

double vec_dot(const float *a, const float *b, size_t n);
/* Squared Euclidean distance. */
double vec_dist2(const float *a, const float *b, size_t n);
/* Cosine similarity; 0 when either vector is zero (no direction to compare). */
double vec_cosine(const float *a, const float *b, size_t n);
/* Scale v to unit length in place; a zero vector stays zero. */
void vec_normalize(float *v, size_t n);
/* Index of the row of rows[n_rows][n] with the highest cosine to q (-1 if
 * n_rows == 0); *sim gets that cosine when non-NULL. */
int vec_nearest_cosine(const float *q, const float *rows, int n_rows, size_t n, double *sim);

#endif
