/* `swift`: SWIFT on-the-fly self-speculative decoding (swift.md). While
 * decoding, after every verification (once a request has generated more
 * than gamma+1 tokens) one candidate skip set is scored by a teacher-forced
 * draft pass over the request's first gamma+1 generated tokens
 * (host->score_mask, scratch KV over the prompt prefix): matchness = share
 * of positions where the draft's argmax is the generated token. The best
 * set drafts; the search (swift_search.c) stops at matchness > max_score,
 * after max_tol steps without improvement or after max_steps, and its state
 * lives as long as the policy, across requests. Drafting stops when the
 * chain token's raw probability falls below threshold; each depth is
 * widened to its top-k_j alternatives by confidence and verified as a
 * "spine + leaf siblings" tree.
 *
 * Where verification is not free (the host's cost curve, costs = true) the
 * paper's GPU settings become caps: the draft length is the one that
 * maximises expected tokens per step for the measured acceptance (none when
 * no length beats a plain step; probes later, and at once when the search
 * finds a better set), each depth keeps only the k_j - 1 siblings whose
 * expected gain pays for their verification row (on a CPU mostly none: a
 * chain), and the opt steps run only while the search's time stays within
 * search_share of decoding time plus half of what drafting saved
 * (plugins/common/drafting/: costrule.h, budget.h). See skipper-policy-swift(5). */
#include <stdlib.h>
#include <string.h>

#include "common/drafting/budget.h"
#include "common/drafting/costrule.h"
#include "common/drafting/spine.h"
#include "common/keys/keys.h"
#include "econ/econ.h"
#include "skipper/policy.h"
#include "swift_search.h"

#define SWIFT_MAX_DRAFT 32
#define SWIFT_ALPHA_WINDOW 50

struct swift {
	const struct skipper_host *host;
	void *ctx;

	/* configuration */
	double ratio;         /* r */
	int gamma;            /* matchness window */
	int max_draft;        /* N_D */
	double threshold;     /* epsilon_stop */
	int widths_code;      /* 1: [code] greedy widths 10/8/5/3 */
	int tree;             /* 0: verify the chain only */
	double rearm;         /* re-arm when the rolling alpha < this (0 = never) */
	struct swift_search s;

	int L;
	uint8_t *attn, *mlp;  /* masks of S* */
	struct cost_rule econ;  /* draft length and tree width by the cost curve */
	struct search_budget budget; /* the opt steps' time */

	/* request */
	int n_prompt;
	int32_t *argmax;      /* [gamma + 1] */
	/* rolling alpha over the last rounds since the search stopped */
	int win_acc[SWIFT_ALPHA_WINDOW], win_drf[SWIFT_ALPHA_WINDOW], win_n, win_i;
	int was_optimizing;   /* the search ran at the previous round */
	int alpha_high;       /* the rolling alpha reached rearm since the search stopped */

	/* stats of the request */
	int steps, rearms, deferred0, plain0, probes0;
	double opt_seconds;
};

#define SX(member) offsetof(struct swift, member)
static const struct key_spec swift_keys[] = {
	{ "skip_ratio", KEY_DOUBLE, SX(ratio), 0.45, 0, 1, "R", "share of the 2(N-2) sub-layers skipped" },
	{ "gamma", KEY_INT, SX(gamma), 32, 1, 1024, "G", "generated tokens scored per opt step" },
	{ "max_draft", KEY_INT, SX(max_draft), 25, 1, SWIFT_MAX_DRAFT, "N", "draft cap N_D" },
	{ "threshold", KEY_DOUBLE, SX(threshold), 0.8, 0, 1, "E", "stop drafting when the chain token's prob < E" },
	{ "max_steps", KEY_INT, SX(s.max_steps), 1000, 0, 1000000, "S", "optimisation steps at most" },
	{ "bo_interval", KEY_INT, SX(s.beta), 25, 1, 1000000, "B", "every B-th step is a GP-UCB proposal" },
	{ "bayes", KEY_BOOL, SX(s.bayes), 1, .help = "use the GP proposals" },
	{ "bo_candidates", KEY_INT, SX(s.n_cand), 10000, 1, 10000000, "N", "random points for the UCB maximisation" },
	{ "gp_window", KEY_INT, SX(s.gp_window), 256, 2, 4096, "N", "newest observations the GP is fitted on" },
	{ "kappa", KEY_DOUBLE, SX(s.kappa), 2.5, 0, 100, "K", "UCB exploration weight" },
	{ "max_tol", KEY_INT, SX(s.max_tol), 300, 0, 1000000, "T", "stop after T steps without improvement" },
	{ "max_score", KEY_DOUBLE, SX(s.max_score), 0.95, 0, 1, "M", "stop when matchness exceeds M" },
	{ "rearm", KEY_DOUBLE, SX(rearm), 0.8, 0, 1, "A", "optimise again when the rolling alpha < A; 0 = never" },
	{ "tree", KEY_BOOL, SX(tree), 1, .help = "dynamic top-k tree verification" },
	{ "widths", KEY_CHOICE, SX(widths_code), 0, .value = "paper|code",
	  .help = "tree widths 10/5/3/1 (paper) or 10/8/5/3" },
	{ NULL },
};

