/* `clasp`: CLaSp in-context layer skipping (clasp.md). Whole decoder layers
 * are skipped; which M layers is re-decided every LOI verification rounds
 * by a DP over the last committed token's full-model layer states (the
 * engine captures them with SKIPPER_NEED_LAST_LAYER_STATES). The first DP
 * runs on the last prompt row right after prefill (with costs, only once
 * the budget holds its predicted time, else on a later committed row), so
 * drafting starts with a tuned mask. Drafting stops when the draft's top-1
 * probability falls below DET, or at max_draft.
 *
 * With the host's cost curve (costs = true) max_draft is a cap: each round
 * drafts at most the length that maximises expected tokens per step for the
 * measured acceptance, none when no length beats a plain step (probing
 * later); and a DP that is due runs only when its time fits the search
 * budget (search_share of decoding time plus half of what drafting saved),
 * so LOI stretches where a DP costs more than the drafts gain
 * (plugins/common/drafting/: costrule.h, budget.h). See skipper-policy-clasp(5). */
#include <stdlib.h>
#include <string.h>

#include "clasp_dp.h"
#include "common/drafting/budget.h"
#include "common/drafting/costrule.h"
#include "common/keys/keys.h"
#include "econ/econ.h"
#include "skipper/policy.h"

#define CLASP_MAX_DRAFT 32

struct clasp {
	const struct skipper_host *host;
	void *ctx;

	/* configuration */
	int m_layers;        /* M; 0 = from skip_ratio */
	double skip_ratio;   /* M = round(ratio * L) */
	int interval;        /* LOI, verify rounds between DP runs */
	double threshold;    /* DET */
	int max_draft;       /* K_max */
	int pin_first, pin_last;
	int initial_dp;      /* run the DP after prefill */

	int L, M, d;
	uint8_t *pinned;     /* [L] */
	uint8_t *skip;       /* [L] current mask */
	uint8_t *prev;       /* [L] mask before the last DP (Jaccard stat) */
	int have_mask;
	int since_dp;        /* verify rounds since the last DP */
	struct clasp_dp dp;
	struct cost_rule econ; /* draft length by the cost curve */
	struct search_budget budget; /* DP time */

	/* per-request stats, reported by end() */
	int dp_runs;
	double dp_seconds, jaccard_sum, last_score;
	int jaccard_n;       /* DPs that had a mask before them */
	int dp_calls, deferred0, plain0;
};

#define CX(member) offsetof(struct clasp, member)
static const struct key_spec clasp_keys[] = {
	{ "skip_layers", KEY_INT, CX(m_layers), 0, 1, 4096, "M", "layers skipped while drafting",
	  "round(skip_ratio * L)" },
	{ "skip_ratio", KEY_DOUBLE, CX(skip_ratio), 0.5, 0.01, 0.99, "R", "M as a share of the layers" },
	{ "interval", KEY_INT, CX(interval), 32, 1, 1000000, "LOI", "verification rounds between DP runs" },
	{ "threshold", KEY_DOUBLE, CX(threshold), 0.7, 0, 1, "DET", "stop drafting when the draft's top-1 prob < DET" },
	{ "max_draft", KEY_INT, CX(max_draft), 12, 1, CLASP_MAX_DRAFT, "K", "draft cap per round" },
	{ "pin_first", KEY_BOOL, CX(pin_first), 0, .help = "never skip the first layer" },
	{ "pin_last", KEY_BOOL, CX(pin_last), 0, .help = "never skip the last layer" },
	{ "initial_dp", KEY_BOOL, CX(initial_dp), 1, .help = "run the DP on the last prompt token after prefill" },
	{ NULL },
};

static int clasp_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct clasp *c = calloc(1, sizeof *c);
	if (!c)
		return SKIPPER_POLICY_NOMEM;
	c->host = host;
	c->ctx = ctx;
	keys_defaults(clasp_keys, c);
	cost_rule_init(&c->econ);
	search_budget_init(&c->budget);
	*state = c;
	return SKIPPER_POLICY_OK;
}

static void clasp_destroy(void *state)
{
	struct clasp *c = state;
	if (!c)
		return;
	clasp_dp_free(&c->dp);
	free(c->pinned);
	free(c->skip);
	free(c->prev);
	free(c);
}

static int clasp_config(void *state, const char *key, const char *value)
{
	struct clasp *c = state;
	int rc = keys_config(clasp_keys, c, c->host, c->ctx, key, value);
	if (rc == SKIPPER_POLICY_UNKNOWN_KEY)
		rc = keys_config(cost_rule_keys, &c->econ, c->host, c->ctx, key, value);
	return rc == SKIPPER_POLICY_UNKNOWN_KEY ? keys_config(search_budget_keys, &c->budget, c->host, c->ctx, key, value)
	                                        : rc;
}

