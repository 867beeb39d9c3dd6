/* SWIFT's on-the-fly skip-set search (swift.md §2-3): fixed-cardinality
 * sets over the 2(N-2) sub-layers of blocks 1..N-2, the "uniform" initial
 * set, random proposals with a GP-UCB proposal every beta-th step, the best
 * set so far, and the stop criteria. The state lives as long as the policy
 * instance, so it carries over from one request to the next.
 *
 * Slot s < N-2 is the attention of block s+1, slot s >= N-2 the MLP of block
 * s-(N-2)+1. Ownership: the struct owns its arrays (swift_search_init /
 * swift_search_free). */
#ifndef SKIPPER_SWIFT_SEARCH_H
#define SKIPPER_SWIFT_SEARCH_H

#include <stdint.h>

#include "common/numerics/bo.h"
#include "skipper/policy.h"

struct swift_search {
	/* configuration (set before swift_search_init) */
	int beta, max_tol, max_steps, bayes, n_cand, gp_window;
	double max_score, kappa, noise;

	int n_layer, n_slots, n_skip;
	uint8_t *best;        /* [n_slots] S* */
	double s_best;        /* s* */
	int o, tol, optimizing;
	uint8_t *cand;        /* [n_slots] the proposal being scored */
	int cand_bo;          /* 1 if it came from the GP */
	struct bo *bo;        /* plugins/common/numerics' GP-UCB over the newest gp_window observations */
	double *point;        /* [n_slots] work */
	struct skipper_rng rng;
	int bo_steps, improved;
	int rescore;          /* next proposal re-scores S* (set by rearm) */
};

/* ratio r of the 2(N-2) slots; N >= 3; seed drives the GP's UCB
 * maximisation (the random proposals use s->rng). 0 or SKIPPER_POLICY_NOMEM. */
int swift_search_init(struct swift_search *s, int n_layer, double ratio, uint64_t seed);
void swift_search_free(struct swift_search *s);

/* Fill s->cand: a GP-UCB proposal on every beta-th step (with at least two
 * observations), else a uniform random n_skip-subset. */
int swift_search_propose(struct swift_search *s, const struct skipper_host *h, void *ctx);

/* Record the matchness of s->cand; updates S*, s*, o, tol, optimizing.
 * 0 or SKIPPER_POLICY_NOMEM. */
int swift_search_record(struct swift_search *s, double match);

/* Slots -> engine masks [n_layer]. */
void swift_slots_to_masks(const struct swift_search *s, const uint8_t *slots, uint8_t *attn, uint8_t *mlp);

/* Start optimising again from S* (s* = 0, o = tol = 0); the next
 * proposal is S* itself, re-scored on the current window. */
void swift_search_rearm(struct swift_search *s);

#endif
