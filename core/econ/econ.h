/* core/econ/ -- drafting economics: the arithmetic of what a draft round
 * costs and yields under the measured cost curve (struct skipper_costs,
 * skipper-policy(3)), shared by the engine and the policy plugins, and the
 * Self-SD adaptive exit rule (adaptive.h). Plain values in, plain values
 * out: no allocation, no state. May include core/skipper/policy.h only (the
 * plugins link this library beside the public header). Called by
 * core/engine/ (lookup sizing, trees beside a draft, the trials' fixed
 * plan) and plugins/ (draft caps, trees, search budgets).
 *
 * All costs are in decode steps (one token through the full model = 1). A
 * draft step with a skip set costs skipper_draft_cost() (policy.h: the one
 * definition, public so that third-party plugins price drafts alike), a pass
 * over n rows verify[n]. A round that drafts k tokens at d steps each
 * verifies the round's input and the k drafts, k + 1 rows; it yields the
 * accepted drafts plus the full model's own token. Plain decoding yields one
 * token per step, so a round pays only while
 *
 *     value = tokens / (k d + verify[k + 1])  >  1,
 *
 * by ECON_FLOOR's margin. With the geometric model (the j-th draft token is
 * accepted with probability a^j) tokens = 1 + a + ... + a^k. On a GPU
 * verify[n] stays near 1 for dozens of rows and the best k is long; on a
 * CPU it grows at once and the best k is short, or 0. */
#ifndef SKIPPER_ECON_H
#define SKIPPER_ECON_H

#include "skipper/policy.h"

/* The value a round must beat: a plain step's 1, plus the per-round work
 * the curve does not see (policy hooks, sampling, bookkeeping). */
#define ECON_FLOOR 1.02

/* verify[rows]; past n_max the last measured slope continues, below 1 row
 * it is 1. */
double econ_verify_cost(const struct skipper_costs *c, int rows);

/* c, measured at a context of c->ctx committed tokens, priced at ctx
 * (never below c->ctx) for a model of n_layer layers, into *out: a pass of
 * n rows costs verify[n] + (ctx - c->ctx) (ctx_row + (n - 1) ctx_extra_row)
 * of c's steps, and every figure is restated in steps at ctx (verify[1]
 * stays 1, step_seconds grows), attention taking what the context adds.
 * out and c may not be the same. */
void econ_costs_at(const struct skipper_costs *c, int n_layer, int ctx, struct skipper_costs *out);

/* 1 + a + ... + a^k (k + 1 at a >= 1, 1 at a <= 0). */
double econ_round_tokens(double a, int k);

/* Of n candidate rounds, round i yielding tokens[i] for cost[i] steps: the
 * 1-based index of the one with the most tokens per step (the first on
 * ties), or 0 when none beats floor. *value gets that rate, or floor. */
int econ_best_ratio(const double *tokens, const double *cost, int n, double floor, double *value);

/* The geometric model's k in [1, k_max] with the largest value for draft
 * step cost d and acceptance a (the smallest k on ties), or 0 when no value
 * exceeds floor. *value (may be NULL) gets the value of the answer, 1 for 0. */
int econ_best_draft(const struct skipper_costs *c, double d, double a, int k_max, double floor, double *value);

/* Extra rows beside a round worth `tokens` expected tokens for `cost`
 * steps over `rows` verified rows: gain[0..n) are the expected extra
 * tokens of candidate rows, best first. Row i is taken while it raises the
 * round's value, gain[i] / (verify[rows + 1] - verify[rows]) > tokens /
 * cost, updating the round as it goes; the count taken is returned. */
int econ_tree_extra(const struct skipper_costs *c, double tokens, double cost, int rows, const double *gain, int n);

/* Widths of a "spine + leaf siblings" tree over draft chain dr (depth j:
 * the chain token and siblings from dr's top-k, all children of chain
 * node j - 1) chosen by econ_tree_extra. The draft's probabilities model
 * acceptance: depth j is reached with the product of the chain
 * probabilities above it, and a sibling of draft probability q there adds
 * reach_j * q expected tokens. Siblings are taken best first across all
 * depths, at most cap[j] at depth j (the method's own width minus one).
 * extra[j] gets the count for depth j; returns the total. d: the draft
 * step's cost. */
int econ_tree_widths(const struct skipper_costs *c, double d, const struct skipper_draft *dr, const int *cap,
                     int *extra);

#endif
