/* SWIFT skip-set search; see swift_search.h. */
#include <stdlib.h>
#include <string.h>

#include "swift_search.h"

int swift_search_init(struct swift_search *s, int n_layer, double ratio, uint64_t seed)
{
	int N = n_layer;
	s->n_layer = N;
	s->n_slots = 2 * (N - 2);
	s->n_skip = (int)(ratio * s->n_slots + 1e-9);
	s->best = calloc((size_t)s->n_slots, 1);
	s->cand = calloc((size_t)s->n_slots, 1);
	s->point = malloc((size_t)s->n_slots * sizeof *s->point);
	/* one refined start: the proposal is projected to its top n_skip
	 * components anyway, so more local search buys little (swift(5)) */
	struct bo_opts o = { .dim = s->n_slots > 0 ? s->n_slots : 1, .seed = seed, .kappa = s->kappa,
	                        .noise = s->noise, .n_random = s->n_cand, .n_starts = 1, .max_obs = s->gp_window };
	s->bo = bo_new(&o);
	if (!s->best || !s->cand || !s->point || !s->bo)
		return SKIPPER_POLICY_NOMEM;
	/* uniform set: blocks 1, 3, 5, ... <= N-2 fully skipped, whatever n_skip
	 * is (§8 item 9) */
	for (int b = 1; b <= N - 2; b += 2) {
		s->best[b - 1] = 1;
		s->best[(N - 2) + b - 1] = 1;
	}
	s->s_best = 0;
	s->o = s->tol = 0;
	s->optimizing = 1;
	return SKIPPER_POLICY_OK;
}

void swift_search_free(struct swift_search *s)
{
	free(s->best);
	free(s->cand);
	free(s->point);
	bo_free(s->bo);
	s->best = s->cand = NULL;
	s->point = NULL;
	s->bo = NULL;
}

/* The n_skip largest components of x (ties: lower slot). */
static void top_components(const double *x, int n, int k, uint8_t *out)
{
	if (n <= 0)
		return;
	memset(out, 0, (size_t)n);
	for (int m = 0; m < k; m++) {
		int arg = -1;
		for (int i = 0; i < n; i++)
			if (!out[i] && (arg < 0 || x[i] > x[arg]))
				arg = i;
		out[arg] = 1;
	}
}

int swift_search_propose(struct swift_search *s, const struct skipper_host *h, void *ctx)
{
	s->cand_bo = 0;
	if (s->rescore) {
		/* after a re-arm S* is scored first, so s* is its score on the
		 * current window and a random set cannot displace it for free */
		memcpy(s->cand, s->best, (size_t)s->n_slots);
		s->rescore = 0;
		return SKIPPER_POLICY_OK;
	}
	if (s->bayes && (s->o + 1) % s->beta == 0 && bo_count(s->bo) >= 2) {
		if (bo_suggest(s->bo, s->point)) {
			h->set_error(ctx, "swift: the GP cannot be fitted (out of memory or a singular kernel matrix)");
			return SKIPPER_POLICY_ERROR;
		}
		top_components(s->point, s->n_slots, s->n_skip, s->cand);
		s->cand_bo = 1;
		s->bo_steps++;
		return SKIPPER_POLICY_OK;
	}
	/* selection sampling: each n_skip-subset equally likely, no index array */
	for (int i = 0, need = s->n_skip; i < s->n_slots; i++) {
		uint64_t left = (uint64_t)(s->n_slots - i);
		s->cand[i] = need > 0 && h->rng_u64(ctx, &s->rng) % left < (uint64_t)need;
		need -= s->cand[i];
	}
	return SKIPPER_POLICY_OK;
}

int swift_search_record(struct swift_search *s, double match)
{
	/* the GP sees the binary set that was scored, also for BO steps (§8 item 8) */
	for (int i = 0; i < s->n_slots; i++)
		s->point[i] = s->cand[i];
	if (bo_observe(s->bo, s->point, match))
		return SKIPPER_POLICY_NOMEM;

	if (match > s->s_best) {
		memcpy(s->best, s->cand, (size_t)s->n_slots);
		s->s_best = match;
		s->tol = 0;
		s->improved++;
		if (match > s->max_score)
			s->optimizing = 0;
	} else {
		s->tol++;
	}
	s->o++;
	if (s->tol > s->max_tol || s->o > s->max_steps)
		s->optimizing = 0;
	return SKIPPER_POLICY_OK;
}

void swift_slots_to_masks(const struct swift_search *s, const uint8_t *slots, uint8_t *attn, uint8_t *mlp)
{
	int N = s->n_layer;
	memset(attn, 0, (size_t)N);
	memset(mlp, 0, (size_t)N);
	for (int i = 0; i < N - 2; i++) {
		attn[i + 1] = slots[i];
		mlp[i + 1] = slots[(N - 2) + i];
	}
}

void swift_search_rearm(struct swift_search *s)
{
	s->s_best = 0;
	s->o = s->tol = 0;
	s->optimizing = 1;
	s->rescore = 1;
}
