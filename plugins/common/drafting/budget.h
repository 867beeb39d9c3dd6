/* Time budget of a policy's own search work (SWIFT's optimisation steps,
 * CLaSp's and KnapSpec's DPs). The search is an investment paid in decoding
 * time; it may spend
 *
 *     share x the decoding time so far  +  1/2 x the time drafting saved (net),
 *
 * kept as a credit in seconds: every verdict of a round in which the policy
 * drafted (or, while it is `seeking`, i.e. has nothing to draft with yet,
 * every round) adds share x (draft + verify seconds of the round), and every
 * drafting round half of what it saved, (committed tokens x the plain step's
 * seconds) - (draft + verify seconds), negative when it lost time; every run
 * subtracts its measured seconds (host->now around it).
 *
 * A run is sized in `units` of work chosen by the policy: the seconds the
 * cost curve predicts for it (the three search policies: a DP's size moves
 * with its rows and cells), or 1 for runs of one size; the budget learns the
 * seconds per unit from the runs (recent runs count most). A run may start when the
 * credit covers units x that rate. Before any run the rate is the prior
 * (search_budget_prior; 1 for predicted seconds), or unknown, and then the first
 * run may always start. A run that does not fit waits, which thins a search
 * (SWIFT) or stretches an interval (CLaSp, KnapSpec), so the search's share
 * of the time stays near `share` unless drafting earns more; while the
 * engine's guard keeps the policy's rounds plain, the search waits too. The
 * credit is capped at two runs of the last size asked, so a long quiet
 * stretch does not pay for a burst.
 *
 * Without costs (nothing to price a plain step with) every run is ready:
 * the method's own schedule. Plain value type inside the policy's state. */
#ifndef COMMON_DRAFTING_BUDGET_H
#define COMMON_DRAFTING_BUDGET_H

#include "common/keys/keys.h"
#include "skipper/policy.h"

struct search_budget {
	double share;      /* the search_share key */
	double credit;     /* seconds the search may still spend */
	double rate;       /* expected seconds per unit of work (0 = unknown) */
	double want;       /* units of the last run asked for */
	int runs, deferred;
};

/* A budget at the search_share key's default. */
void search_budget_init(struct search_budget *b);

/* Seconds per unit expected before any run is measured (the first run then
 * waits for its credit like any other). */
void search_budget_prior(struct search_budget *b, double rate);

/* The key "search_share = F" (0 .. 1): keys_config(search_budget_keys, &b, ...). */
extern const struct key_spec search_budget_keys[];

/* on_accept: the round's credit (nothing without costs). seeking: the
 * policy has nothing to draft with yet, so its plain rounds pay the share
 * towards its first search. */
void search_budget_round(struct search_budget *b, const struct skipper_costs *c, const struct skipper_verdict *v,
                         int seeking);

/* Whether a run of `units` fits now (always without costs); the size is
 * kept as the one the credit cap counts in. */
int search_budget_ready(struct search_budget *b, const struct skipper_costs *c, double units);

/* search_budget_ready, counting a refusal in b->deferred. */
int search_budget_allow(struct search_budget *b, const struct skipper_costs *c, double units);

/* A run of `units` took `seconds`. */
void search_budget_spent(struct search_budget *b, double seconds, double units);

#endif
