/* Helpers shared by the backend tests (t-backend: CPU; t-cuda-backend: CUDA
 * against the CPU): forward calls with every row's logits, one-token-at-a-time
 * decoding, KV cache reads and comparisons, top-k consistency. Backend
 * independent: they only go through the vtable. */
#ifndef T_BACKEND_UTIL_H
#define T_BACKEND_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/error.h"
#include "t-backend-model.h"

/* Forward n rows (n <= 256), logits of every row into lg[n][V] (NULL: no head). */
static inline int fwd(struct skipper_backend *be, const int32_t *tok, int n, int n_past,
                      const int32_t *parent, const int32_t *pos, int kv_write, const uint8_t *sa,
                      const uint8_t *sm, float *lg)
{
	int32_t rows[256];
	struct skipper_error err = { 0 };
	for (int i = 0; i < n; i++)
		rows[i] = i;
	struct skipper_forward fw = {
		.n = n, .tokens = tok, .pos = pos, .parent = parent, .n_past = n_past,
		.kv_write = kv_write, .skip_attn = sa, .skip_mlp = sm,
		.n_out = lg ? n : 0, .out_rows = rows, .logits = lg,
	};
	int rc = skipper_backend_forward(be, &fw, &err);
	if (rc)
		printf("# forward: %s\n", err.msg);
	return rc;
}

/* One token at a time, committing each. */
static inline int seq(struct skipper_backend *be, const int32_t *tok, int n, int n_past,
                      const uint8_t *sa, const uint8_t *sm, float *lg, int V)
{
	for (int i = 0; i < n; i++)
		if (fwd(be, tok + i, 1, n_past + i, NULL, NULL, 1, sa, sm, lg ? lg + (size_t)i * V : NULL))
			return -1;
	return 0;
}

/* The whole cache (every layer, every slot, K then V) into *out (malloc'ed). */
static inline size_t cache_bytes(struct skipper_backend *be, float **out)
{
	const struct skipper_hparams *hp = &be->model->hp;
	size_t kvd = (size_t)hp->n_head_kv * hp->head_dim, nctx = (size_t)be->n_ctx;
	size_t n = (size_t)hp->n_layer * nctx * kvd * 2;
	float *c = malloc(n * sizeof *c);
	for (int l = 0; l < hp->n_layer; l++)
		for (size_t s = 0; s < nctx; s++) {
			float *p = c + ((size_t)l * nctx + s) * kvd * 2;
			skipper_backend_kv_read(be, 0, l, (int)s, p, p + kvd, NULL);
		}
	*out = c;
	return n * sizeof *c;
}

/* Compare caches bitwise over slots [0, upto) of every layer. */
static inline int cache_eq(struct skipper_backend *a, struct skipper_backend *b, int upto)
{
	const struct skipper_hparams *hp = &a->model->hp;
	int kvd = hp->n_head_kv * hp->head_dim;
	float *ka = malloc(sizeof(float) * kvd * 4), *kb = ka + 2 * kvd;
	int same = 1;
	for (int l = 0; l < hp->n_layer && same; l++)
		for (int s = 0; s < upto && same; s++) {
			skipper_backend_kv_read(a, 0, l, s, ka, ka + kvd, NULL);
			skipper_backend_kv_read(b, 0, l, s, kb, kb + kvd, NULL);
			same = memcmp(ka, kb, sizeof(float) * kvd * 2) == 0;
		}
	free(ka);
	return same;
}

static inline void rand_tokens(struct tm_rng *r, int32_t *t, int n, int V)
{
	for (int i = 0; i < n; i++)
		t[i] = (int32_t)(tm_unif(r) * V);
}

/* k top ids/probabilities of one row against that row's logits: descending,
 * probabilities = softmax(logits) within eps, nothing outside the list
 * better than its last entry. */
static inline int topk_consistent(const float *lg, int V, const int32_t *ids, const float *pr, int k,
                                  double eps)
{
	double mx = -INFINITY, z = 0;
	int good = 1, cnt = 0;
	for (int v = 0; v < V; v++)
		mx = fmax(mx, lg[v]);
	for (int v = 0; v < V; v++)
		z += exp(lg[v] - mx);
	for (int j = 0; j < k; j++) {
		int32_t id = ids[j];
		if (id < 0 || id >= V)
			return 0;
		good &= fabs(pr[j] - exp(lg[id] - mx) / z) < eps;
		if (j > 0)
			good &= lg[ids[j - 1]] >= lg[id];
	}
	for (int v = 0; v < V; v++)
		cnt += lg[v] > lg[ids[k - 1]];
	return good && cnt <= k - 1;
}

#endif
