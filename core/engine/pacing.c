/* Pacing: drafting never costs more than noise. A guard per draft source
 * compares its recent rounds with plain steps and pauses it when it runs
 * slower; and what lookup's passes really cost, against the measured
 * curve, scales the curve's extra rows (engine_verify_cost). */
#include <math.h>

#include "engine_impl.h"

double engine_clock(const struct skipper_engine *e)
{
	return e->pace.clock ? e->pace.clock(e->pace.clock_ctx) : engine_now();
}

/* Tokens per second of plain steps: the recent plain rounds, or the
 * measured step before there were any; 0 = not known yet. */
static double plain_rate(const struct skipper_engine *e)
{
	if (e->pace.plain_sec > 0)
		return e->pace.plain_tok / e->pace.plain_sec;
	return e->pace.have_costs ? 1.0 / e->pace.costs.step_seconds : 0.0;
}

/* Whether a draft source may draft this round (and one round of its pause
 * served if not). Without a measured plain step there is nothing to
 * compare with: every fifth round is then a plain one until there is. */
int engine_guard_open(struct skipper_engine *e, struct guard *g)
{
	if (g->pause > 0) {
		g->pause--;
		return 0;
	}
	return e->pace.no_guard || plain_rate(e) > 0 || g->rounds % 5 != 4;
}

/* A drafting round of source g committed tok tokens in sec seconds. When
 * the source's recent rounds yield fewer tokens per second than plain steps
 * do, it pauses (8 rounds, doubling while probes keep failing, at most 256,
 * or 32 for lookup) and is probed again afterwards: speculation never costs
 * more than noise.
 *
 * A layer-skip draft is judged over its last few rounds: each one costs
 * model passes. Lookup sizes every proposal by its own acceptance
 * statistics, so its guard only has to catch a systematic loss (a cost
 * curve that no longer holds) and judges it from 16 rounds on, over about
 * its last 20: over fewer, the variance of a few rejected proposals and
 * of the machine's memory speed (on a shared VM, rounds of one size
 * differ by a fifth within seconds) reads as a loss. On the Spec-Bench RAG
 * prompts (Qwen2.5-Coder-1.5B) a window of 4 paused lookup four times a
 * prompt and took its gain from 1.20x to 1.0x, replayed on the real token
 * streams; on the RAG, coding and writing prompts, where lookup gains
 * 5-20 %, a window of 10 from 8 rounds on still paused it 39 times in 27
 * runs (AMD EPYC, 2 threads), this one 15 times, unguarded lookup being
 * no slower. */
static void guard_record(struct skipper_engine *e, struct guard *g, double tok, double sec,
                         struct skipper_run_stats *st)
{
	int lookup = g != &e->pace.guard[GUARD_SKIP];
	double plain = plain_rate(e), keep = lookup ? 0.95 : 0.75;
	g->tok = keep * g->tok + tok;
	g->sec = keep * g->sec + sec;
	g->rounds++;
	if (plain <= 0 || g->rounds < (lookup ? 16 : 4) || e->pace.no_guard)
		return;
	if (g->tok / g->sec < 0.98 * plain) {
		/* lookup costs nothing to propose: short pauses */
		int max = lookup ? 32 : 256;
		g->pause = g->pause_len ? g->pause_len : 8;
		g->pause_len = 2 * g->pause < max ? 2 * g->pause : max;
		g->tok = g->sec = 0;
		g->rounds = 0;
		st->backoffs++;
	} else if (g->rounds >= 8) {
		g->pause_len = 8; /* it pays: a later pause starts short again */
	}
}

/* What the layer-skip drafts delivered lately, as a multiple of plain
 * steps' tokens per second: 1 until their guard has seen a few rounds;
 * without the guard, where a policy drafts whatever it costs, more than
 * any lookup proposal promises. */
double engine_skip_rate(const struct skipper_engine *e)
{
	const struct guard *g = &e->pace.guard[GUARD_SKIP];
	double plain = plain_rate(e);
	if (e->pace.no_guard)
		return HUGE_VAL;
	if (g->rounds < 4 || g->sec <= 0 || plain <= 0)
		return 1.0;
	return g->tok / g->sec / plain;
}

double engine_skip_accept(const struct skipper_engine *e)
{
	return (e->pace.skip_hits + 1.0) / (e->pace.skip_tries + 2.0);
}

double engine_skip_step_cost(const struct skipper_engine *e)
{
	return e->pace.have_costs ? skipper_draft_cost(&e->pace.costs, e->n_layer, e->draft.skip_attn, e->draft.skip_mlp)
	                          : 0.5;
}

/* After a round: the guards and the plain-step rate learn from it. */
void engine_account_round(struct skipper_engine *e, struct round_ctx *r, int drafted, int n_gen0)
{
	double sec = engine_clock(e) - r->t_round;
	int tok = r->n_gen - n_gen0;
	if (drafted == 0) {
		/* a plain step's cost: without a search the policy ran in its
		 * hooks (a DP inside a plain round is not the step's) */
		double p = r->st->t_policy - r->p_round;
		e->pace.plain_tok = 0.75 * e->pace.plain_tok + tok;
		e->pace.plain_sec = 0.75 * e->pace.plain_sec + (sec > p ? sec - p : sec);
		/* a cached curve may come from a busier (or quieter) hour: the
		 * step's seconds follow what plain rounds cost now (at this
		 * context: the measured one's are what the context adds less),
		 * the curve's ratios stay as measured */
		if (e->pace.have_costs && e->pace.plain_tok >= 2) {
			double now = e->pace.plain_sec / e->pace.plain_tok;
			e->pace.base.step_seconds = now * e->pace.base.step_seconds / e->pace.costs.step_seconds;
			e->pace.costs.step_seconds = now;
		}
	} else {
		int g = !r->lookup_only ? GUARD_SKIP : e->lk.corpus ? GUARD_CORPUS : e->lk.from_history ? GUARD_HISTORY
		                                                                                         : GUARD_LOOKUP;
		guard_record(e, &e->pace.guard[g], tok, sec, r->st);
	}
	engine_learn_rows(e, r->lookup_only ? drafted + 1 : 0, sec);
}

/* Weight of the prior (the curve holds) in the row scale, in steps. */
#define ROW_PRIOR 0.1

/* Cost of a pass over n rows, in decode steps: the curve, its part above
 * one step scaled by what such passes have cost lately against it. The
 * curve was measured once, at a short context on a quiet machine; a long
 * prompt (attention grows with it) or a busy core makes each extra row
 * dearer than that, and the scale follows. */
double engine_verify_cost(const struct skipper_engine *e, int n)
{
	/* without the guard nothing timed steers drafting: the curve alone,
	 * so that a run on a loaded machine drafts as it would on a quiet one */
	double scale = e->pace.no_guard ? 1.0 : (e->pace.row_seen + ROW_PRIOR) / (e->pace.row_model + ROW_PRIOR);
	return 1.0 + scale * (engine_curve(e, n) - 1.0);
}

void engine_learn_rows(struct skipper_engine *e, int rows, double sec)
{
	e->pace.row_seen *= 0.97;
	e->pace.row_model *= 0.97;
	/* a step: what plain rounds cost lately, else the curve's */
	double step = e->pace.plain_tok > 0 ? e->pace.plain_sec / e->pace.plain_tok : e->pace.have_costs ? e->pace.costs.step_seconds : 0;
	if (rows < 2 || step <= 0 || sec <= 0)
		return;
	double seen = sec / step - 1.0;
	e->pace.row_seen += seen > 0 ? seen : 0;
	e->pace.row_model += engine_curve(e, rows) - 1.0;
}
