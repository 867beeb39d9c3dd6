/* plugins/common/drafting, against values computed by hand: the
 * online acceptance estimate, the draft-length rule with its back-off and
 * probes, and the search time budget (core/econ's arithmetic under them has
 * its own test, t-econ). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/drafting/accept.h"
#include "common/drafting/budget.h"
#include "common/drafting/costrule.h"
#include "tap.h"
#include "test-costs.h"

static void accept(void)
{
	struct accept_est e;
	accept_est_init(&e, 0.8, 2, 0.9);
	ok(NEAR(accept_est_rate(&e), 0.8), "prior 0.8");
	accept_est_update(&e, 3, 4); /* s 1.44 + 3, f 0.36 + 1 */
	ok(NEAR(accept_est_rate(&e), 4.44 / 5.8), "3 of 4: 4.44 / 5.8 = 0.7655");
	accept_est_update(&e, 2, 2); /* s 3.996 + 2, f 1.224: all accepted, no rejection seen */
	ok(NEAR(accept_est_rate(&e), 5.996 / 7.22), "2 of 2: 5.996 / 7.22 = 0.8305");
	accept_est_update(&e, 0, 0);
	ok(NEAR(accept_est_rate(&e), 5.996 / 7.22), "nothing drafted: no update");
	accept_est_update(&e, 0, 3); /* s 5.3964, f 1.1016 + 1 */
	ok(NEAR(accept_est_rate(&e), 5.3964 / 7.498), "0 of 3: one rejection, 0.7197");
	accept_est_seed(&e, 0.5, 4);
	ok(NEAR(accept_est_rate(&e), 0.5) && NEAR(e.s + e.f, 4), "seed replaces the counts");
}

static void verdict(struct cost_rule *e, int acc, int drafted)
{
	struct skipper_verdict v = { .n_drafted = drafted, .n_accepted = acc, .bonus = 1 };
	cost_rule_verdict(e, &v);
}

static void econ(void)
{
	struct skipper_costs steep, flat;
	struct cost_rule e;
	int caps[60], probes = 0, first = -1, second = -1;

	cpu_qwen(&steep);
	linear(&flat, 0.002, 32);

	cost_rule_init(&e);
	is_int(cost_rule_cap(&e, 0.55, 12), 12, "no costs: the method's cap");
	is_int(cost_rule_cap(&e, 0.55, 0), 0, "no costs, cap 0: 0");

	/* steep curve, acceptance measured at 0.5: plain rounds, a probe
	 * after PROBE_MIN of them, the next after twice as many more */
	e.costs = &steep;
	e.asked = 1;
	for (int i = 0; i < 6; i++)
		verdict(&e, 1, 2);
	ok(accept_est_rate(&e.acc) < 0.55, "acceptance learnt: %.3f", accept_est_rate(&e.acc));
	for (int r = 0; r < 60; r++) {
		caps[r] = cost_rule_cap(&e, 0.55, 12);
		if (caps[r]) {
			probes++;
			if (first < 0)
				first = r;
			else if (second < 0)
				second = r;
		}
	}
	ok(probes == 2 && first == COST_RULE_PROBE_MIN && second == 3 * COST_RULE_PROBE_MIN + 1 &&
	       caps[first] == COST_RULE_PROBE,
	   "steep curve, low acceptance: plain, probes of %d tokens at rounds %d and %d (%d probes, at %d, %d)",
	   COST_RULE_PROBE, COST_RULE_PROBE_MIN, 3 * COST_RULE_PROBE_MIN + 1, probes, first, second);
	is_int(cost_rule_cap(&e, 0.55, 0), 0, "an engine cap of 0 stays 0");

	/* the search seeds a good new mask: drafting resumes at once */
	cost_rule_seed(&e, 0.95);
	is_int(cost_rule_cap(&e, 0.55, 12), 3, "seeded 0.95 on the steep curve: k = 3");
	is_int(e.probe_every, COST_RULE_PROBE_MIN, "probing starts over");

	/* flat curve, high acceptance: long drafts, up to the method's cap */
	e.costs = &flat;
	for (int i = 0; i < 20; i++)
		verdict(&e, 8, 8);
	int k = cost_rule_cap(&e, 0.1, 25);
	ok(k >= 20, "flat curve, acceptance %.3f: a long draft (%d)", accept_est_rate(&e.acc), k);
	is_int(cost_rule_cap(&e, 0.1, 12), 12, "... as long as the method allows");

	/* plan: the mask is priced with skipper_draft_cost (10 layers: draft_head
	 * 0.1 + 10 x 0.03 with nothing skipped = 0.4; all skipped: 0.1) */
	uint8_t none[10] = { 0 }, all[10];
	memset(all, 1, sizeof all);
	struct skipper_plan plan = { .n_layer = 10, .skip_attn = all, .skip_mlp = all, .max_draft = 12 };
	struct skipper_host h = { .n_layer = 10 };
	cost_rule_plan(&e, &h, NULL, &plan);
	ok(NEAR(e.last_d, 0.1) && plan.max_draft == 12, "all skipped: d = draft_head 0.1");
	plan.skip_attn = plan.skip_mlp = none;
	plan.max_draft = 12;
	cost_rule_plan(&e, &h, NULL, &plan);
	ok(NEAR(e.last_d, 0.4), "nothing skipped: d = 0.1 + 10 x (0.01 + 0.02) = 0.4 (%.3f)", e.last_d);

	/* costs = false: never asks the host */
	struct cost_rule off;
	cost_rule_init(&off);
	off.enabled = 0;
	ok(cost_rule_costs(&off, &h, NULL) == NULL && !off.asked, "costs = false: the host is not asked");
}

