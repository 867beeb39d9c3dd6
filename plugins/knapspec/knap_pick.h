/* KnapSpec's candidate scoring and grid search (knapspec.md §3.6,
 * Algorithm 2): every live terminal cell c >= 1 of a DP run is a skip set;
 * its acceptance estimate alpha_c is the share of the r rows whose LM-head
 * argmax from the cell's state equals the full model's, and the pair
 * (c, gamma), gamma = 1..D, with the largest Tokens-per-Time wins (ties: the
 * lowest c, then the lowest gamma, as an ascending scan finds them).
 *
 * Exact pruning: TPT grows with alpha, so alpha = 1 bounds a cell's best
 * TPT by its draft time alone. Cells are replayed through the head in
 * batches, highest bound first, and the scan stops once no remaining bound
 * reaches the best TPT found: the choice is the full grid's, but cells that
 * cannot win cost no LM-head rows.
 *
 * Step times. The paper's model: a draft step costs its executed items, a
 * verification one full forward L (t_attn + t_mlp) for any gamma. With the
 * host's cost curve (costs != NULL) the parts that model lacks come from
 * the curve: every step also pays the head (embedding, final norm, LM
 * head: t_head for a full step, t_draft_head for a draft step), and a
 * verification over gamma + 1 rows costs verify[gamma + 1] plain steps at
 * this context, t_step = t_head + L (t_attn + t_mlp). The latency model
 * still gives the context-dependent attention time.
 *
 * Ownership: scratch is allocated and freed inside; the DP's state buffer
 * dp->batch is reused as the head's input. */
#ifndef SKIPPER_KNAP_PICK_H
#define SKIPPER_KNAP_PICK_H

#include <stdint.h>

#include "knap_dp.h"
#include "skipper/policy.h"

struct knap_pick {
	/* in */
	double t_attn, t_mlp;  /* per sub-layer at the current context */
	int n_layer, max_draft;
	const int32_t *y;      /* [r] the full model's argmax tokens */
	const struct skipper_costs *costs; /* NULL: the paper's model */
	double t_head, t_draft_head;       /* seconds outside the layers (0 without costs) */
	/* out */
	int c, gamma;          /* winner; c = -1 when no cell is live */
	double tpt, alpha;
	double t_step, t_draft; /* a plain step at this context; the winner's draft step */
	int n_live, n_replayed; /* live cells, and those that went through the head */
};

/* Host status (head_argmax failures, SKIPPER_POLICY_NOMEM). */
int knap_pick_run(struct knap_dp *dp, const struct skipper_host *h, void *ctx, struct knap_pick *p);

#endif