static int clasp_config_complete(void *state)
{
	struct clasp *c = state;
	const struct skipper_host *h = c->host;
	int free_layers;

	c->L = h->n_layer;
	c->d = h->n_embd;
	if (c->L <= 0)
		return SKIPPER_POLICY_OK; /* configuration check only */
	c->M = c->m_layers ? c->m_layers : (int)(c->skip_ratio * c->L + 0.5);
	free_layers = c->L - (c->pin_first ? 1 : 0) - (c->pin_last && c->L > 1 ? 1 : 0);
	if (c->M < 1 || c->M >= c->L || c->M > free_layers) {
		h->set_error(c->ctx, "skip_layers = %d: need 1 <= M < %d layers (%d may be skipped)", c->M, c->L,
		             free_layers);
		return SKIPPER_POLICY_ERROR;
	}
	c->pinned = calloc((size_t)c->L, 1);
	c->skip = calloc((size_t)c->L, 1);
	c->prev = calloc((size_t)c->L, 1);
	if (!c->pinned || !c->skip || !c->prev)
		return SKIPPER_POLICY_NOMEM;
	c->pinned[0] = (uint8_t)c->pin_first;
	c->pinned[c->L - 1] |= (uint8_t)c->pin_last;
	if (clasp_dp_init(&c->dp, c->L, c->M, c->d))
		return SKIPPER_POLICY_NOMEM;
	c->dp.pinned = c->pinned;
	return SKIPPER_POLICY_OK;
}

/* A DP's seconds by the cost curve (the budget's units): every layer runs
 * once over the DP row's execute candidates, about M/2 of them on average;
 * 1 without costs. */
static double dp_predict(const struct clasp *c)
{
	const struct skipper_costs *cs = c->econ.costs;
	if (!cs)
		return 1.0;
	return cs->step_seconds * c->L * (cs->attn + cs->mlp) * econ_verify_cost(cs, (c->M + 1) / 2);
}

/* One DP on row `row` of the captured states (L+1 points). The DP runs
 * inside the calling hook, so the engine's policy time includes it. */
static int run_dp(struct clasp *c, const struct skipper_states *st, int row)
{
	const struct skipper_host *h = c->host;
	double t0 = h->now(c->ctx), score;
	int inter = 0, uni = 0, rc;

	if (st->n_points != c->L + 1 || st->n_embd != c->d) {
		h->set_error(c->ctx, "captured states have %d points of %d floats, want %d of %d", st->n_points,
		             st->n_embd, c->L + 1, c->d);
		return SKIPPER_POLICY_ERROR;
	}
	memcpy(c->prev, c->skip, (size_t)c->L);
	rc = clasp_dp_run(&c->dp, h, c->ctx, st->data + (size_t)row * st->n_points * st->n_embd, st->pos[row], c->skip,
	                  &score);
	if (rc)
		return rc;
	for (int l = 0; l < c->L; l++) {
		inter += c->skip[l] && c->prev[l];
		uni += c->skip[l] || c->prev[l];
	}
	if (c->have_mask) {
		c->jaccard_sum += uni ? (double)inter / uni : 1.0;
		c->jaccard_n++;
	}
	c->have_mask = 1;
	c->since_dp = 0;
	c->dp_runs++;
	c->dp_calls += c->dp.calls;
	c->last_score = score;
	t0 = h->now(c->ctx) - t0;
	c->dp_seconds += t0;
	search_budget_spent(&c->budget, t0, dp_predict(c));
	return SKIPPER_POLICY_OK;
}

static int clasp_begin(void *state, const struct skipper_request *req)
{
	struct clasp *c = state;
	c->dp_runs = c->dp_calls = 0;
	c->dp_seconds = c->jaccard_sum = 0;
	c->jaccard_n = 0;
	c->since_dp = 0;
	c->deferred0 = c->budget.deferred;
	c->plain0 = c->econ.plain_rounds;
	/* with costs, even the first DP waits for its credit: on a short
	 * request it would cost more than drafting can win back */
	if (cost_rule_costs(&c->econ, c->host, c->ctx))
		search_budget_prior(&c->budget, 1.0);
	/* A mask from an earlier request is a better start than none; the
	 * prefill DP replaces it at once when enabled and the budget has room. */
	if (c->initial_dp && req->states && req->states->n_rows > 0 &&
	    search_budget_allow(&c->budget, c->econ.costs, dp_predict(c)))
		return run_dp(c, req->states, req->states->n_rows - 1);
	return SKIPPER_POLICY_OK;
}

