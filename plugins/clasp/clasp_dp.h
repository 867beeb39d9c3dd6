/* CLaSp's layer-level dynamic program (clasp.md §3.3): over (layers
 * processed i, layers skipped j) keep the one state closest in cosine to the
 * full model's state x_i; backtrack from (L, M) to a mask of exactly M
 * skipped layers. Each DP row runs its live "execute" candidates through
 * layer i-1 as one batched pair of host->sublayer_forward calls (attention,
 * then MLP), n_seq = candidates, seq_len = 1.
 *
 * Ownership: struct clasp_dp owns its buffers (clasp_dp_init allocates,
 * clasp_dp_free releases); x and skip are the caller's. */
#ifndef SKIPPER_CLASP_DP_H
#define SKIPPER_CLASP_DP_H

#include <stdint.h>

#include "skipper/policy.h"

struct clasp_dp {
	int L, M, d;
	const uint8_t *pinned;  /* [L] or NULL: layers that may not be skipped (caller's) */
	float *cur, *nxt;       /* [(M+1)][d] rolling rows */
	float *batch;           /* [M][d] execute candidates of one row */
	uint8_t *cur_ok, *nxt_ok; /* [M+1] cell reachable */
	uint8_t *skipbit;       /* [(L+1)][(M+1)] decision: 1 = layer i-1 skipped */
	int *slot;              /* [M] which j each batch entry belongs to */
	int calls;              /* sublayer_forward calls of the last run */
};

/* 0 or SKIPPER_POLICY_NOMEM. */
int clasp_dp_init(struct clasp_dp *dp, int L, int M, int d);
void clasp_dp_free(struct clasp_dp *dp);

/* x: [(L+1)][d] residual states of one token (x_0 = embedding) at sequence
 * position pos, whose prefix [0, pos) is committed. skip gets [L] 0/1 with
 * exactly M ones; *score (may be NULL) the final cosine D(L, M).
 * Returns a host status (error set by the host or here). */
int clasp_dp_run(struct clasp_dp *dp, const struct skipper_host *h, void *ctx, const float *x, int32_t pos,
                 uint8_t *skip, double *score);

/* Row-wise cosine of two d-vectors, accumulated in double. */
double clasp_cos(const float *a, const float *b, int d);

#endif
