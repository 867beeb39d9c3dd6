/* The draft-length rule; see costrule.h. */
#include "costrule.h"

void cost_rule_init(struct cost_rule *e)
{
	*e = (struct cost_rule){ .probe_every = COST_RULE_PROBE_MIN, .last_cap = -1 };
	keys_defaults(cost_rule_keys, e);
	accept_est_init(&e->acc, COST_RULE_PRIOR, 2.0, COST_RULE_DECAY);
}

const struct key_spec cost_rule_keys[] = {
	{ "costs", KEY_BOOL, offsetof(struct cost_rule, enabled), 1, .help = "size drafts by the measured cost curve" },
	{ NULL },
};

const struct skipper_costs *cost_rule_costs(struct cost_rule *e, const struct skipper_host *h, void *ctx)
{
	/* a configuration check has no model to measure; a failure is final
	 * (the host keeps its answer until destroy) and leaves the method's
	 * own behaviour */
	if (!e->asked && e->enabled && h->n_layer > 0) {
		e->asked = 1;
		if (SKIPPER_HOST_HAS(h, costs) && h->costs)
			e->costs = h->costs(ctx);
	}
	return e->costs;
}

int cost_rule_cap(struct cost_rule *e, double d, int k_cap)
{
	int k;
	if (!e->costs || k_cap <= 0)
		return k_cap > 0 ? k_cap : 0; /* no costs, or the engine's cap is 0: nothing to decide */
	k = econ_best_draft(e->costs, d, accept_est_rate(&e->acc), k_cap, ECON_FLOOR, &e->last_value);
	e->last_d = d;
	if (k > 0) {
		e->plain_run = 0;
		e->probe_every = COST_RULE_PROBE_MIN;
	} else if (++e->plain_run > e->probe_every) {
		/* the estimate only moves with drafted rounds: without a probe a
		 * low one would never be tested again */
		e->plain_run = 0;
		e->probe_every = 2 * e->probe_every < COST_RULE_PROBE_MAX ? 2 * e->probe_every : COST_RULE_PROBE_MAX;
		e->probes++;
		k = k_cap < COST_RULE_PROBE ? k_cap : COST_RULE_PROBE;
	} else {
		e->plain_rounds++;
	}
	return e->last_cap = k;
}

void cost_rule_plan(struct cost_rule *e, const struct skipper_host *h, void *ctx, struct skipper_plan *plan)
{
	const struct skipper_costs *c = cost_rule_costs(e, h, ctx);
	if (!c)
		return;
	plan->max_draft = cost_rule_cap(e, skipper_draft_cost(c, plan->n_layer, plan->skip_attn, plan->skip_mlp),
	                                plan->max_draft);
}

void cost_rule_verdict(struct cost_rule *e, const struct skipper_verdict *v)
{
	accept_est_update(&e->acc, v->n_accepted, v->n_drafted);
}

void cost_rule_seed(struct cost_rule *e, double a)
{
	accept_est_seed(&e->acc, a, 4.0);
	e->plain_run = 0;
	e->probe_every = COST_RULE_PROBE_MIN;
}
