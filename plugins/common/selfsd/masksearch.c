#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numerics/bo.h"
#include "common/numerics/rng.h"
#include "maskjournal.h"
#include "masksearch.h"
#include "masktrial.h"

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

static void report(const struct ssd_search *s, int done, int total, double best, double ar)
{
	char what[160];
	if (!s->progress)
		return;
	if (done == 0)
		snprintf(what, sizeof what, "%s%splain decoding %.2f tok/s", s->label ? s->label : "", s->label ? ": " : "",
		         ar);
	else if (s->objective == SSD_OBJ_EXPECTED)
		snprintf(what, sizeof what, "%s%sbest %.3f expected speedup", s->label ? s->label : "",
		         s->label ? ": " : "", best);
	else
		snprintf(what, sizeof what, "%s%sbest %.2f tok/s, plain decoding %.2f tok/s", s->label ? s->label : "",
		         s->label ? ": " : "", best, ar);
	s->progress(s->progress_ctx, done, total, what);
}

/* One search step's point: a probe, a journal entry, or the GP's choice. */
static int next_point(const struct skipper_host *h, void *ctx, const struct ssd_search *s, struct bo *bo,
                      const struct ssd_journal *j, int i, double *x, uint8_t *z, double *y, int *replayed)
{
	int L = h->n_layer, dim = 2 * L, rc;
	*replayed = i < j->n;
	if (*replayed) {
		if ((rc = ssd_journal_get(h, ctx, j, i, x, dim, y)))
			return rc;
		bo_binary(x, dim, z);
	} else if (i < s->probes) {
		probe(i, L, z);
		for (int k = 0; k < dim; k++)
			x[k] = z[k];
	} else {
		bo_suggest(bo, x); /* a failed fit still yields a usable random point */
		bo_binary(x, dim, z);
	}
	return SKIPPER_POLICY_OK;
}

static double objective(const struct ssd_search *s, const struct ssd_measure *m, const uint8_t *z, int dim)
{
	return s->objective == SSD_OBJ_EXPECTED ? expected_speedup(&m->r, z, dim) : m->tokens_per_s;
}

/* The decision on the same footing for both sides: confirm pairs of
 * (plain, best) trials back to back after the search, so load drift hits
 * both alike and the best set's number is not the luckiest of many draws;
 * without them, the search's numbers. The expected objective is exact:
 * plain decoding scores 1. */
static int decide(const struct skipper_host *h, void *ctx, const struct ssd_search *s, const uint8_t *z,
                  struct ssd_ar_ref *ar, struct ssd_result *res)
{
	double best = res->tokens_per_s, plain = ssd_ar_ref_speed(ar);
	int rc;
	if (s->objective == SSD_OBJ_EXPECTED) {
		res->best_cost = res->objective;
		res->ar_cost = 1.0;
		res->draft = res->objective > (s->min_speedup > 1 ? s->min_speedup : 1.0);
		return SKIPPER_POLICY_OK;
	}
	if (s->confirm > 0) {
		struct ssd_search full = *s;
		struct ssd_ar_ref pair;
		double tb = 0;
		full.early_stop = 0; /* both sides in full */
		if ((rc = ssd_ar_ref_init(&pair, 1)))
			return rc;
		for (int k = 0; k < s->confirm && !rc; k++) {
			struct ssd_measure m;
			if (!(rc = ssd_measure(h, ctx, &full, NULL, &pair, &m)) && !(rc = ssd_measure(h, ctx, &full, z, &pair, &m))) {
				tb += m.tokens_per_s > 0 ? 1.0 / m.tokens_per_s : 0;
				res->ar_trials++;
				/* full runs: the record's alpha and M (a best set read back
				 * from the journal has none of its own) */
				res->alpha = m.r.alpha;
				res->mean_accepted = m.r.mean_accepted;
			}
		}
		best = tb > 0 ? s->confirm / tb : 0;
		plain = ssd_ar_ref_speed(&pair);
		ssd_ar_ref_free(&pair);
		if (rc)
			return rc;
	}
	res->best_cost = best > 0 ? 1000.0 / best : 0;
	res->ar_cost = plain > 0 ? 1000.0 / plain : 0;
	res->draft = best > plain * (s->min_speedup > 1 ? s->min_speedup : 1.0);
	return SKIPPER_POLICY_OK;
}

