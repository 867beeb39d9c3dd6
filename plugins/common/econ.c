/* The draft-length rule; see econ.h. */
#include <string.h>

#include "econ/econ.h"
#include "econ.h"

void cm_econ_init(struct cm_econ *e)
{
	*e = (struct cm_econ){ .enabled = 1, .probe_every = CM_ECON_PROBE_MIN, .last_cap = -1 };
	cm_accept_init(&e->acc, CM_ECON_PRIOR, 2.0, CM_ECON_DECAY);
}

int cm_econ_config(struct cm_econ *e, const struct skipper_host *h, void *ctx, const char *key, const char *value)
{
	if (!strcmp(key, "costs"))
		return h->parse_bool(ctx, value, &e->enabled);
	return SKIPPER_POLICY_UNKNOWN_KEY;
}

const struct skipper_costs *cm_econ_costs(struct cm_econ *e, const struct skipper_host *h, void *ctx)
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

int cm_econ_cap(struct cm_econ *e, double d, int k_cap)
{
	int k;
	if (!e->costs || k_cap <= 0)
		return k_cap > 0 ? k_cap : 0; /* no costs, or the engine's cap is 0: nothing to decide */
	k = econ_best_draft(e->costs, d, cm_accept_rate(&e->acc), k_cap, ECON_FLOOR, &e->last_value);
	e->last_d = d;
	if (k > 0) {
		e->plain_run = 0;
		e->probe_every = CM_ECON_PROBE_MIN;
	} else if (++e->plain_run > e->probe_every) {
		/* the estimate only moves with drafted rounds: without a probe a
		 * low one would never be tested again */
		e->plain_run = 0;
		e->probe_every = 2 * e->probe_every < CM_ECON_PROBE_MAX ? 2 * e->probe_every : CM_ECON_PROBE_MAX;
		e->probes++;
		k = k_cap < CM_ECON_PROBE ? k_cap : CM_ECON_PROBE;
	} else {
		e->plain_rounds++;
	}
	return e->last_cap = k;
}

void cm_econ_plan(struct cm_econ *e, const struct skipper_host *h, void *ctx, struct skipper_plan *plan)
{
	const struct skipper_costs *c = cm_econ_costs(e, h, ctx);
	if (!c)
		return;
	plan->max_draft = cm_econ_cap(e, skipper_draft_cost(c, plan->n_layer, plan->skip_attn, plan->skip_mlp),
	                              plan->max_draft);
}

void cm_econ_verdict(struct cm_econ *e, const struct skipper_verdict *v)
{
	cm_accept_update(&e->acc, v->n_accepted, v->n_drafted);
}

void cm_econ_seed(struct cm_econ *e, double a)
{
	cm_accept_seed(&e->acc, a, 4.0);
	e->plain_run = 0;
	e->probe_every = CM_ECON_PROBE_MIN;
}
