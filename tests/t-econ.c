/* core/econ against values computed by hand: the verify curve and its
 * extrapolation, the best draft length on a GPU-like flat curve (long
 * drafts) and a CPU-like steep one (short or none), the best of a list of
 * rounds (the engine's lookup sizing), extra tree rows and per-depth sibling
 * widths, the draft step's price (skipper_draft_cost of policy.h), and the
 * Self-SD adaptive exit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "econ/adaptive.h"
#include "econ/econ.h"
#include "tap.h"
#include "test-costs.h"

static void curve(void)
{
	struct skipper_costs c;
	cpu_qwen(&c);
	ok(NEAR(econ_verify_cost(&c, 1), 1) && NEAR(econ_verify_cost(&c, 0), 1) && NEAR(econ_verify_cost(&c, 5), 1.53),
	   "verify[n] inside the measured range");
	ok(NEAR(econ_verify_cost(&c, 10), 2.08 + 2 * 0.17), "past n_max the last slope continues (2.42)");
	ok(NEAR(econ_round_tokens(0.5, 2), 1.75) && NEAR(econ_round_tokens(1, 3), 4) && NEAR(econ_round_tokens(0, 5), 1) &&
	   NEAR(econ_round_tokens(0.9, 0), 1), "expected tokens 1 + a + ... + a^k");
}

/* The curve priced at a longer context (econ_costs_at): a 4-layer model
 * whose step after 128 tokens is head 0.2 + 4 x (attn 0.05 + mlp 0.15),
 * each token more adding 1e-4 steps to one row and 5e-5 to each further
 * one. After 2128 tokens (2000 more) a step costs 1.2 of those steps. */
static void context(void)
{
	struct skipper_costs c, at, same;
	cpu_qwen(&c);
	c.head = c.draft_head = 0.2;
	c.attn = 0.05;
	c.mlp = 0.15;
	c.ctx = 128;
	c.ctx_row = 1e-4;
	c.ctx_extra_row = 5e-5;
	econ_costs_at(&c, 4, 2128, &at);
	ok(at.ctx == 2128 && NEAR(at.step_seconds, 0.12) && NEAR(at.verify[1], 1),
	   "a step after 2128 tokens: 1.2 steps after 128 (%g s), verify[1] still 1", at.step_seconds);
	/* 8 rows: (2.08 + 2000 (1e-4 + 7 x 5e-5)) / 1.2 = (2.08 + 0.9) / 1.2 */
	ok(NEAR(at.verify[8], 2.98 / 1.2), "8 rows: what the context adds to each row, in the longer step (%g)",
	   at.verify[8]);
	/* attention takes the 0.2 steps the context adds: (0.05 + 0.2 / 4) / 1.2 */
	ok(NEAR(at.attn, 0.1 / 1.2) && NEAR(at.mlp, 0.15 / 1.2) && NEAR(at.head, 0.2 / 1.2) &&
	       NEAR(at.head + 4 * (at.attn + at.mlp), 1),
	   "attention's share grows, the others' shrink, the shares still make one step");
	ok(NEAR(skipper_draft_cost(&at, 4, (const uint8_t[]){ 1, 1, 0, 0 }, NULL),
	        1 - 2 * at.attn) && at.attn > c.attn,
	   "a draft that skips attention saves more there (%g of a step)", 2 * at.attn);
	econ_costs_at(&c, 4, 64, &same);
	ok(same.ctx == 128 && NEAR(same.verify[8], c.verify[8]) && NEAR(same.step_seconds, c.step_seconds),
	   "below the measured context: the figures as measured");
	c.ctx_row = c.ctx_extra_row = 0;
	econ_costs_at(&c, 4, 32768, &same);
	ok(NEAR(same.verify[8], c.verify[8]) && NEAR(same.attn, c.attn), "nothing measured: nothing added");
}

