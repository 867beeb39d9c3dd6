/* `knapspec`: KnapSpec (knapspec.md). The draft skips attention and MLP
 * sub-layers independently; every T speculation steps a knapsack DP over
 * the 2L sub-layers (weights from a latency model that makes attention cost
 * grow with the context) finds, per skipped-weight budget, the sub-layer set
 * whose states stay closest in cosine to the full model's on the rows
 * committed in the last m steps; each candidate's acceptance rate is
 * estimated by replaying those rows through the LM head, and the pair
 * (candidate, draft length) with the best Tokens-per-Time wins.
 *
 * Sub-layer states: the engine captures all 2L+1 sub-layer boundaries of
 * the committed rows from its verify pass (SKIPPER_NEED_ACCEPTED_STATES |
 * SKIPPER_NEED_SUBLAYER_STATES), so X costs no compute here.
 *
 * With the host's cost curve (costs = true) TPT also charges the head of
 * every step and verify[gamma + 1] plain steps for a verification
 * (knap_pick.h); the chosen set's alpha_hat seeds the acceptance estimate
 * of the run-time cap (the length maximising expected tokens per step,
 * none when no length beats a plain step, probing later; common/drafting/costrule.h); and a
 * DP that is due runs only when its time fits the search budget, else its
 * capture window starts over (budget.h). See skipper-policy-knapspec(5). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/drafting/budget.h"
#include "common/drafting/costrule.h"
#include "common/keys/keys.h"
#include "econ/econ.h"
#include "knap_dp.h"
#include "knap_latency.h"
#include "knap_pick.h"
#include "skipper/policy.h"

#define KS_MAX_DRAFT 32
#define KS_MAX_ROWS 128
#define KS_FIT_POINTS 16
#define KS_DEVICE "cpu"

struct knapspec {
	const struct skipper_host *host;
	void *ctx;

	/* configuration */
	double tau;          /* DP pruning threshold */
	int m_steps;         /* speculation steps feeding X */
	int max_rows;        /* cap on r */
	int prefill_rows;    /* prompt rows for the first DP (0 = no prefill DP) */
	int max_draft;       /* D: grid and run-time draft cap */
	double threshold;    /* tau_conf draft exit */
	int interval;        /* T */
	int restart;         /* 1: the T-step schedule restarts with a prefill DP at every
	                        request; 0: it runs over the process (prefill DP only while
	                        no mask exists) */
	int pin_ends;        /* never skip the first and last layer */
	int weight_cap;      /* 0 = uncapped */
	char *device;        /* [latency.DEVICE] (NULL: KS_DEVICE) */
	char *profile;       /* profile = FILE (else [policy] profile) */
	int calib_points;    /* ctx lengths timed by calibrate */

	int L, d;
	struct knap_latency lat;
	int have_lat;
	uint8_t *pinned;     /* [2L] */
	uint8_t *skip, *cand; /* [2L] current mask, a candidate */
	int have_mask;
	double d_steps;      /* a draft step with the mask, in plain steps at the DP's context */
	struct cost_rule econ; /* run-time draft length by the cost curve */
	struct search_budget budget; /* DP time */

	/* rows of the last m steps: [max_rows][2L+1][d] */
	float *rows;
	int32_t *pos;
	int n_rows;
	int since;           /* steps since the last DP */
	float *X;            /* [(2L+1)][r][d] */
	int32_t *y;          /* [r] the full model's greedy tokens */
	struct knap_dp dp;

	/* per-request stats */
	int dp_runs, max_live, last_r, last_gamma, n_attn, n_mlp;
	int live_cells, replayed; /* terminal cells live / replayed through the head, summed over runs */
	double dp_seconds, last_tpt, last_alpha, last_speedup;
	int deferred0, plain0;
};

