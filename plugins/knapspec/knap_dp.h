/* KnapSpec's knapsack DP (knapspec.md §3.5, Algorithm 1, gather form):
 * items are the 2L sub-layers in order (item 2l = attention of layer l,
 * 2l+1 = MLP), g[i][c] is the r x d state matrix after i items with skipped
 * weight exactly c (c <= Kh), kept when its mean row-wise cosine to the full
 * model's X[i] beats tau; ties go to execute. Each item runs all live cells
 * of the previous row as ONE host->sublayer_forward call (n_seq = live
 * cells, seq_len = r). Backtracking any terminal cell gives a skip mask.
 *
 * Ownership: struct knap_dp owns its buffers (knap_dp_reserve grows them,
 * knap_dp_free releases them); X, pos, pinned are the caller's. */
#ifndef SKIPPER_KNAP_DP_H
#define SKIPPER_KNAP_DP_H

#include <stdint.h>

#include "skipper/policy.h"

#define KNAP_EXEC 0
#define KNAP_SKIP 1

struct knap_dp {
	/* set by the caller before knap_dp_run */
	int n_items;             /* 2L */
	int d;
	const uint8_t *pinned;   /* [2L] items that are never skipped, or NULL */
	double tau;              /* prune cells with cosine <= tau */

	/* after a run */
	int r, Kh, w_attn, w_mlp;
	float *g;                /* [(Kh+1)][r][d] final row: state of terminal cell c */
	uint8_t *live;           /* [Kh+1] terminal cell c non-empty */
	double *score;           /* [Kh+1] its mean cosine to X[2L] */
	int calls, max_live;     /* sublayer_forward calls, widest row */

	/* internal */
	float *gn, *batch;
	uint8_t *live_n, *par;   /* par: [(2L+1)][(Kh+1)] */
	double *cos_e, *cos_s;
	int *slot;
	size_t cap_state, cap_cells, cap_par;
};

/* X: [(2L+1)][r][d] full-model states at the sub-layer boundaries of r
 * consecutive committed rows at positions pos[r] (ascending; the prefix
 * [0, pos[0]) is committed). Returns a host status. */
int knap_dp_run(struct knap_dp *dp, const struct skipper_host *h, void *ctx, const float *X, int r,
                const int32_t *pos, int Kh, int w_attn, int w_mlp);

/* Skip mask [2L] of terminal cell c (live after a run). */
void knap_dp_backtrack(const struct knap_dp *dp, int c, uint8_t *skip);

void knap_dp_free(struct knap_dp *dp);

/* Mean over r rows of the row-wise cosine of two r x d matrices. */
double knap_cos(const float *a, const float *b, int r, int d);

#endif