static int clasp_select_draft(void *state, struct skipper_plan *plan)
{
	struct clasp *c = state;
	if (plan->n_layer != c->L) {
		c->host->set_error(c->ctx, "select_draft: plan for %d layers, policy has %d", plan->n_layer, c->L);
		return SKIPPER_POLICY_ERROR;
	}
	/* verify captures only for the round whose row feeds the next DP
	 * (on_accept's test, one round ahead; the budget only grows until
	 * then, so a DP it allows now it allows there, and a DP it defers
	 * waits without captures) */
	if (c->have_mask &&
	    (c->since_dp + 1 < c->interval || !search_budget_allow(&c->budget, c->econ.costs, dp_predict(c))))
		plan->capture = 0;
	if (!c->have_mask) {
		plan->max_draft = 0; /* drafting with nothing skipped only costs time */
		return SKIPPER_POLICY_OK;
	}
	memcpy(plan->skip_attn, c->skip, (size_t)c->L);
	memcpy(plan->skip_mlp, c->skip, (size_t)c->L);
	if (plan->max_draft > c->max_draft)
		plan->max_draft = c->max_draft;
	cost_rule_plan(&c->econ, c->host, c->ctx, plan);
	return SKIPPER_POLICY_OK;
}

static int clasp_should_exit(void *state, const struct skipper_step *step)
{
	struct clasp *c = state;
	return step->top_probs[0] < c->threshold ? SKIPPER_DRAFT_STOP : SKIPPER_DRAFT_CONTINUE;
}

static int clasp_on_accept(void *state, const struct skipper_verdict *v)
{
	struct clasp *c = state;
	c->since_dp++;
	cost_rule_verdict(&c->econ, v);
	search_budget_round(&c->budget, c->econ.costs, v, !c->have_mask);
	/* bonus < 0: generation ended inside this round, the captured row may
	 * not be committed and nothing will be drafted with a new mask */
	if (v->bonus < 0 || !v->states || v->states->n_rows < 1)
		return SKIPPER_POLICY_OK;
	if ((!c->have_mask || c->since_dp >= c->interval) &&
	    search_budget_ready(&c->budget, c->econ.costs, dp_predict(c)))
		return run_dp(c, v->states, v->states->n_rows - 1);
	return SKIPPER_POLICY_OK;
}

static int clasp_end(void *state, const struct skipper_stats *s)
{
	struct clasp *c = state;
	char buf[1024];
	c->host->format_layers(c->ctx, c->skip, c->L, buf, sizeof buf);
	c->host->log(c->ctx, SKIPPER_LOG_INFO,
	             "clasp: %d DP runs, %.2f ms per run (%.1f%% of %.3f s), %d sub-layer calls, "
	             "mean Jaccard %.3f, last cos %.4f, mask %s; %s: %d DPs deferred by the budget, %d plain rounds, "
	             "acceptance %.3f",
	             c->dp_runs, c->dp_runs ? 1e3 * c->dp_seconds / c->dp_runs : 0.0,
	             s->seconds > 0 ? 100.0 * c->dp_seconds / s->seconds : 0.0, s->seconds, c->dp_calls,
	             c->jaccard_n ? c->jaccard_sum / c->jaccard_n : 1.0, c->last_score, buf,
	             c->econ.costs ? "costs" : "no costs", c->budget.deferred - c->deferred0,
	             c->econ.plain_rounds - c->plain0, accept_est_rate(&c->econ.acc));
	return SKIPPER_POLICY_OK;
}

static const struct skipper_policy clasp_policy = {
	.name = "clasp",
	.version = "1.1.0",
	.description = "CLaSp: layer-skip DP on the last verified token's hidden states every LOI rounds",
	.needs = SKIPPER_NEED_LAST_LAYER_STATES,
	.prompt_rows = 1,
	.create = clasp_create,
	.config = clasp_config,
	.config_complete = clasp_config_complete,
	.destroy = clasp_destroy,
	.begin = clasp_begin,
	.select_draft = clasp_select_draft,
	.should_exit = clasp_should_exit,
	.on_accept = clasp_on_accept,
	.end = clasp_end,
};

/* config_help from the key tables, when the plugin is loaded */
static void clasp_help(struct skipper_policy *d)
{
	static char help[2048];
	keys_help(help, sizeof help,
	          (const struct key_spec *const[]){ clasp_keys, cost_rule_keys, search_budget_keys, NULL });
	d->config_help = help;
}

SKIPPER_POLICY_REGISTER_WITH(clasp_policy, clasp_help)