static int sw_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct swift *w = calloc(1, sizeof *w);
	if (!w)
		return SKIPPER_POLICY_NOMEM;
	w->host = host;
	w->ctx = ctx;
	keys_defaults(swift_keys, w);
	w->s.noise = 1e-2;
	cost_rule_init(&w->econ);
	search_budget_init(&w->budget);
	*state = w;
	return SKIPPER_POLICY_OK;
}

static void sw_destroy(void *state)
{
	struct swift *w = state;
	if (!w)
		return;
	swift_search_free(&w->s);
	free(w->attn);
	free(w->mlp);
	free(w->argmax);
	free(w);
}

static int sw_config(void *state, const char *key, const char *value)
{
	struct swift *w = state;
	int rc = keys_config(swift_keys, w, w->host, w->ctx, key, value);
	if (rc == SKIPPER_POLICY_UNKNOWN_KEY)
		rc = keys_config(cost_rule_keys, &w->econ, w->host, w->ctx, key, value);
	return rc == SKIPPER_POLICY_UNKNOWN_KEY ? keys_config(search_budget_keys, &w->budget, w->host, w->ctx, key, value)
	                                        : rc;
}

static int sw_config_complete(void *state)
{
	struct swift *w = state;
	const struct skipper_host *h = w->host;
	int rc;

	w->L = h->n_layer;
	if (w->L <= 0)
		return SKIPPER_POLICY_OK;
	if (w->L < 3) {
		h->set_error(w->ctx, "swift needs at least 3 layers (blocks 0 and N-1 are never skipped)");
		return SKIPPER_POLICY_ERROR;
	}
	h->rng_seed(w->ctx, &w->s.rng, 0);
	if ((rc = swift_search_init(&w->s, w->L, w->ratio, h->rng_u64(w->ctx, &w->s.rng))))
		return rc;
	if (w->s.n_skip < 1) {
		h->set_error(w->ctx, "skip_ratio %.3g of %d sub-layers skips none", w->ratio, w->s.n_slots);
		return SKIPPER_POLICY_ERROR;
	}
	w->attn = calloc((size_t)w->L, 1);
	w->mlp = calloc((size_t)w->L, 1);
	w->argmax = malloc((size_t)(w->gamma + 1) * sizeof *w->argmax);
	if (!w->attn || !w->mlp || !w->argmax)
		return SKIPPER_POLICY_NOMEM;
	return SKIPPER_POLICY_OK;
}

static int sw_begin(void *state, const struct skipper_request *req)
{
	struct swift *w = state;
	w->n_prompt = req->n_prompt;
	w->steps = w->rearms = 0;
	w->opt_seconds = 0;
	w->deferred0 = w->budget.deferred;
	w->plain0 = w->econ.plain_rounds;
	w->probes0 = w->econ.probes;
	/* with costs, even the first step waits for its credit */
	if (cost_rule_costs(&w->econ, w->host, w->ctx))
		search_budget_prior(&w->budget, 1.0);
	return SKIPPER_POLICY_OK;
}

/* An optimisation step's seconds by the cost curve (the budget's units):
 * at most one full pass over the gamma + 1 scored tokens; 1 without costs. */
static double opt_predict(const struct swift *w)
{
	const struct skipper_costs *cs = w->econ.costs;
	return cs ? cs->step_seconds * econ_verify_cost(cs, w->gamma + 1) : 1.0;
}

