/* K-means (Lloyd iterations, k-means++ seeding) on float rows, seeded and
 * deterministic: the same data and seed give the same centroids. */
#ifndef COMMON_NUMERICS_KMEANS_H
#define COMMON_NUMERICS_KMEANS_H

#include <stdint.h>

/* Cluster data[n][d] into k groups. centroids[k][d] and (if non-NULL)
 * assign[n] are caller-owned. k > n is allowed: the surplus centroids
 * repeat data rows (callers asking for 10 anchors from 4 prompts still get
 * 10 rows). Returns 0, or -1 on bad arguments or no memory. */
int kmeans(const float *data, int n, int d, int k, int max_iter, uint64_t seed, float *centroids,
           int *assign);

#endif
