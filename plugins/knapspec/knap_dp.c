/* KnapSpec knapsack DP; see knap_dp.h and knapspec.md §3.5. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "knap_dp.h"

double knap_cos(const float *a, const float *b, int r, int d)
{
	double sum = 0;
	for (int i = 0; i < r; i++) {
		const float *x = a + (size_t)i * d, *y = b + (size_t)i * d;
		double xy = 0, xx = 0, yy = 0;
		for (int k = 0; k < d; k++) {
			xy += (double)x[k] * y[k];
			xx += (double)x[k] * x[k];
			yy += (double)y[k] * y[k];
		}
		sum += xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : (xx == yy ? 1.0 : 0.0);
	}
	return sum / r;
}

void knap_dp_free(struct knap_dp *dp)
{
	free(dp->g);
	free(dp->gn);
	free(dp->batch);
	free(dp->live);
	free(dp->live_n);
	free(dp->par);
	free(dp->score);
	free(dp->cos_e);
	free(dp->cos_s);
	free(dp->slot);
	dp->g = dp->gn = dp->batch = NULL;
	dp->live = dp->live_n = dp->par = NULL;
	dp->score = dp->cos_e = dp->cos_s = NULL;
	dp->slot = NULL;
	dp->cap_state = dp->cap_cells = dp->cap_par = 0;
}

static int grow(void **p, size_t bytes)
{
	void *q = realloc(*p, bytes);
	if (!q)
		return -1;
	*p = q;
	return 0;
}

static int reserve(struct knap_dp *dp, int r, int Kh)
{
	size_t cells = (size_t)Kh + 1, state = cells * (size_t)r * dp->d, par = (size_t)(dp->n_items + 1) * cells;
	if (state > dp->cap_state) {
		if (grow((void **)&dp->g, state * sizeof(float)) || grow((void **)&dp->gn, state * sizeof(float)) ||
		    grow((void **)&dp->batch, state * sizeof(float)))
			return -1;
		dp->cap_state = state;
	}
	if (cells > dp->cap_cells) {
		if (grow((void **)&dp->live, cells) || grow((void **)&dp->live_n, cells) ||
		    grow((void **)&dp->score, cells * sizeof(double)) || grow((void **)&dp->cos_e, cells * sizeof(double)) ||
		    grow((void **)&dp->cos_s, cells * sizeof(double)) || grow((void **)&dp->slot, cells * sizeof(int)))
			return -1;
		dp->cap_cells = cells;
	}
	if (par > dp->cap_par) {
		if (grow((void **)&dp->par, par))
			return -1;
		dp->cap_par = par;
	}
	return 0;
}

int knap_dp_run(struct knap_dp *dp, const struct skipper_host *h, void *ctx, const float *X, int r,
                const int32_t *pos, int Kh, int w_attn, int w_mlp)
{
	const int d = dp->d, n_items = dp->n_items;
	const size_t mat = (size_t)r * d, mb = mat * sizeof(float);
	int rc;

	if (reserve(dp, r, Kh))
		return SKIPPER_POLICY_NOMEM;
	dp->r = r;
	dp->Kh = Kh;
	dp->w_attn = w_attn;
	dp->w_mlp = w_mlp;
	dp->calls = dp->max_live = 0;
	memset(dp->live, 0, (size_t)Kh + 1);
	memcpy(dp->g, X, mb);
	dp->live[0] = 1;
	dp->score[0] = 1;
	for (int i = 1; i <= n_items; i++) {
		const int item = i - 1, w = item % 2 == 0 ? w_attn : w_mlp;
		const int kind = item % 2 == 0 ? SKIPPER_SUBLAYER_ATTN : SKIPPER_SUBLAYER_MLP;
		const float *Xi = X + (size_t)i * mat;
		const int can_skip = !(dp->pinned && dp->pinned[item]);
		int nj = 0;

		/* every live cell executes item i-1: one batched call. Cell 0 is
		 * left out: it is reset to the exact X[i] below anyway. */
		for (int c = 0; c <= Kh; c++) {
			dp->slot[c] = -1;
			if (!dp->live[c] || c == 0)
				continue;
			memcpy(dp->batch + (size_t)nj * mat, dp->g + (size_t)c * mat, mb);
			dp->slot[c] = nj++;
		}
		if (nj > dp->max_live)
			dp->max_live = nj;
		if (nj > 0) {
			if ((rc = h->sublayer_forward(ctx, kind, item / 2, nj, r, dp->batch, pos, pos[0])))
				return rc;
			dp->calls++;
		}
		for (int c = 0; c <= Kh; c++) {
			if (dp->slot[c] >= 0)
				dp->cos_e[c] = knap_cos(dp->batch + (size_t)dp->slot[c] * mat, Xi, r, d);
			if (dp->live[c] && can_skip)
				dp->cos_s[c] = knap_cos(dp->g + (size_t)c * mat, Xi, r, d);
		}
		memset(dp->live_n, 0, (size_t)Kh + 1);
		for (int c = 0; c <= Kh; c++) {
			double se = dp->slot[c] >= 0 ? dp->cos_e[c] : -INFINITY;
			double ss = can_skip && c - w >= 0 && dp->live[c - w] ? dp->cos_s[c - w] : -INFINITY;
			uint8_t *par = &dp->par[(size_t)i * (Kh + 1) + c];
			if (c == 0) { /* nothing skipped: the exact state */
				memcpy(dp->gn, Xi, mb);
				dp->live_n[0] = 1;
				dp->score[0] = 1;
				*par = KNAP_EXEC;
				continue;
			}
			if (!(se > dp->tau || ss > dp->tau))
				continue; /* pruned (or unreachable) */
			if (se >= ss) { /* ties -> execute (Eq. 8) */
				memcpy(dp->gn + (size_t)c * mat, dp->batch + (size_t)dp->slot[c] * mat, mb);
				*par = KNAP_EXEC;
				dp->score[c] = se;
			} else {
				memcpy(dp->gn + (size_t)c * mat, dp->g + (size_t)(c - w) * mat, mb);
				*par = KNAP_SKIP;
				dp->score[c] = ss;
			}
			dp->live_n[c] = 1;
		}
		float *t = dp->g;
		dp->g = dp->gn;
		dp->gn = t;
		uint8_t *u = dp->live;
		dp->live = dp->live_n;
		dp->live_n = u;
	}
	return SKIPPER_POLICY_OK;
}

void knap_dp_backtrack(const struct knap_dp *dp, int c, uint8_t *skip)
{
	memset(skip, 0, (size_t)dp->n_items);
	for (int i = dp->n_items; i > 0; i--) {
		int item = i - 1;
		if (dp->par[(size_t)i * (dp->Kh + 1) + c] == KNAP_SKIP) {
			skip[item] = 1;
			c -= item % 2 == 0 ? dp->w_attn : dp->w_mlp;
		}
	}
}
