/* SWIFT skip-set search; see swift_search.h. */
#include <stdlib.h>
#include <string.h>

#include "swift_gp.h"
#include "swift_search.h"

int swift_search_init(struct swift_search *s, int n_layer, double ratio)
{
	int N = n_layer;
	s->n_layer = N;
	s->n_slots = 2 * (N - 2);
	s->n_skip = (int)(ratio * s->n_slots + 1e-9);
	s->best = calloc((size_t)s->n_slots, 1);
	s->cand = calloc((size_t)s->n_slots, 1);
	s->point = malloc((size_t)s->n_slots * sizeof *s->point);
	s->obs_x = malloc((size_t)s->gp_window * s->n_slots * sizeof *s->obs_x);
	s->obs_y = malloc((size_t)s->gp_window * sizeof *s->obs_y);
	if (!s->best || !s->cand || !s->point || !s->obs_x || !s->obs_y)
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
	free(s->obs_x);
	free(s->obs_y);
	s->best = s->cand = NULL;
	s->point = s->obs_x = NULL;
	s->obs_y = NULL;
}

/* The n_skip largest components of x (ties: lower slot). */
static void top_components(const float *x, int n, int k, uint8_t *out)
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
	if (s->bayes && (s->o + 1) % s->beta == 0 && s->n_obs >= 2) {
		int rc = swift_gp_ucb_argmax(h, ctx, &s->rng, s->obs_x, s->obs_y, s->n_obs, s->n_slots, s->noise,
		                             s->kappa, s->n_cand, s->point);
		if (rc)
			return rc;
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

void swift_search_record(struct swift_search *s, double match)
{
	/* the GP sees the binary set that was scored, also for BO steps (§8 item 8) */
	float *x = s->obs_x + (size_t)s->next_obs * s->n_slots;
	for (int i = 0; i < s->n_slots; i++)
		x[i] = (float)s->cand[i];
	s->obs_y[s->next_obs] = match;
	s->next_obs = (s->next_obs + 1) % s->gp_window;
	if (s->n_obs < s->gp_window)
		s->n_obs++;

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
