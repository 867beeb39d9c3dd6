/* CLaSp DP; see clasp_dp.h and clasp.md §3.3. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clasp_dp.h"

int clasp_dp_init(struct clasp_dp *dp, int L, int M, int d)
{
	size_t row = (size_t)(M + 1) * (size_t)d;
	memset(dp, 0, sizeof *dp);
	dp->L = L;
	dp->M = M;
	dp->d = d;
	dp->cur = malloc(row * sizeof *dp->cur);
	dp->nxt = malloc(row * sizeof *dp->nxt);
	dp->batch = malloc((size_t)(M > 0 ? M : 1) * (size_t)d * sizeof *dp->batch);
	dp->cur_ok = calloc((size_t)M + 1, 1);
	dp->nxt_ok = calloc((size_t)M + 1, 1);
	dp->skipbit = calloc((size_t)(L + 1) * (size_t)(M + 1), 1);
	dp->slot = malloc((size_t)(M > 0 ? M : 1) * sizeof *dp->slot);
	if (!dp->cur || !dp->nxt || !dp->batch || !dp->cur_ok || !dp->nxt_ok || !dp->skipbit || !dp->slot) {
		clasp_dp_free(dp);
		return SKIPPER_POLICY_NOMEM;
	}
	return SKIPPER_POLICY_OK;
}

void clasp_dp_free(struct clasp_dp *dp)
{
	free(dp->cur);
	free(dp->nxt);
	free(dp->batch);
	free(dp->cur_ok);
	free(dp->nxt_ok);
	free(dp->skipbit);
	free(dp->slot);
	memset(dp, 0, sizeof *dp);
}

double clasp_cos(const float *a, const float *b, int d)
{
	double ab = 0, aa = 0, bb = 0;
	for (int k = 0; k < d; k++) {
		ab += (double)a[k] * b[k];
		aa += (double)a[k] * a[k];
		bb += (double)b[k] * b[k];
	}
	if (aa <= 0 || bb <= 0)
		return aa == bb ? 1.0 : 0.0; /* two zero vectors are the same state */
	return ab / sqrt(aa * bb);
}

int clasp_dp_run(struct clasp_dp *dp, const struct skipper_host *h, void *ctx, const float *x, int32_t pos,
                 uint8_t *skip, double *score)
{
	const int L = dp->L, M = dp->M, d = dp->d;
	const size_t vb = (size_t)d * sizeof(float);
	int rc;

	dp->calls = 0;
	memset(dp->cur_ok, 0, (size_t)M + 1);
	memcpy(dp->cur, x, vb);
	dp->cur_ok[0] = 1;
	for (int i = 1; i <= L; i++) {
		const int l = i - 1, top = i < M ? i : M;
		const float *xi = x + (size_t)i * d;
		const int pin = dp->pinned && dp->pinned[l];
		int nb = 0;

		/* execute candidates: cells j >= 1 of the previous row, one batch */
		for (int j = 1; j <= top && j <= i - 1; j++) {
			if (!dp->cur_ok[j])
				continue;
			memcpy(dp->batch + (size_t)nb * d, dp->cur + (size_t)j * d, vb);
			dp->slot[nb++] = j;
		}
		if (nb > 0) {
			if ((rc = h->sublayer_forward(ctx, SKIPPER_SUBLAYER_ATTN, l, nb, 1, dp->batch, &pos, pos)))
				return rc;
			if ((rc = h->sublayer_forward(ctx, SKIPPER_SUBLAYER_MLP, l, nb, 1, dp->batch, &pos, pos)))
				return rc;
			dp->calls += 2;
		}
		memset(dp->nxt_ok, 0, (size_t)M + 1);
		memcpy(dp->nxt, xi, vb); /* nothing skipped: the exact state */
		dp->nxt_ok[0] = 1;
		for (int j = 1, b = 0; j <= top; j++) {
			const float *e = NULL, *s = NULL;
			if (b < nb && dp->slot[b] == j)
				e = dp->batch + (size_t)b++ * d;
			if (!pin && dp->cur_ok[j - 1])
				s = dp->cur + (size_t)(j - 1) * d;
			if (!e && !s)
				continue;
			/* strict ">" for execute: a tie goes to skip (paper, §8 item 5) */
			int take_skip = !e || (s && !(clasp_cos(e, xi, d) > clasp_cos(s, xi, d)));
			memcpy(dp->nxt + (size_t)j * d, take_skip ? s : e, vb);
			dp->nxt_ok[j] = 1;
			dp->skipbit[(size_t)i * (M + 1) + j] = (uint8_t)take_skip;
		}
		float *t = dp->cur;
		dp->cur = dp->nxt;
		dp->nxt = t;
		uint8_t *o = dp->cur_ok;
		dp->cur_ok = dp->nxt_ok;
		dp->nxt_ok = o;
	}
	if (!dp->cur_ok[M]) {
		h->set_error(ctx, "clasp: no way to skip %d of %d layers with the pinned ones", M, L);
		return SKIPPER_POLICY_ERROR;
	}
	if (score)
		*score = clasp_cos(dp->cur + (size_t)M * d, x + (size_t)L * d, d);
	memset(skip, 0, (size_t)L);
	for (int i = L, j = M; i > 0 && j > 0; i--) {
		if (dp->skipbit[(size_t)i * (M + 1) + j]) {
			skip[i - 1] = 1;
			j--;
		}
	}
	return SKIPPER_POLICY_OK;
}
