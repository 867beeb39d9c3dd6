/* Search time budget; see budget.h. */
#include "budget.h"

const struct key_spec search_budget_keys[] = {
	{ "search_share", KEY_DOUBLE, offsetof(struct search_budget, share), 0.02, 0.0, 1.0, "F",
	  "share of the drafting rounds' time the search may use beyond half of\n"
	  "the net time drafting saved; needs costs" },
	{ NULL },
};

void search_budget_init(struct search_budget *b)
{
	*b = (struct search_budget){ 0 };
	keys_defaults(search_budget_keys, b);
}

void search_budget_prior(struct search_budget *b, double rate)
{
	if (b->runs == 0 && rate > 0)
		b->rate = rate;
}

void search_budget_round(struct search_budget *b, const struct skipper_costs *c, const struct skipper_verdict *v,
                         int seeking)
{
	double spent = v->draft_seconds + v->verify_seconds, saved, cap = 2 * b->rate * b->want;
	int tokens = v->n_accepted + (v->bonus >= 0);
	if (!c)
		return;
	saved = tokens * c->step_seconds - spent;
	/* the share accrues only while the policy drafts or seeks: rounds the
	 * guard keeps plain (no draft) buy no search, so a paused policy
	 * costs no more than plain decoding. Drafting rounds add half of
	 * what they saved and take back half of what they lost: the search
	 * lives on drafting's net gain, not on its lucky rounds. */
	b->credit += (v->n_drafted > 0 || seeking ? b->share * spent : 0.0) + (v->n_drafted > 0 ? 0.5 * saved : 0.0);
	if (cap > 0 && b->credit > cap)
		b->credit = cap;
}

int search_budget_ready(struct search_budget *b, const struct skipper_costs *c, double units)
{
	b->want = units;
	return !c || b->rate <= 0 || b->credit >= b->rate * units;
}

int search_budget_allow(struct search_budget *b, const struct skipper_costs *c, double units)
{
	int ok = search_budget_ready(b, c, units);
	b->deferred += !ok;
	return ok;
}

void search_budget_spent(struct search_budget *b, double seconds, double units)
{
	double rate;
	if (seconds < 0)
		seconds = 0;
	b->credit -= seconds;
	if (!(units > 0))
		return;
	rate = seconds / units;
	/* the rate moves with the machine's load and the policy's prediction
	 * error: recent runs count most */
	b->rate = b->runs ? 0.5 * b->rate + 0.5 * rate : rate;
	b->runs++;
}
