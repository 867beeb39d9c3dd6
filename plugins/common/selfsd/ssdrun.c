#include <string.h>

#include "ssdrun.h"

int ssd_plan(const struct skipper_host *h, void *ctx, struct skipper_plan *plan, int n_layer, const uint8_t *attn,
             const uint8_t *mlp, int k_max, int prof_max, struct cost_rule *econ)
{
	if (plan->n_layer != n_layer) {
		h->set_error(ctx, "plan for %d layers, profile has %d", plan->n_layer, n_layer);
		return SKIPPER_POLICY_ERROR;
	}
	memcpy(plan->skip_attn, attn, (size_t)n_layer);
	memcpy(plan->skip_mlp, mlp, (size_t)n_layer);
	if (plan->max_draft > k_max)
		plan->max_draft = k_max;
	if (plan->max_draft > prof_max)
		plan->max_draft = prof_max; /* calibration found plain decoding faster */
	cost_rule_plan(econ, h, ctx, plan);
	return SKIPPER_POLICY_OK;
}

int ssd_should_exit(const struct ssd_keys *k, const struct econ_adaptive *ad, const struct skipper_step *step)
{
	double gamma = k->adaptive ? ad->gamma : k->threshold;
	return step->top_probs[0] < gamma ? SKIPPER_DRAFT_STOP : SKIPPER_DRAFT_CONTINUE;
}

void ssd_on_accept(const struct ssd_keys *k, struct econ_adaptive *ad, struct cost_rule *econ,
                   const struct skipper_verdict *v)
{
	if (k->adaptive)
		econ_adaptive_update(ad, ad->rounds == 0, v->n_accepted, v->n_drafted);
	cost_rule_verdict(econ, v);
}