int ssd_search_run(const struct skipper_host *h, void *ctx, const struct ssd_search *s, uint8_t *attn,
                   uint8_t *mlp, struct ssd_result *res)
{
	int L = h->n_layer, dim = 2 * L, rc;
	int total = s->probes + s->iterations;
	struct bo_opts o = { .dim = dim, .seed = s->seed, .n_random = s->n_random, .n_starts = s->n_starts };
	struct ssd_journal j = { 0 };
	struct ssd_ar_ref ar = { 0 };
	struct ssd_measure m;
	struct bo *bo = NULL;
	double *x, t0 = h->now(ctx), best = 0, y;
	uint8_t *z, *zbest;
	int replayed;

	memset(res, 0, sizeof *res);
	x = malloc((size_t)dim * sizeof *x);
	z = malloc((size_t)dim);
	zbest = calloc((size_t)dim, 1);
	if (!x || !z || !zbest || (rc = ssd_ar_ref_init(&ar, s->n_prompts))) {
		rc = SKIPPER_POLICY_NOMEM;
		goto out;
	}
	if ((rc = ssd_journal_open(h, ctx, s, &j)))
		goto out;
	/* A resumed search draws its later points from another stream than an
	 * uninterrupted one would (replaying the draws would cost every past
	 * acquisition again); the observations it builds on are the same. */
	o.seed += (uint64_t)j.n * 0x9e3779b97f4a7c15ull;
	if (!(bo = bo_new(&o))) {
		rc = SKIPPER_POLICY_NOMEM;
		goto out;
	}
	int resumed = j.n; /* j.n grows with every evaluation from here on */
	if (resumed > total)
		total = resumed;
	/* the bar to clear, measured first and again every ar_every trials */
	if ((rc = ssd_measure(h, ctx, s, NULL, &ar, &m)))
		goto out;
	res->ar_trials++;
	if (!resumed)
		report(s, 0, total, 0, ssd_ar_ref_speed(&ar));
	for (int i = 0; i < total; i++) {
		if ((rc = next_point(h, ctx, s, bo, &j, i, x, z, &y, &replayed)))
			goto out;
		if (!replayed) {
			if ((rc = ssd_measure(h, ctx, s, z, &ar, &m)))
				goto out;
			y = objective(s, &m, z, dim);
			res->stopped_early += m.stopped > 0;
			if ((rc = ssd_journal_add(h, ctx, &j, x, dim, y)))
				goto out;
		}
		if (bo_observe(bo, x, y)) {
			rc = SKIPPER_POLICY_NOMEM;
			goto out;
		}
		if (res->evaluations == 0 || y > best) {
			best = y;
			memcpy(zbest, z, (size_t)dim);
			if (!replayed) {
				res->tokens_per_s = m.tokens_per_s;
				res->alpha = m.r.alpha;
				res->mean_accepted = m.r.mean_accepted;
			} else {
				res->tokens_per_s = s->objective == SSD_OBJ_TIME ? y : 0;
				res->alpha = res->mean_accepted = 0; /* not in the journal; decide() measures them */
			}
		}
		res->evaluations++;
		res->resumed += replayed;
		if (!replayed && s->ar_every > 0 && (i + 1 - resumed) % s->ar_every == 0 && i + 1 < total) {
			if ((rc = ssd_measure(h, ctx, s, NULL, &ar, &m)))
				goto out;
			res->ar_trials++;
		}
		if (!replayed || i + 1 == resumed)
			report(s, i + 1, total, best, ssd_ar_ref_speed(&ar));
	}
	res->objective = best;
	res->ar_tokens_per_s = ssd_ar_ref_speed(&ar);
	if (res->evaluations == 0) {
		h->set_error(ctx, "calibrate: no evaluation to choose from (iterations and probes are 0)");
		rc = SKIPPER_POLICY_ERROR;
		goto out;
	}
	memcpy(attn, zbest, (size_t)L);
	memcpy(mlp, zbest + L, (size_t)L);
	rc = decide(h, ctx, s, zbest, &ar, res);
out:
	res->seconds = h->now(ctx) - t0;
	ssd_journal_close(h, ctx, &j);
	ssd_ar_ref_free(&ar);
	free(x), free(z), free(zbest), bo_free(bo);
	return rc;
}

void ssd_search_setup(struct ssd_search *s, const struct ssd_keys *k, const struct skipper_calibrate *c)
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
	s->early_stop = k->early_stop;
	s->ar_every = k->ar_every;
	s->confirm = k->confirm;
	s->min_speedup = k->min_speedup;
	s->n_random = k->acq_samples;
	s->n_starts = k->acq_starts;
	s->progress = c->progress;
	s->progress_ctx = c->progress_ctx;
}

int ssd_pick(int n, int want, uint64_t seed, int *idx)
{
	struct splitmix r;
	int m = 0;
	if (want > n)
		want = n;
	splitmix_seed(&r, seed);
	/* selection sampling (Knuth's algorithm S): ordered, no extra memory */
	for (int i = 0; i < n && m < want; i++)
		if ((double)(n - i) * splitmix_double(&r) < (double)(want - m))
			idx[m++] = i;
	return m;
}
