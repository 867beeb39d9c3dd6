/* The draft-length rule every drafting policy applies in select_draft, on
 * top of its own cap and inside which its own exit rule still decides:
 *
 *   cap = econ_best_draft(costs, d, a, method cap, ECON_FLOOR)
 *
 * with d the round's draft step cost (skipper_draft_cost of its mask) and a
 * the online acceptance estimate (accept.h) fed by every verdict. When no
 * draft length beats a plain step the round is plain (max_draft = 0); after
 * probe_every such rounds one probe round drafts up to COST_RULE_PROBE tokens
 * to measure acceptance again, and probe_every doubles (16 .. 128) until
 * drafting pays again. A policy whose search finds a new mask re-seeds the
 * estimate with the search's own score (cost_rule_seed), so a better mask is
 * tried at once.
 *
 * The costs come from host->costs (ABI minor 1), asked once; without them
 * (an older host, a mock, no model) or with the policy's key costs = false
 * every call returns the method's own cap: the paper's behaviour.
 * Plain value type inside the policy's state. */
#ifndef COMMON_DRAFTING_COSTRULE_H
#define COMMON_DRAFTING_COSTRULE_H

#include "accept.h"
#include "common/keys/keys.h"
#include "econ/econ.h"
#include "skipper/policy.h"

#define COST_RULE_PROBE 1      /* draft tokens of a probe round: the first token's acceptance decides
                                whether any length pays, and one costs half of two */
#define COST_RULE_PROBE_MIN 16 /* plain rounds before the first probe */
#define COST_RULE_PROBE_MAX 128
#define COST_RULE_PRIOR 0.8    /* acceptance before any verdict, held with the weight of 2 tokens */
#define COST_RULE_DECAY 0.9

struct cost_rule {
	int enabled;                       /* the costs key; 1 by default */
	int asked;                         /* host->costs was asked */
	const struct skipper_costs *costs; /* NULL: the method's own caps */
	struct accept_est acc;
	int plain_run, probe_every;
	/* the last decision, for logs and tests */
	int last_cap;
	double last_value, last_d;
	int plain_rounds, probes;          /* totals since init */
};

void cost_rule_init(struct cost_rule *e);

/* The key "costs = BOOL" (default true) of every policy that applies the
 * rule: keys_config(cost_rule_keys, &e, ...). cost_rule_init sets its
 * default. */
extern const struct key_spec cost_rule_keys[];

/* The costs (asked of the host on the first call with a model), or NULL. */
const struct skipper_costs *cost_rule_costs(struct cost_rule *e, const struct skipper_host *h, void *ctx);

/* This round's cap: k_cap (the method's cap, already <= the engine's)
 * when there are no costs; else the rule above for draft step cost d. */
int cost_rule_cap(struct cost_rule *e, double d, int k_cap);

/* select_draft's last step: plan's mask priced by skipper_draft_cost and
 * plan->max_draft lowered to cost_rule_cap. */
void cost_rule_plan(struct cost_rule *e, const struct skipper_host *h, void *ctx, struct skipper_plan *plan);

/* on_accept: the acceptance estimate learns from the policy's own tokens. */
void cost_rule_verdict(struct cost_rule *e, const struct skipper_verdict *v);

/* A new mask scored a by the policy's search: the estimate restarts there
 * (weight of 4 tokens) and probing starts over. */
void cost_rule_seed(struct cost_rule *e, double a);

#endif
