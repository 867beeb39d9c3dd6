/* Offline skip-set search shared by bo-static and knn-router: Bayesian
 * optimisation (bo.h) over the 2L relaxed variables (attention of layers
 * 0..L-1, then MLP of layers 0..L-1; unit skipped iff x > 0.5) with the
 * measured tokens/s of SSD decoding through host->trial as the objective.
 * The caller owns every buffer; nothing here prints. */
#ifndef SKIPCOMMON_MASKSEARCH_H
#define SKIPCOMMON_MASKSEARCH_H

#include <stdint.h>

#include "skipper/policy.h"
#include "ssdkeys.h"

/* Search objectives. TIME is the method's (measured tokens/s of the whole
 * draft+verify loop); EXPECTED is the cost-model speedup behind KNN-SSD's
 * E(Spd): generated / (drafted * c + verify passes), c = share of the 2L
 * sub-layers plus one (embedding and head) computed while drafting. It depends on greedy acceptance only, so it is
 * deterministic: tests and noisy machines can check what the search finds
 * without timing noise. */
#define CM_OBJ_TIME 0
#define CM_OBJ_EXPECTED 1

struct cm_mask_search {
	int n_prompts;
	const char *const *prompts;
	int iterations;      /* BO steps after the probes */
	int probes;          /* hand-made starting sets evaluated first (0..2) */
	int max_tokens;      /* per prompt per trial */
	int max_draft;       /* K during the search */
	double gamma0;       /* initial exit threshold during the search */
	int adaptive;        /* adaptive exit during the search */
	double alpha, eps, beta1, beta2;
	int objective;       /* CM_OBJ_* */
	uint64_t seed;
	int n_random, n_starts; /* acquisition effort (0 = bo.h defaults) */
	/* progress(ctx, done, total, what); may be NULL */
	void (*progress)(void *ctx, int done, int total, const char *what);
	void *progress_ctx;
	const char *label;   /* prefix of progress texts ("domain code") */
};

struct cm_mask_result {
	double tokens_per_s;   /* measured tokens/s of the best set */
	double objective;      /* best observed objective (tokens/s with CM_OBJ_TIME) */
	double ar_tokens_per_s;/* autoregressive baseline on the same prompts */
	double alpha, mean_accepted;
	int evaluations;
	double seconds;        /* wall time of the search */
};

/* Search; attn[n_layer] and mlp[n_layer] get the best mask found.
 * SKIPPER_POLICY_OK or the failing service's code (error already set). */
int cm_mask_search_run(const struct skipper_host *h, void *ctx, const struct cm_mask_search *s, uint8_t *attn,
                       uint8_t *mlp, struct cm_mask_result *res);

/* Fill the search settings from the policy's keys and the calibrate call
 * (its iterations, max_tokens and seed override the keys when non-zero);
 * prompts, label and progress are left to the caller. */
void cm_mask_search_setup(struct cm_mask_search *s, const struct cm_ssd_keys *k, const struct skipper_calibrate *c);

/* Choose min(want, n) distinct indices of [0, n) at random (seeded), in
 * increasing order, into idx; returns how many. The Self-SD development set
 * is "8 instances drawn at random". */
int cm_pick(int n, int want, uint64_t seed, int *idx);

#endif
