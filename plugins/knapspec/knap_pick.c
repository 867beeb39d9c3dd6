/* KnapSpec Algorithm 2 with exact bound pruning; see knap_pick.h. */
#include <stdlib.h>
#include <string.h>

#include "econ/econ.h"
#include "knap_latency.h"
#include "knap_pick.h"

#define PICK_BATCH 8 /* cells per head call: enough rows to amortise the head's weights */

struct cell {
	int c;
	double t_draft, bound;
};

/* Highest bound first; equal bounds by ascending c (deterministic). */
static int by_bound(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;
	if (x->bound != y->bound)
		return x->bound < y->bound ? 1 : -1;
	return x->c - y->c;
}

/* Verification of gamma drafts: one full forward (the paper), or
 * verify[gamma + 1] plain steps under the cost curve. */
static double t_target(const struct knap_pick *p, int gamma)
{
	return p->costs ? p->t_step * econ_verify_cost(p->costs, gamma + 1) : p->t_step;
}

/* Fold cell c at acceptance alpha into the best (tpt, c, gamma), with the
 * ascending scan's tie rule. */
static void consider(struct knap_pick *p, int c, double alpha, double t_draft)
{
	for (int g = 1; g <= p->max_draft; g++) {
		double tpt = knap_tpt(alpha, g, t_draft, t_target(p, g));
		if (tpt > p->tpt || (tpt == p->tpt && (c < p->c || (c == p->c && g < p->gamma)))) {
			p->tpt = tpt;
			p->c = c;
			p->gamma = g;
			p->alpha = alpha;
			p->t_draft = t_draft;
		}
	}
}

static double best_bound(const struct knap_pick *p, double t_draft)
{
	double b = 0;
	for (int g = 1; g <= p->max_draft; g++) {
		double t = knap_tpt(1.0, g, t_draft, t_target(p, g));
		if (t > b)
			b = t;
	}
	return b;
}

int knap_pick_run(struct knap_dp *dp, const struct skipper_host *h, void *ctx, struct knap_pick *p)
{
	const int r = dp->r, L = p->n_layer;
	const size_t mat = (size_t)r * dp->d;
	struct cell *cells = malloc((size_t)(dp->Kh + 1) * sizeof *cells);
	int32_t *yh = malloc((size_t)PICK_BATCH * r * sizeof *yh);
	uint8_t *skip = malloc((size_t)dp->n_items);
	int n = 0, rc = SKIPPER_POLICY_OK;

	p->c = -1;
	p->gamma = 0;
	p->tpt = -1;
	p->alpha = 0;
	p->n_replayed = 0;
	p->t_step = (p->costs ? p->t_head : 0) + L * (p->t_attn + p->t_mlp);
	p->t_draft = 0;
	if (!cells || !yh || !skip) {
		rc = SKIPPER_POLICY_NOMEM;
		goto out;
	}
	/* c = 0 (no skipping) is excluded, as in the reference code */
	for (int c = 1; c <= dp->Kh; c++) {
		int na = 0, nm = 0;
		if (!dp->live[c])
			continue;
		knap_dp_backtrack(dp, c, skip);
		for (int l = 0; l < L; l++) {
			na += !skip[2 * l];
			nm += !skip[2 * l + 1];
		}
		cells[n].c = c;
		cells[n].t_draft = (p->costs ? p->t_draft_head : 0) + na * p->t_attn + nm * p->t_mlp;
		cells[n].bound = best_bound(p, cells[n].t_draft);
		n++;
	}
	p->n_live = n;
	qsort(cells, (size_t)n, sizeof *cells, by_bound);
	for (int i0 = 0; i0 < n && !rc; i0 += PICK_BATCH) {
		int nb = 0;
		/* a cell whose bound is below the best cannot win, nor can the
		 * rest (sorted); an equal bound may still win a tie */
		while (nb < PICK_BATCH && i0 + nb < n && cells[i0 + nb].bound >= p->tpt) {
			memcpy(dp->batch + (size_t)nb * mat, dp->g + (size_t)cells[i0 + nb].c * mat, mat * sizeof *dp->batch);
			nb++;
		}
		if (nb == 0)
			break;
		if ((rc = h->head_argmax(ctx, nb * r, dp->batch, yh)))
			break;
		p->n_replayed += nb;
		for (int q = 0; q < nb; q++) {
			int match = 0;
			for (int i = 0; i < r; i++)
				match += yh[(size_t)q * r + i] == p->y[i];
			consider(p, cells[i0 + q].c, (double)match / r, cells[i0 + q].t_draft);
		}
		if (nb < PICK_BATCH)
			break;
	}
out:
	free(cells);
	free(yh);
	free(skip);
	return rc;
}