static void budget(void)
{
	struct skipper_costs c;
	struct search_budget b;
	/* binary fractions, so the sums below are exact */
	struct skipper_verdict even = { .n_drafted = 2, .n_accepted = 1, .bonus = 1, .draft_seconds = 0.0625,
	                                .verify_seconds = 0.1875 };
	struct skipper_verdict gain = even;
	struct skipper_verdict plain = { .n_drafted = 0, .bonus = 1, .verify_seconds = 0.125 };
	int rounds = 0;

	linear(&c, 0.25, 32);
	c.step_seconds = 0.125;
	search_budget_init(&b);
	b.share = 0.25;
	ok(search_budget_ready(&b, NULL, 1) && search_budget_ready(&b, &c, 1), "no costs, or no run measured yet: ready");
	search_budget_spent(&b, 0.5, 1);
	ok(!search_budget_ready(&b, &c, 1) && search_budget_ready(&b, NULL, 1),
	   "a run of 0.5 s must be earned (without costs: never)");
	/* 2 tokens in 0.25 s = plain speed: 0.25 x 0.25 = 0.0625 s credit per
	 * round; from -0.5 to the expected 0.5: 16 rounds */
	while (!search_budget_allow(&b, &c, 1) && rounds < 100) {
		search_budget_round(&b, &c, &even, 0);
		rounds++;
	}
	ok(rounds == 16 && b.deferred == 16, "drafting at plain speed: the share alone pays the run back in 16 rounds (%d)",
	   rounds);
	/* 4 tokens in 0.25 s saved 0.25 s: 0.0625 + 0.125 per round, 3 rounds */
	gain.n_accepted = 3;
	search_budget_spent(&b, 0.5, 1);
	rounds = 0;
	while (!search_budget_ready(&b, &c, 1) && rounds < 100) {
		search_budget_round(&b, &c, &gain, 0);
		rounds++;
	}
	is_int(rounds, 3, "drafting that saves time pays for the next run sooner");
	{
		/* a plain round (the guard paused the policy's drafts) buys nothing */
		struct search_budget p;
		search_budget_init(&p);
		p.share = 0.25;
		search_budget_spent(&p, 0.5, 1);
		for (int i = 0; i < 100; i++)
			search_budget_round(&p, &c, &plain, 0);
		ok(p.credit == -0.5 && !search_budget_ready(&p, &c, 1), "rounds without drafts earn no search time");
		/* a drafting round that lost time: 1 token in 0.25 s lost 0.125 s;
		 * half of it comes back off the share's 0.0625 */
		struct skipper_verdict lost = { .n_drafted = 2, .n_accepted = 0, .bonus = 1, .draft_seconds = 0.0625,
		                                .verify_seconds = 0.1875 };
		search_budget_round(&p, &c, &lost, 0);
		ok(p.credit == -0.5, "a losing drafting round gives half its loss back (%.4f)", p.credit);
	}
	for (int i = 0; i < 50; i++)
		search_budget_round(&b, &c, &gain, 0);
	ok(b.credit == 2 * b.rate, "the credit is capped at two runs (%.3f, rate %.3f)", b.credit, b.rate);
	search_budget_spent(&b, 1.0, 1); /* a slow run: rate 0.75, credit 0 */
	ok(b.rate == 0.75 && !search_budget_ready(&b, &c, 1), "the expected run time follows the runs (%.3f)", b.rate);
	{
		/* a run sized in predicted seconds with a prior of 1: the first
		 * waits; a seeking policy's plain rounds pay for it (0.25 x
		 * 0.125 s a round: 2 s need 64 rounds) */
		struct search_budget s;
		search_budget_init(&s);
		s.share = 0.25;
		search_budget_prior(&s, 1.0);
		rounds = 0;
		while (!search_budget_allow(&s, &c, 2.0) && rounds < 200) {
			search_budget_round(&s, &c, &plain, 1);
			rounds++;
		}
		is_int(rounds, 64, "the first run waits; a seeking policy's plain rounds pay the share towards it");
		ok(search_budget_ready(&s, NULL, 2.0), "without costs the first run is ready at once");
		/* it took twice the prediction: the next, 1 s predicted, needs 2 s */
		search_budget_spent(&s, 4.0, 2.0);
		s.credit = 1.5;
		ok(s.rate == 2.0 && !search_budget_ready(&s, &c, 1.0), "predictions are corrected by the measured rate");
		s.credit = 2.0;
		ok(search_budget_ready(&s, &c, 1.0), "a smaller predicted run fits sooner");
		search_budget_prior(&s, 1.0);
		ok(s.rate == 2.0, "a prior does not replace a measured rate");
	}
}

int main(void)
{
	accept();
	econ();
	budget();
	return tap_done();
}
