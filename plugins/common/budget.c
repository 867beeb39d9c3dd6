/* Search time budget; see budget.h. */
#include <string.h>

#include "budget.h"

void cm_budget_init(struct cm_budget *b, double share)
{
	*b = (struct cm_budget){ .share = share };
}

int cm_budget_config(struct cm_budget *b, const struct skipper_host *h, void *ctx, const char *key,
                     const char *value)
{
	if (!strcmp(key, "search_share"))
		return h->parse_double(ctx, value, 0.0, 1.0, &b->share);
	return SKIPPER_POLICY_UNKNOWN_KEY;
}

void cm_budget_round(struct cm_budget *b, const struct skipper_costs *c, const struct skipper_verdict *v)
{
	double spent = v->draft_seconds + v->verify_seconds, saved;
	int tokens = v->n_accepted + (v->bonus >= 0);
	if (!c)
		return;
	saved = tokens * c->step_seconds - spent;
	/* the share accrues only while the policy drafts: rounds the guard
	 * keeps plain (no draft) buy no search, so a paused policy costs no
	 * more than plain decoding */
	b->credit += (v->n_drafted > 0 ? b->share * spent : 0.0) + (saved > 0 ? 0.5 * saved : 0.0);
	if (b->est > 0 && b->credit > 2 * b->est)
		b->credit = 2 * b->est;
}

int cm_budget_ready(const struct cm_budget *b, const struct skipper_costs *c)
{
	return !c || b->est <= 0 || b->credit >= b->est;
}

int cm_budget_allow(struct cm_budget *b, const struct skipper_costs *c)
{
	int ok = cm_budget_ready(b, c);
	b->deferred += !ok;
	return ok;
}

void cm_budget_spent(struct cm_budget *b, double seconds)
{
	if (seconds < 0)
		seconds = 0;
	b->credit -= seconds;
	/* a DP's cost moves with the context and the live cells: recent runs
	 * count most */
	b->est = b->runs ? 0.5 * b->est + 0.5 * seconds : seconds;
	b->runs++;
}