/* device names a profile section: [latency.NAME] */
static int device_name(const struct skipper_host *h, void *ctx, const char *value)
{
	for (const char *p = value; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '-')) {
			h->set_error(ctx, "device names a profile section: letters, digits, '_' and '-' only");
			return SKIPPER_POLICY_ERROR;
		}
	if (!*value) {
		h->set_error(ctx, "device must not be empty");
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

#define KX(member) offsetof(struct knapspec, member)
static const struct key_spec ks_keys[] = {
	{ "interval", KEY_INT, KX(interval), 64, 1, 1000000, "T", "speculation steps between DP runs" },
	{ "steps", KEY_INT, KX(m_steps), 5, 1, 64, "m", "steps whose committed rows feed the DP" },
	{ "restart", KEY_BOOL, KX(restart), 0, .help = "restart the T-step schedule with a prefill DP per request" },
	{ "max_rows", KEY_INT, KX(max_rows), 64, 1, KS_MAX_ROWS, "R", "at most R rows in the DP" },
	{ "prefill_rows", KEY_INT, KX(prefill_rows), 5, 0, KS_MAX_ROWS, "R",
	  "prompt rows for a first DP after prefill; 0 = none" },
	{ "tau", KEY_DOUBLE, KX(tau), 0.5, -1, 1, "X", "DP cosine pruning threshold" },
	{ "max_draft", KEY_INT, KX(max_draft), 10, 1, KS_MAX_DRAFT, "D", "draft-length grid 1..D and draft cap" },
	{ "threshold", KEY_DOUBLE, KX(threshold), 0.7, 0, 1, "P", "stop drafting when the top-1 prob < P" },
	{ "pin_ends", KEY_BOOL, KX(pin_ends), 1, .help = "never skip the first and last layer" },
	{ "weight_cap", KEY_INT, KX(weight_cap), 5, 0, 1000, "W", "cap on integer item weights, 0 = none" },
	{ "device", KEY_STRING, KX(device), .value = "NAME", .help = "profile section [latency.NAME]",
	  .dflt_text = KS_DEVICE, .check = device_name },
	{ "profile", KEY_STRING, KX(profile), .value = "FILE", .help = "profile with the latency model",
	  .dflt_text = "[policy] profile" },
	{ "calibrate_points", KEY_INT, KX(calib_points), KS_FIT_POINTS, 2, 256, "N",
	  "context lengths timed by skipper calibrate" },
	{ NULL },
};

static const char *device(const struct knapspec *k)
{
	return k->device ? k->device : KS_DEVICE;
}

static int ks_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct knapspec *k = calloc(1, sizeof *k);
	if (!k)
		return SKIPPER_POLICY_NOMEM;
	k->host = host;
	k->ctx = ctx;
	keys_defaults(ks_keys, k);
	cost_rule_init(&k->econ);
	search_budget_init(&k->budget);
	*state = k;
	return SKIPPER_POLICY_OK;
}

static void ks_destroy(void *state)
{
	struct knapspec *k = state;
	if (!k)
		return;
	knap_dp_free(&k->dp);
	keys_free(ks_keys, k);
	free(k->pinned);
	free(k->skip);
	free(k->cand);
	free(k->rows);
	free(k->pos);
	free(k->X);
	free(k->y);
	free(k);
}

static int ks_config(void *state, const char *key, const char *value)
{
	struct knapspec *k = state;
	int rc = keys_config(ks_keys, k, k->host, k->ctx, key, value);
	if (rc == SKIPPER_POLICY_UNKNOWN_KEY)
		rc = keys_config(cost_rule_keys, &k->econ, k->host, k->ctx, key, value);
	return rc == SKIPPER_POLICY_UNKNOWN_KEY ? keys_config(search_budget_keys, &k->budget, k->host, k->ctx, key, value)
	                                        : rc;
}

/* c1, c2, c3 from [latency.DEVICE] of the profile, when there is one. */
static int load_latency(struct knapspec *k)
{
	const struct skipper_host *h = k->host;
	const char *path = k->profile ? k->profile : h->profile_path(k->ctx);
	struct skipper_profile *p;
	char section[96];
	const char *v[3];
	int rc;

	if (!path)
		return SKIPPER_POLICY_OK;
	if ((rc = h->profile_read(k->ctx, path, &p)))
		return rc;
	snprintf(section, sizeof section, "latency.%s", device(k));
	v[0] = h->profile_get(k->ctx, p, section, "c1");
	v[1] = h->profile_get(k->ctx, p, section, "c2");
	v[2] = h->profile_get(k->ctx, p, section, "c3");
	if (v[0] && v[1] && v[2]) {
		char *e0, *e1, *e2;
		k->lat.c1 = strtod(v[0], &e0);
		k->lat.c2 = strtod(v[1], &e1);
		k->lat.c3 = strtod(v[2], &e2);
		if (*e0 || *e1 || *e2 || !(k->lat.c1 > 0)) {
			h->set_error(k->ctx, "%s: [%s] c1, c2, c3 must be numbers, c1 > 0", path, section);
			h->profile_free(k->ctx, p);
			return SKIPPER_POLICY_ERROR;
		}
		k->have_lat = 1;
	} else if (v[0] || v[1] || v[2]) {
		h->set_error(k->ctx, "%s: [%s] needs all of c1, c2 and c3", path, section);
		h->profile_free(k->ctx, p);
		return SKIPPER_POLICY_ERROR;
	}
	h->profile_free(k->ctx, p);
	return SKIPPER_POLICY_OK;
}

