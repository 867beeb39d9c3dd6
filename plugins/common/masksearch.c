#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo.h"
#include "masksearch.h"
#include "rng.h"

/* Cost model of a round: a draft step costs c = share of sub-layers still
 * computed, a verification pass costs one full step (the assumption behind
 * KNN-SSD's E(Spd)), counted over the trial instead of through M and alpha
 * so that a set that never gets a draft accepted scores below 1. */
static double expected_speedup(const struct skipper_trial_result *r, const uint8_t *z, int dim)
{
	int k = 0;
	for (int i = 0; i < dim; i++)
		k += z[i];
	/* the embedding and LM head count as one more unit, never skipped:
	 * drafting with every sub-layer skipped is cheap, not free */
	double c = (double)(dim - k + 1) / (dim + 1), cost = r->drafted * c + r->rounds;
	return cost > 0 ? r->n_generated / cost : 1.0;
}

static int evaluate(const struct skipper_host *h, void *ctx, const struct cm_mask_search *s, const uint8_t *z,
                    struct skipper_trial_result *r)
{
	int L = h->n_layer;
	struct skipper_trial t = {
		.skip_attn = z, .skip_mlp = z + L, .max_draft = s->max_draft, .threshold = s->gamma0,
		.n_prompts = s->n_prompts, .prompts = s->prompts, .max_tokens = s->max_tokens,
		.adaptive = s->adaptive, .target_alpha = s->alpha, .epsilon = s->eps,
		.beta1 = s->beta1, .beta2 = s->beta2,
	};
	return h->trial(ctx, &t, r);
}

/* The Self-SD authors seeded their search with hand-made sets. Ours: 0 =
 * nothing skipped (acceptance 1 at full draft cost: it gives the GP a
 * foothold on the side of the box where good sets are subsets of the
 * harmless units, instead of only the cheap-but-useless "skip all" side);
 * then the shape every published set has (skips cluster in the second
 * half, attention more than MLP): 1 = every other attention of the second
 * half, 2 = that plus every other MLP of the last quarter. */
static void probe(int which, int L, uint8_t *z)
{
	memset(z, 0, (size_t)2 * L);
	if (which == 0)
		return;
	for (int l = L / 2; l < L; l += 2)
		z[l] = 1;
	if (which == 2)
		for (int l = (3 * L) / 4; l < L; l += 2)
			z[L + l] = 1;
}

static void report(const struct cm_mask_search *s, int done, int total, double best)
{
	char what[128];
	if (!s->progress)
		return;
	snprintf(what, sizeof what, "%s%sbest %.3f %s", s->label ? s->label : "", s->label ? ": " : "", best,
	         s->objective == CM_OBJ_EXPECTED ? "expected speedup" : "tok/s");
	s->progress(s->progress_ctx, done, total, what);
}

int cm_mask_search_run(const struct skipper_host *h, void *ctx, const struct cm_mask_search *s, uint8_t *attn,
                       uint8_t *mlp, struct cm_mask_result *res)
{
	int L = h->n_layer, dim = 2 * L, rc = SKIPPER_POLICY_OK;
	int total = s->iterations + s->probes + 1;
	struct cm_bo_opts o = { .dim = dim, .seed = s->seed, .n_random = s->n_random, .n_starts = s->n_starts };
	struct skipper_trial_result r;
	struct cm_bo *bo;
	double *x, t0 = h->now(ctx), best = 0;
	uint8_t *z;

	memset(res, 0, sizeof *res);
	x = malloc((size_t)dim * sizeof *x);
	z = malloc((size_t)dim);
	bo = cm_bo_new(&o);
	if (!x || !z || !bo) {
		free(x), free(z), cm_bo_free(bo);
		return SKIPPER_POLICY_NOMEM;
	}
	/* the baseline the search has to beat, reported next to the result */
	struct skipper_trial ar = { .autoregressive = 1, .n_prompts = s->n_prompts, .prompts = s->prompts,
	                            .max_tokens = s->max_tokens };
	if ((rc = h->trial(ctx, &ar, &r)))
		goto out;
	res->ar_tokens_per_s = r.tokens_per_s;
	report(s, 1, total, 0);
	for (int i = 0; i < s->probes + s->iterations; i++) {
		if (i < s->probes) {
			probe(i, L, z);
			for (int j = 0; j < dim; j++)
				x[j] = z[j];
		} else {
			cm_bo_suggest(bo, x); /* a failed fit still yields a usable random point */
			cm_bo_binary(x, dim, z);
		}
		if ((rc = evaluate(h, ctx, s, z, &r)))
			goto out;
		double y = s->objective == CM_OBJ_EXPECTED ? expected_speedup(&r, z, dim) : r.tokens_per_s;
		if (cm_bo_observe(bo, x, y)) {
			rc = SKIPPER_POLICY_NOMEM;
			goto out;
		}
		if (res->evaluations == 0 || y > best) {
			best = y;
			res->tokens_per_s = r.tokens_per_s;
			res->alpha = r.alpha;
			res->mean_accepted = r.mean_accepted;
		}
		res->evaluations++;
		report(s, i + 2, total, best);
	}
	if (cm_bo_best(bo, x, &res->objective) == 0) {
		cm_bo_binary(x, dim, z);
		memcpy(attn, z, (size_t)L);
		memcpy(mlp, z + L, (size_t)L);
	} else {
		memset(attn, 0, (size_t)L);
		memset(mlp, 0, (size_t)L);
	}
out:
	res->seconds = h->now(ctx) - t0;
	free(x), free(z), cm_bo_free(bo);
	return rc;
}

void cm_mask_search_setup(struct cm_mask_search *s, const struct cm_ssd_keys *k, const struct skipper_calibrate *c)
{
	memset(s, 0, sizeof *s);
	s->iterations = c->iterations > 0 ? c->iterations : k->iterations;
	s->probes = k->probes;
	s->max_tokens = c->max_tokens > 0 ? c->max_tokens : k->calib_tokens;
	s->max_draft = k->search_max_draft;
	s->gamma0 = k->search_threshold;
	s->adaptive = k->adaptive;
	s->alpha = k->alpha;
	s->eps = k->eps;
	s->beta1 = k->beta1;
	s->beta2 = k->beta2;
	s->objective = k->objective;
	s->seed = c->seed;
	s->n_random = k->acq_samples;
	s->n_starts = k->acq_starts;
	s->progress = c->progress;
	s->progress_ctx = c->progress_ctx;
}

int cm_pick(int n, int want, uint64_t seed, int *idx)
{
	struct cm_rng r;
	int m = 0;
	if (want > n)
		want = n;
	cm_rng_seed(&r, seed);
	/* selection sampling (Knuth's algorithm S): ordered, no extra memory */
	for (int i = 0; i < n && m < want; i++)
		if ((double)(n - i) * cm_rng_double(&r) < (double)(want - m))
			idx[m++] = i;
	return m;
}
