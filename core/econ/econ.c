/* Drafting economics; see econ.h. */
#include <math.h>

#include "econ.h"

double econ_verify_cost(const struct skipper_costs *c, int rows)
{
	int n = c->n_max;
	if (rows <= 1 || n < 1)
		return 1.0;
	if (rows <= n)
		return c->verify[rows];
	double slope = n > 1 ? c->verify[n] - c->verify[n - 1] : 1.0;
	return c->verify[n] + slope * (rows - n);
}

void econ_costs_at(const struct skipper_costs *c, int n_layer, int ctx, struct skipper_costs *out)
{
	double more = ctx > c->ctx ? (double)ctx - c->ctx : 0.0, step = 1.0 + more * c->ctx_row;

	*out = *c;
	for (int n = 1; n <= c->n_max; n++)
		out->verify[n] = (c->verify[n] + more * (c->ctx_row + (n - 1) * c->ctx_extra_row)) / step;
	out->verify[1] = 1.0;
	out->step_seconds = c->step_seconds * step;
	out->head = c->head / step;
	out->draft_head = c->draft_head / step;
	out->mlp = c->mlp / step;
	out->attn = (c->attn + (n_layer > 0 ? more * c->ctx_row / n_layer : 0.0)) / step;
	out->ctx_row = c->ctx_row / step;
	out->ctx_extra_row = c->ctx_extra_row / step;
	if (ctx > c->ctx)
		out->ctx = ctx;
}

double econ_round_tokens(double a, int k)
{
	if (a >= 1)
		return k + 1.0;
	if (a <= 0 || k <= 0)
		return 1.0;
	return (1 - pow(a, k + 1)) / (1 - a);
}

int econ_best_ratio(const double *tokens, const double *cost, int n, double floor, double *value)
{
	int best = 0;
	*value = floor;
	for (int i = 0; i < n; i++) {
		double v = tokens[i] / cost[i];
		if (v > *value) {
			*value = v;
			best = i + 1;
		}
	}
	return best;
}

int econ_best_draft(const struct skipper_costs *c, double d, double a, int k_max, double floor, double *value)
{
	double best = floor;
	int k_best = 0;
	for (int k = 1; k <= k_max; k++) {
		double v = econ_round_tokens(a, k) / (k * d + econ_verify_cost(c, k + 1));
		if (v > best) {
			best = v;
			k_best = k;
		}
	}
	if (value)
		*value = k_best ? best : 1.0;
	return k_best;
}

int econ_tree_extra(const struct skipper_costs *c, double tokens, double cost, int rows, const double *gain, int n)
{
	int taken = 0;
	for (; taken < n; taken++, rows++) {
		double delta = econ_verify_cost(c, rows + 1) - econ_verify_cost(c, rows);
		/* (tokens + g) / (cost + delta) > tokens / cost */
		if (!(gain[taken] * cost > tokens * delta))
			break;
		tokens += gain[taken];
		cost += delta;
	}
	return taken;
}

/* Draft probability of the t-th sibling (0-based) of chain token j among
 * its top-k, or -1 when there is none (the chain token and ids < 0, which a
 * lookup chain leaves, are not siblings). */
static double sibling_prob(const struct skipper_draft *dr, int j, int t)
{
	const int32_t *ids = dr->top_ids + (size_t)j * dr->top_k;
	const float *p = dr->top_probs + (size_t)j * dr->top_k;
	for (int i = 0; i < dr->top_k; i++) {
		if (ids[i] < 0 || ids[i] == dr->tokens[j])
			continue;
		if (t-- == 0)
			return p[i];
	}
	return -1;
}

int econ_tree_widths(const struct skipper_costs *c, double d, const struct skipper_draft *dr, const int *cap,
                     int *extra)
{
	double tokens = 1, cost, reach = 1;
	int rows = dr->n + 1, total = 0;

	for (int j = 0; j < dr->n; j++) {
		extra[j] = 0;
		reach *= dr->probs[j];
		tokens += reach;
	}
	if (!dr->top_ids || !dr->top_probs || dr->top_k < 2)
		return 0;
	cost = dr->n * d + econ_verify_cost(c, rows);
	for (;;) {
		/* the best next sibling over all depths: within a depth the top-k
		 * is sorted, so each depth's next one is its best remaining */
		double g_best = -1;
		int j_best = -1;
		reach = 1;
		for (int j = 0; j < dr->n; j++) {
			if (extra[j] < cap[j]) {
				double q = sibling_prob(dr, j, extra[j]);
				if (q >= 0 && reach * q > g_best) {
					g_best = reach * q;
					j_best = j;
				}
			}
			reach *= dr->probs[j];
		}
		if (j_best < 0 || econ_tree_extra(c, tokens, cost, rows, &g_best, 1) == 0)
			break;
		tokens += g_best;
		cost += econ_verify_cost(c, rows + 1) - econ_verify_cost(c, rows);
		rows++;
		extra[j_best]++;
		total++;
	}
	return total;
}