static int ks_config_complete(void *state)
{
	struct knapspec *k = state;
	const struct skipper_host *h = k->host;
	size_t per;

	k->L = h->n_layer;
	k->d = h->n_embd;
	if (k->L <= 0)
		return SKIPPER_POLICY_OK;
	if (k->pin_ends && k->L < 3) {
		h->set_error(k->ctx, "pin_ends needs at least 3 layers (the model has %d)", k->L);
		return SKIPPER_POLICY_ERROR;
	}
	per = (size_t)(2 * k->L + 1) * (size_t)k->d;
	k->pinned = calloc((size_t)2 * k->L, 1);
	k->skip = calloc((size_t)2 * k->L, 1);
	k->cand = calloc((size_t)2 * k->L, 1);
	k->rows = malloc((size_t)k->max_rows * per * sizeof *k->rows);
	k->pos = malloc((size_t)k->max_rows * sizeof *k->pos);
	k->X = malloc((size_t)(2 * k->L + 1) * k->max_rows * k->d * sizeof *k->X);
	k->y = malloc((size_t)k->max_rows * sizeof *k->y);
	if (!k->pinned || !k->skip || !k->cand || !k->rows || !k->pos || !k->X || !k->y)
		return SKIPPER_POLICY_NOMEM;
	if (k->pin_ends)
		k->pinned[0] = k->pinned[1] = k->pinned[2 * k->L - 2] = k->pinned[2 * k->L - 1] = 1;
	k->dp.n_items = 2 * k->L;
	k->dp.d = k->d;
	k->dp.pinned = k->pinned;
	k->dp.tau = k->tau;
	return load_latency(k);
}

static int ks_refine_needs(void *state, struct skipper_needs *needs)
{
	struct knapspec *k = state;
	needs->prompt_rows = k->prefill_rows > 0 ? k->prefill_rows : 1;
	return SKIPPER_POLICY_OK;
}

/* Time one attention and one MLP sub-layer of layer 0 at npts context
 * lengths spread over [0, n_ctx) and fit the model. */