static int sw_select_draft(void *state, struct skipper_plan *plan)
{
	struct swift *w = state;
	if (plan->n_layer != w->L) {
		w->host->set_error(w->ctx, "select_draft: plan for %d layers, policy has %d", plan->n_layer, w->L);
		return SKIPPER_POLICY_ERROR;
	}
	swift_slots_to_masks(&w->s, w->s.best, plan->skip_attn, plan->skip_mlp);
	if (plan->max_draft > w->max_draft)
		plan->max_draft = w->max_draft;
	cost_rule_plan(&w->econ, w->host, w->ctx, plan);
	return SKIPPER_POLICY_OK;
}

static int sw_should_exit(void *state, const struct skipper_step *step)
{
	struct swift *w = state;
	return step->prob < w->threshold ? SKIPPER_DRAFT_STOP : SKIPPER_DRAFT_CONTINUE;
}

/* k_j by the chain token's confidence (§4 table). */
static int width(const struct swift *w, float p)
{
	static const int paper[4] = { 10, 5, 3, 1 }, code[4] = { 10, 8, 5, 3 };
	const int *t = w->widths_code ? code : paper;
	return p <= 0.5f ? t[0] : p <= 0.8f ? t[1] : p <= 0.95f ? t[2] : t[3];
}

/* Spine + leaf siblings: depth j holds the chain token and up to k_j - 1
 * other top-k tokens, all children of chain node j-1 (spine_tree keeps
 * room for the whole spine). Without costs every depth gets its k_j - 1;
 * with them only the siblings whose expected gain pays for their row
 * (econ_tree_widths, best first over all depths). */
static int sw_verify(void *state, const struct skipper_draft *d, struct skipper_tree *t)
{
	struct swift *w = state;
	int cap[SPINE_MAX_DEPTH], extra[SPINE_MAX_DEPTH], n = d->n < SPINE_MAX_DEPTH ? d->n : SPINE_MAX_DEPTH;

	if (!w->tree)
		return SKIPPER_POLICY_OK;
	for (int j = 0; j < n; j++)
		cap[j] = extra[j] = width(w, d->probs[j]) - 1;
	if (w->econ.costs) {
		struct skipper_draft head = *d;
		head.n = n;
		if (econ_tree_widths(w->econ.costs, w->econ.last_d, &head, cap, extra) == 0)
			return SKIPPER_POLICY_OK; /* no sibling pays for its row: the chain */
	}
	spine_tree(d, extra, n, t);
	return SKIPPER_POLICY_OK;
}

/* One opt_step (§3): propose, score on y_0..y_gamma over the prompt KV,
 * record. Runs inside on_accept, so its time is policy time. */
static int opt_step(struct swift *w, const int32_t *gen)
{
	const struct skipper_host *h = w->host;
	int rc, match = 0;
	uint8_t *attn = w->attn, *mlp = w->mlp;

	if ((rc = swift_search_propose(&w->s, h, w->ctx)))
		return rc;
	swift_slots_to_masks(&w->s, w->s.cand, attn, mlp);
	if ((rc = h->score_mask(w->ctx, attn, mlp, gen, w->gamma + 1, w->n_prompt, w->argmax)))
		return rc;
	for (int i = 1; i <= w->gamma; i++)
		match += w->argmax[i - 1] == gen[i];
	w->steps++;
	return swift_search_record(&w->s, (double)match / w->gamma);
}

