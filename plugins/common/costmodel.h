/* Drafting economics under the measured cost curve (struct skipper_costs,
 * skipper-policy(3)). All costs are in decode steps (one token through the
 * full model = 1). A round that drafts k tokens at d steps each verifies
 * the round's input and the k drafts, k + 1 rows, for verify[k + 1] steps;
 * with the geometric model (the j-th draft token is accepted with
 * probability a^j) it yields 1 + a + ... + a^k tokens, the 1 being the
 * full model's own token. Plain decoding yields one token per step, so
 * drafting pays only while
 *
 *     value(k) = (1 + a + ... + a^k) / (k d + verify[k + 1])  >  1.
 *
 * On a GPU verify[n] stays near 1 for dozens of rows and the best k is
 * long; on a CPU it grows at once and the best k is short, or 0.
 * Pure functions, no allocation. */
#ifndef SKIPCOMMON_COSTMODEL_H
#define SKIPCOMMON_COSTMODEL_H

#include "skipper/policy.h"

/* verify[rows]; past n_max the last measured slope continues (as the
 * engine extrapolates), below 1 row it is 1. */
double cm_verify_cost(const struct skipper_costs *c, int rows);

/* 1 + a + ... + a^k (k + 1 at a >= 1, 1 at a <= 0). */
double cm_round_tokens(double a, int k);

/* The k in [1, k_max] with the largest value(k) (the smallest k on ties),
 * or 0 when no value exceeds floor (1 = one plain step). *value (may be
 * NULL) gets the value of the answer, 1 for 0. */
int cm_best_draft(const struct skipper_costs *c, double d, double a, int k_max, double floor, double *value);

/* Extra rows beside a round worth `tokens` expected tokens for `cost`
 * steps over `rows` verified rows: gain[0..n) are the expected extra
 * tokens of candidate rows, best first. Row i is taken while it raises the
 * round's value, gain[i] / (verify[rows + 1] - verify[rows]) > tokens /
 * cost, updating the round as it goes; the count taken is returned. */
int cm_tree_extra(const struct skipper_costs *c, double tokens, double cost, int rows, const double *gain, int n);

/* Widths of a "spine + leaf siblings" tree over draft chain dr (depth j:
 * the chain token and siblings from dr's top-k, all children of chain
 * node j - 1) chosen by cm_tree_extra. The draft's probabilities model
 * acceptance: depth j is reached with the product of the chain
 * probabilities above it, and a sibling of draft probability q there adds
 * reach_j * q expected tokens. Siblings are taken best first across all
 * depths, at most cap[j] at depth j (the method's own width minus one).
 * extra[j] gets the count for depth j; returns the total. d: the draft
 * step's cost. */
int cm_tree_widths(const struct skipper_costs *c, double d, const struct skipper_draft *dr, const int *cap,
                   int *extra);

#endif