static void best_draft(void)
{
	struct skipper_costs c;
	double v;
	int k;

	/* GPU-like: verify[n] = 1; value(k) = (1 - .95^(k+1)) / .05 / (0.1 k + 1), best at
	 * k = 15: 11.198 / 2.5 = 4.4790 (k = 14: 4.4727, k = 16: 4.4760) */
	linear(&c, 0, 32);
	k = econ_best_draft(&c, 0.1, 0.95, 32, 1.0, &v);
	ok(k == 15 && fabs(v - 4.478987) < 1e-6, "flat curve, d 0.1, a 0.95: k = 15, value 4.479 (got %d, %.6f)", k, v);
	k = econ_best_draft(&c, 0.1, 0.95, 6, 1.0, &v);
	is_int(k, 6, "the method's cap bounds it");
	/* d 0.5, a 0.9: 1.9/1.5, 2.71/2, 3.439/2.5 = 1.3756, 4.0951/3 = 1.3650 */
	k = econ_best_draft(&c, 0.5, 0.9, 32, 1.0, &v);
	ok(k == 3 && NEAR(v, 1.3756), "flat curve, d 0.5, a 0.9: k = 3, value 1.3756 (got %d, %.6f)", k, v);

	/* CPU-like (Qwen, 2 cores), d 0.55 */
	cpu_qwen(&c);
	k = econ_best_draft(&c, 0.55, 0.6, 8, 1.02, &v);
	ok(k == 0 && v == 1.0, "steep curve, a 0.6: 1.6 / 1.69 = 0.947 < 1: no draft (got %d)", k);
	k = econ_best_draft(&c, 0.55, 0.85, 8, 1.02, &v);
	ok(k == 1 && fabs(v - 1.85 / 1.69) < 1e-12, "steep curve, a 0.85: one token, 1.85 / 1.69 = 1.0947 (got %d, %.4f)",
	   k, v);
	/* a 0.95: 1.1538, 1.1456, 3.5801 / 2.935 = 1.2204, 1.2130, ... */
	k = econ_best_draft(&c, 0.55, 0.95, 8, 1.02, &v);
	ok(k == 3 && fabs(v - 1.22035) < 1e-5, "steep curve, a 0.95: k = 3 where verify[4] = verify[3] (got %d, %.5f)",
	   k, v);
	/* the floor: 1.0947 does not beat 1.1 */
	is_int(econ_best_draft(&c, 0.55, 0.85, 8, 1.1, NULL), 0, "a draft must beat the floor");
}

static void tree(void)
{
	struct skipper_costs steep, flat, steeper;
	double gain[3] = { 0.3, 0.2, 0.1 };
	linear(&steep, 0.25, 32);
	linear(&flat, 0.002, 32);
	linear(&steeper, 0.5, 32);

	/* tokens 2, cost 2, delta 0.25: 0.3 * 2 > 2 * .25 takes it (2.3 / 2.25);
	 * 0.2 * 2.25 = 0.45 < 2.3 * .25 = 0.575 stops */
	is_int(econ_tree_extra(&steep, 2, 2, 3, gain, 3), 1, "steep curve: only the best extra row pays");
	is_int(econ_tree_extra(&flat, 2, 2, 3, gain, 3), 3, "flat curve: every extra row pays");

	/* chain probabilities 0.6, 0.5; siblings 0.3, 0.05 at depth 0 and 0.4,
	 * 0.1 at depth 1 (reach 0.6: gains 0.24, 0.06); d 0.5 */
	int32_t tok[2] = { 10, 20 }, ids[6] = { 10, 11, 12, 21, 20, 22 };
	float probs[2] = { 0.6f, 0.5f }, tp[6] = { 0.6f, 0.3f, 0.05f, 0.4f, 0.5f, 0.1f };
	struct skipper_draft dr = { .n = 2, .tokens = tok, .probs = probs, .top_k = 3, .top_ids = ids, .top_probs = tp };
	int cap[2] = { 2, 2 }, extra[2];
	/* T = 1 + .6 + .3 = 1.9, C = 1 + 1.5 = 2.5: 0.3 * 2.5 > 1.9 * .25 (take; 2.2, 2.75),
	 * 0.24 * 2.75 = 0.66 > 2.2 * .25 (take; 2.44, 3.0), 0.06 * 3 < 2.44 * .25 */
	int n = econ_tree_widths(&steep, 0.5, &dr, cap, extra);
	ok(n == 2 && extra[0] == 1 && extra[1] == 1, "steep: one sibling per depth (%d: %d, %d)", n, extra[0], extra[1]);
	/* C = 1 + 2 = 3, delta 0.5: 0.3 * 3 = 0.9 < 1.9 * .5 = 0.95 */
	n = econ_tree_widths(&steeper, 0.5, &dr, cap, extra);
	ok(n == 0 && extra[0] == 0 && extra[1] == 0, "steeper: a chain");
	n = econ_tree_widths(&flat, 0.5, &dr, cap, extra);
	ok(n == 4 && extra[0] == 2 && extra[1] == 2, "flat: every sibling up to the cap (%d)", n);
	cap[0] = 1, cap[1] = 0;
	n = econ_tree_widths(&flat, 0.5, &dr, cap, extra);
	ok(n == 1 && extra[0] == 1 && extra[1] == 0, "the method's width caps each depth");
	cap[0] = cap[1] = 2;
	ids[1] = -1; /* a lookup chain's empty top-k slot is no sibling */
	n = econ_tree_widths(&flat, 0.5, &dr, cap, extra);
	ok(n == 3 && extra[0] == 1, "ids < 0 are not siblings");
}