static int sw_on_accept(void *state, const struct skipper_verdict *v)
{
	struct swift *w = state;
	const struct skipper_host *h = w->host;
	int rc = SKIPPER_POLICY_OK;

	/* Re-arming (§8 item 1) on a DROP of the rolling alpha below rearm:
	 * the window restarts when the search stops, and re-arms only after it
	 * has been at or above rearm since. A model whose alpha never reaches
	 * rearm would otherwise search again every window, forever. */
	if (w->was_optimizing && !w->s.optimizing)
		w->win_n = w->win_i = w->alpha_high = 0;
	w->was_optimizing = w->s.optimizing;
	w->win_acc[w->win_i] = v->n_accepted;
	w->win_drf[w->win_i] = v->n_drafted;
	w->win_i = (w->win_i + 1) % SWIFT_ALPHA_WINDOW;
	if (w->win_n < SWIFT_ALPHA_WINDOW)
		w->win_n++;
	if (!w->s.optimizing && w->rearm > 0 && w->win_n == SWIFT_ALPHA_WINDOW) {
		int a = 0, dr = 0;
		for (int i = 0; i < SWIFT_ALPHA_WINDOW; i++) {
			a += w->win_acc[i];
			dr += w->win_drf[i];
		}
		if (dr > 0 && (double)a / dr >= w->rearm) {
			w->alpha_high = 1;
		} else if (dr > 0 && w->alpha_high) {
			swift_search_rearm(&w->s);
			w->rearms++;
			w->win_n = w->win_i = w->alpha_high = 0;
		}
	}
	cost_rule_verdict(&w->econ, v);
	search_budget_round(&w->budget, w->econ.costs, v, w->s.optimizing);
	/* context accumulation: score only once gamma+1 tokens exist; with
	 * costs, only while the search's time is within its budget */
	if (w->s.optimizing && v->bonus >= 0 && v->n_generated > w->gamma + 1 &&
	    search_budget_allow(&w->budget, w->econ.costs, opt_predict(w))) {
		double t0 = h->now(w->ctx), s0 = w->s.s_best;
		rc = opt_step(w, v->generated);
		t0 = h->now(w->ctx) - t0;
		w->opt_seconds += t0;
		search_budget_spent(&w->budget, t0, opt_predict(w));
		/* a better set: its matchness is a per-token acceptance estimate,
		 * so drafting is reconsidered at once (a paused draft included) */
		if (!rc && w->s.s_best != s0 && w->s.s_best > 0)
			cost_rule_seed(&w->econ, w->s.s_best);
	}
	return rc;
}

static int sw_end(void *state, const struct skipper_stats *st)
{
	struct swift *w = state;
	char a[512], m[512];
	swift_slots_to_masks(&w->s, w->s.best, w->attn, w->mlp);
	w->host->format_layers(w->ctx, w->attn, w->L, a, sizeof a);
	w->host->format_layers(w->ctx, w->mlp, w->L, m, sizeof m);
	w->host->log(w->ctx, SKIPPER_LOG_INFO,
	             "swift: %d opt steps this request (%.2f ms each, %.1f%% of %.3f s), total %d (%d BO, %d improved), "
	             "%s, re-armed %d, best matchness %.3f, best attn=%s mlp=%s; %s: %d steps deferred by the budget, "
	             "%d plain rounds, %d probes, acceptance %.3f",
	             w->steps, w->steps ? 1e3 * w->opt_seconds / w->steps : 0.0,
	             st->seconds > 0 ? 100.0 * w->opt_seconds / st->seconds : 0.0, st->seconds, w->s.o, w->s.bo_steps,
	             w->s.improved, w->s.optimizing ? "optimizing" : "frozen", w->rearms, w->s.s_best, a, m,
	             w->econ.costs ? "costs" : "no costs", w->budget.deferred - w->deferred0,
	             w->econ.plain_rounds - w->plain0, w->econ.probes - w->probes0, accept_est_rate(&w->econ.acc));
	return SKIPPER_POLICY_OK;
}

static const struct skipper_policy swift_policy = {
	.name = "swift",
	.version = "1.1.0",
	.description = "SWIFT: on-the-fly skip-set search (random + GP-UCB), confidence exit, dynamic top-k tree",
	.needs = SKIPPER_NEED_TOPK,
	.top_k = 10,
	.create = sw_create,
	.config = sw_config,
	.config_complete = sw_config_complete,
	.destroy = sw_destroy,
	.begin = sw_begin,
	.select_draft = sw_select_draft,
	.should_exit = sw_should_exit,
	.verify = sw_verify,
	.on_accept = sw_on_accept,
	.end = sw_end,
};

/* config_help from the key tables, when the plugin is loaded */
static void sw_help(struct skipper_policy *d)
{
	static char help[4096];
	keys_help(help, sizeof help,
	          (const struct key_spec *const[]){ swift_keys, cost_rule_keys, search_budget_keys, NULL });
	d->config_help = help;
}

SKIPPER_POLICY_REGISTER_WITH(swift_policy, sw_help)