static int measure_latency(struct knapspec *k, int npts, struct knap_latency *out)
{
	const struct skipper_host *h = k->host;
	double n[256], ta[256], tm[256];
	int top = h->n_ctx - 1, rc;

	if (npts > 256)
		npts = 256;
	for (int i = 0; i < npts; i++) {
		n[i] = (double)((long)top * i / (npts - 1));
		if ((rc = h->time_sublayer(k->ctx, SKIPPER_SUBLAYER_ATTN, 0, (int)n[i], &ta[i])) ||
		    (rc = h->time_sublayer(k->ctx, SKIPPER_SUBLAYER_MLP, 0, (int)n[i], &tm[i])))
			return rc;
	}
	if (knap_latency_fit(n, ta, npts, tm, npts, out)) {
		h->set_error(k->ctx, "latency fit failed (timings not positive?)");
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

/* Append committed rows (2L+1 points each), keeping at most max_rows. */
static int add_rows(struct knapspec *k, const struct skipper_states *st, int first)
{
	size_t per = (size_t)(2 * k->L + 1) * k->d;
	if (st->n_points != 2 * k->L + 1 || st->n_embd != k->d) {
		k->host->set_error(k->ctx, "knapspec: states with %d points of %d floats, expected %d of %d (sub-layer "
		                   "captures)", st->n_points, st->n_embd, 2 * k->L + 1, k->d);
		return SKIPPER_POLICY_ERROR;
	}
	for (int i = first; i < st->n_rows; i++) {
		if (k->n_rows > 0 && st->pos[i] != k->pos[k->n_rows - 1] + 1)
			k->n_rows = 0; /* not contiguous (cannot happen within a request): restart */
		if (k->n_rows == k->max_rows) {
			memmove(k->rows, k->rows + per, (size_t)(k->n_rows - 1) * per * sizeof *k->rows);
			memmove(k->pos, k->pos + 1, (size_t)(k->n_rows - 1) * sizeof *k->pos);
			k->n_rows--;
		}
		memcpy(k->rows + (size_t)k->n_rows * per, st->data + (size_t)i * per, per * sizeof *k->rows);
		k->pos[k->n_rows++] = st->pos[i];
	}
	return SKIPPER_POLICY_OK;
}

/* X[2L+1][r][d] from the captured rows [r][2L+1][d] (a transpose). */
static void build_X(struct knapspec *k)
{
	const int r = k->n_rows, d = k->d, np = 2 * k->L + 1;
	const size_t mat = (size_t)r * d;
	for (int p = 0; p < np; p++)
		for (int i = 0; i < r; i++)
			memcpy(k->X + (size_t)p * mat + (size_t)i * d, k->rows + ((size_t)i * np + p) * d,
			       (size_t)d * sizeof *k->X);
}

/* A DP's seconds at context n over r rows by the cost curve (the budget's
 * units; 1 without costs): every sub-layer runs over the live cells' rows,
 * about half of the Kh + 1 cells on average, and about half of the live
 * cells are replayed through the head. The weights come from the latency
 * model, or before it is known from the curve's shares. */
static double dp_predict(const struct knapspec *k, int r, int n)
{
	const struct skipper_costs *cs = k->econ.costs;
	struct knap_latency lat = k->lat;
	int wa, wm, live;

	if (!cs)
		return 1.0;
	if (!k->have_lat)
		lat = (struct knap_latency){ .c1 = cs->mlp, .c3 = cs->attn };
	knap_weights(&lat, n, k->weight_cap, &wa, &wm);
	live = k->L * (wa + wm) / 4 + 1;
	return cs->step_seconds * (k->L * (cs->attn + cs->mlp) * econ_verify_cost(cs, live * r) +
	                           cs->head * econ_verify_cost(cs, live * r / 2));
}

/* The DP and the TPT grid (Algorithms 1 and 2) at context length n. */
static int optimize(struct knapspec *k, int n)
{
	const struct skipper_host *h = k->host;
	const struct skipper_costs *cs = cost_rule_costs(&k->econ, h, k->ctx);
	const int L = k->L, r = k->n_rows;
	double t0 = h->now(k->ctx), ta, tm, units = dp_predict(k, r, n);
	int wa, wm, Kh, rc;

	if (r < 1)
		return SKIPPER_POLICY_OK;
	if (!k->have_lat) {
		/* no [latency.DEVICE] in a profile: measure once, now (documented) */
		if ((rc = measure_latency(k, 8, &k->lat)))
			return rc;
		k->have_lat = 1;
	}
	ta = knap_t_attn(&k->lat, n);
	tm = k->lat.c1;
	knap_weights(&k->lat, n, k->weight_cap, &wa, &wm);
	Kh = L * (wa + wm) / 2;
	build_X(k);
	if ((rc = knap_dp_run(&k->dp, h, k->ctx, k->X, r, k->pos, Kh, wa, wm)))
		return rc;
	if ((rc = h->head_argmax(k->ctx, r, k->X + (size_t)2 * L * r * k->d, k->y)))
		return rc;
	struct knap_pick pk = { .t_attn = ta, .t_mlp = tm, .n_layer = L, .max_draft = k->max_draft, .y = k->y,
	                        .costs = cs, .t_head = cs ? cs->head * cs->step_seconds : 0,
	                        .t_draft_head = cs ? cs->draft_head * cs->step_seconds : 0 };
	if ((rc = knap_pick_run(&k->dp, h, k->ctx, &pk)))
		return rc;
	k->replayed += pk.n_replayed;
	k->live_cells += pk.n_live;
	if (pk.c > 0) { /* else all pruned: keep the previous mask */
		memcpy(k->cand, k->skip, (size_t)2 * L);
		knap_dp_backtrack(&k->dp, pk.c, k->skip);
		/* a new set: its alpha_hat is the best guess of its acceptance
		 * (the same set keeps what the rounds measured) */
		if (!k->have_mask || memcmp(k->cand, k->skip, (size_t)2 * L))
			cost_rule_seed(&k->econ, pk.alpha);
		k->have_mask = 1;
		k->d_steps = pk.t_draft / pk.t_step;
		k->last_tpt = pk.tpt;
		k->last_speedup = pk.tpt * pk.t_step;
		k->last_gamma = pk.gamma;
		k->last_alpha = pk.alpha;
		k->n_attn = k->n_mlp = 0;
		for (int l = 0; l < L; l++) {
			k->n_attn += k->skip[2 * l];
			k->n_mlp += k->skip[2 * l + 1];
		}
	}
	k->dp_runs++;
	k->last_r = r;
	if (k->dp.max_live > k->max_live)
		k->max_live = k->dp.max_live;
	t0 = h->now(k->ctx) - t0;
	k->dp_seconds += t0;
	search_budget_spent(&k->budget, t0, units);
	return SKIPPER_POLICY_OK;
}

static int ks_begin(void *state, const struct skipper_request *req)
{
	struct knapspec *k = state;
	k->dp_runs = k->max_live = k->live_cells = k->replayed = 0;
	k->dp_seconds = 0;
	k->deferred0 = k->budget.deferred;
	k->plain0 = k->econ.plain_rounds;
	k->n_rows = 0; /* rows of another request's cache are no reference here */
	if (k->restart)
		k->since = 0;
	/* with costs, even the first DP waits for its credit: on a CPU it
	 * costs seconds, more than a short request's drafts could win back */
	if (cost_rule_costs(&k->econ, k->host, k->ctx))
		search_budget_prior(&k->budget, 1.0);
	if (k->prefill_rows > 0 && (!k->have_mask || k->restart) && req->states && req->states->n_rows > 0 &&
	    search_budget_allow(&k->budget, k->econ.costs,
	                    dp_predict(k, req->states->n_rows < k->prefill_rows ? req->states->n_rows : k->prefill_rows,
	                               req->n_prompt))) {
		int first = req->states->n_rows > k->prefill_rows ? req->states->n_rows - k->prefill_rows : 0;
		int rc = add_rows(k, req->states, first);
		if (!rc)
			rc = optimize(k, req->n_prompt);
		k->n_rows = 0;
		return rc;
	}
	return SKIPPER_POLICY_OK;
}

static int ks_select_draft(void *state, struct skipper_plan *plan)
{
	struct knapspec *k = state;
	if (plan->n_layer != k->L) {
		k->host->set_error(k->ctx, "select_draft: plan for %d layers, policy has %d", plan->n_layer, k->L);
		return SKIPPER_POLICY_ERROR;
	}
	/* verify captures only for the rounds whose rows feed the next DP
	 * (on_accept's window test, one step ahead) */
	if (k->since + 1 <= k->interval - k->m_steps && k->have_mask)
		plan->capture = 0;
	if (!k->have_mask) {
		plan->max_draft = 0; /* nothing chosen yet: a full-model draft only costs time */
		return SKIPPER_POLICY_OK;
	}
	for (int l = 0; l < k->L; l++) {
		plan->skip_attn[l] = k->skip[2 * l];
		plan->skip_mlp[l] = k->skip[2 * l + 1];
	}
	if (plan->max_draft > k->max_draft)
		plan->max_draft = k->max_draft;
	/* the draft step priced by the context-aware model of the last DP */
	if (cost_rule_costs(&k->econ, k->host, k->ctx))
		plan->max_draft = cost_rule_cap(&k->econ, k->d_steps, plan->max_draft);
	return SKIPPER_POLICY_OK;
}

static int ks_should_exit(void *state, const struct skipper_step *step)
{
	struct knapspec *k = state;
	return step->top_probs[0] < k->threshold ? SKIPPER_DRAFT_STOP : SKIPPER_DRAFT_CONTINUE;
}

/* Steps T-m+1 .. T of each window contribute their committed rows; the DP
 * runs at the end of step T (the rows are then the last r of the cache). */
static int ks_on_accept(void *state, const struct skipper_verdict *v)
{
	struct knapspec *k = state;
	int rc;
	k->since++;
	cost_rule_verdict(&k->econ, v);
	search_budget_round(&k->budget, k->econ.costs, v, !k->have_mask);
	if (v->bonus < 0 || !v->states)
		return SKIPPER_POLICY_OK; /* generation ended: nothing more to draft */
	if ((k->since > k->interval - k->m_steps || !k->have_mask) && (rc = add_rows(k, v->states, 0)))
		return rc;
	int due = k->since >= k->interval || (!k->have_mask && k->since >= k->m_steps);
	if (due && !search_budget_allow(&k->budget, k->econ.costs, dp_predict(k, k->n_rows, v->n_committed))) {
		/* the DP costs more than its budget holds yet (also while no set
		 * was found: a DP that keeps finding none must not run every m
		 * steps): the window of m steps starts over, so the rows stay
		 * the last m steps' */
		k->since = (k->have_mask ? k->interval : k->m_steps) - k->m_steps;
		k->n_rows = 0;
		return SKIPPER_POLICY_OK;
	}
	if (due) {
		rc = optimize(k, v->n_committed);
		k->n_rows = 0;
		k->since = 0;
		return rc;
	}
	return SKIPPER_POLICY_OK;
}

static int ks_end(void *state, const struct skipper_stats *s)
{
	struct knapspec *k = state;
	k->host->log(k->ctx, SKIPPER_LOG_INFO,
	             "knapspec: %d DP runs, %.2f ms per run (%.1f%% of %.3f s), r %d rows, widest row %d branches, "
	             "%d of %d live candidates replayed through the head, "
	             "skipped %d attn + %d mlp, alpha_hat %.3f, gamma* %d, TPT* %.1f tok/s (%.2fx a plain step); "
	             "%s: %d DPs deferred by the budget, %d plain rounds, acceptance %.3f",
	             k->dp_runs, k->dp_runs ? 1e3 * k->dp_seconds / k->dp_runs : 0.0,
	             s->seconds > 0 ? 100.0 * k->dp_seconds / s->seconds : 0.0, s->seconds, k->last_r, k->max_live,
	             k->replayed, k->live_cells,
	             k->n_attn, k->n_mlp, k->last_alpha, k->last_gamma, k->last_tpt, k->last_speedup,
	             k->econ.costs ? "costs" : "no costs", k->budget.deferred - k->deferred0,
	             k->econ.plain_rounds - k->plain0, accept_est_rate(&k->econ.acc));
	return SKIPPER_POLICY_OK;
}

/* skipper calibrate --policy knapspec: time the sub-layers at
 * calibrate_points context lengths, fit, write [latency.DEVICE]. */
static int ks_calibrate(void *state, const struct skipper_calibrate *c)
{
	struct knapspec *k = state;
	const struct skipper_host *h = k->host;
	struct skipper_profile *p;
	struct knap_latency lat;
	char section[96], buf[64];
	int rc;

	if (!c->output) {
		h->set_error(k->ctx, "calibrate: no output profile");
		return SKIPPER_POLICY_ERROR;
	}
	if (c->progress)
		c->progress(c->progress_ctx, 0, 1, "timing sub-layers");
	if ((rc = measure_latency(k, k->calib_points, &lat)))
		return rc;
	if ((rc = h->profile_new(k->ctx, "knapspec", &p)))
		return rc;
	snprintf(section, sizeof section, "latency.%s", device(k));
	snprintf(buf, sizeof buf, "%.6e", lat.c1);
	rc = h->profile_set(k->ctx, p, section, "c1", buf);
	snprintf(buf, sizeof buf, "%.6e", lat.c2);
	if (!rc)
		rc = h->profile_set(k->ctx, p, section, "c2", buf);
	snprintf(buf, sizeof buf, "%.6e", lat.c3);
	if (!rc)
		rc = h->profile_set(k->ctx, p, section, "c3", buf);
	snprintf(buf, sizeof buf, "%d", h->n_ctx - 1);
	if (!rc)
		rc = h->profile_set(k->ctx, p, section, "n_max", buf);
	if (!rc)
		rc = h->profile_write(k->ctx, p, c->output);
	h->profile_free(k->ctx, p);
	if (!rc) {
		k->lat = lat;
		k->have_lat = 1;
		if (c->progress)
			c->progress(c->progress_ctx, 1, 1, "done");
	}
	return rc;
}

static const struct skipper_policy knapspec_policy = {
	.name = "knapspec",
	.version = "1.1.0",
	.description = "KnapSpec: knapsack DP over attention/MLP sub-layers with a context-aware latency model",
	.needs = SKIPPER_NEED_ACCEPTED_STATES | SKIPPER_NEED_SUBLAYER_STATES,
	.prompt_rows = 5,
	.create = ks_create,
	.config = ks_config,
	.config_complete = ks_config_complete,
	.refine_needs = ks_refine_needs,
	.destroy = ks_destroy,
	.begin = ks_begin,
	.select_draft = ks_select_draft,
	.should_exit = ks_should_exit,
	.on_accept = ks_on_accept,
	.end = ks_end,
	.calibrate = ks_calibrate,
};

/* config_help from the key tables, when the plugin is loaded */
static void ks_help(struct skipper_policy *d)
{
	static char help[4096];
	keys_help(help, sizeof help, (const struct key_spec *const[]){ ks_keys, cost_rule_keys, search_budget_keys, NULL });
	d->config_help = help;
}

SKIPPER_POLICY_REGISTER_WITH(knapspec_policy, ks_help)