static void best_ratio(void)
{
	/* 1 + 0.9 + 0.9 x 0.5: (1.9, 2.35) over (1.14, 1.39) = 1.6667, 1.6906 */
	double tokens[3] = { 1.9, 2.35, 2.35 }, cost[3] = { 1.14, 1.39, 1.39 }, v;
	int k = econ_best_ratio(tokens, cost, 3, ECON_FLOOR, &v);
	ok(k == 2 && NEAR(v, 2.35 / 1.39), "the best tokens per step, the first on ties (got %d, %.4f)", k, v);
	k = econ_best_ratio(tokens, cost, 3, 1.7, &v);
	ok(k == 0 && v == 1.7, "none beats the floor: 0, the floor as its value");
	k = econ_best_ratio(tokens, cost, 0, ECON_FLOOR, &v);
	ok(k == 0 && v == ECON_FLOOR, "no candidate: 0");
}

static void draft_cost(void)
{
	struct skipper_costs c;
	uint8_t attn[4] = { 1, 0, 1, 0 }, mlp[4] = { 0, 0, 0, 1 };
	linear(&c, 0, 4);
	/* draft_head 0.1 + 2 attn x 0.01 + 3 mlp x 0.02 */
	ok(NEAR(skipper_draft_cost(&c, 4, attn, mlp), 0.18), "a draft step: the head and the sub-layers it runs");
	ok(NEAR(skipper_draft_cost(&c, 4, NULL, NULL), 0.22), "no mask: every sub-layer");
}

static void adaptive(void)
{
	struct econ_adaptive a;
	econ_adaptive_init(&a, 0.6, 0.9, 0.01, 0.5, 0.9);
	econ_adaptive_begin(&a);
	/* AR 0.5 <= 0.9: tmp 0.61, gamma 0.9 x 0.6 + 0.1 x 0.61 = 0.601 */
	econ_adaptive_update(&a, a.rounds == 0, 1, 2);
	ok(NEAR(a.ar, 0.5) && NEAR(a.gamma, 0.601) && a.rounds == 1, "low acceptance raises gamma (%.4f)", a.gamma);
	/* AR 0.5 x 0.5 + 0.5 x 1 = 0.75: gamma 0.9 x 0.601 + 0.1 x 0.611 = 0.602 */
	econ_adaptive_update(&a, a.rounds == 0, 4, 4);
	ok(NEAR(a.ar, 0.75) && NEAR(a.gamma, 0.602), "AR is smoothed within a request");
	econ_adaptive_update(&a, a.rounds == 0, 0, 0);
	ok(NEAR(a.ar, 0.75) && a.rounds == 2, "a round that drafted nothing: no update");
	/* a new request: AR restarts at 1 > 0.9, gamma 0.9 x 0.602 + 0.1 x 0.592 = 0.601 */
	econ_adaptive_begin(&a);
	econ_adaptive_update(&a, a.rounds == 0, 3, 3);
	ok(NEAR(a.ar, 1.0) && NEAR(a.gamma, 0.601), "AR restarts with the request, gamma carries over (%.4f)", a.gamma);
	econ_adaptive_update(&a, 1, 0, 2);
	ok(NEAR(a.ar, 0.0), "first = 1 restarts AR whatever the count");
}

int main(void)
{
	context();
	curve();
	best_draft();
	best_ratio();
	tree();
	draft_cost();
	adaptive();
	return tap_done();
}
