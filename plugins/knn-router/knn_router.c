/* `knn-router`: KNN-SSD. Offline, per-domain anchors (K-means centroids of
 * mean-pooled prompt states) and a BO-searched skip set per domain; online,
 * the prompt's state after prefill goes to the domain of its nearest anchor
 * (cosine, K = 1) and that domain's set drafts the whole request. With the
 * host's cost curve, the draft cap is the length that maximises expected
 * tokens per step for the measured acceptance, none when no length beats a
 * plain step (probing again later; plugins/common/drafting/costrule.h).
 * See skipper-policy-knn-router(5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/keys/keys.h"
#include "common/numerics/vec.h"
#include "common/selfsd/ssdkeys.h"
#include "common/selfsd/ssdrun.h"
#include "econ/adaptive.h"
#include "knn_calibrate.h"
#include "knn_router.h"
#include "skipper/policy.h"

static const struct key_spec kr_keys[] = {
	{ "profile", KEY_STRING, offsetof(struct knn_router, profile), .value = "FILE", .help = "routing profile",
	  .dflt_text = "[policy] profile" },
	{ "anchors_per_domain", KEY_INT, offsetof(struct knn_router, anchors_per_domain), 10, 1, 1000, "N",
	  "calibrate: K-means centroids per domain" },
	{ "embed_prompts", KEY_INT, offsetof(struct knn_router, embed_prompts), 1000, 1, 100000, "N",
	  "calibrate: most prompts embedded per domain" },
	{ NULL },
};

/* reference-code defaults: static exit 0.8, 12 drafts; adaptive exit off */
static const struct key_spec kr_ssd_keys[] = { SSD_KEYS(0.8, 0, 12), { NULL } };

static int kr_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct knn_router *r = calloc(1, sizeof *r);
	if (!r)
		return SKIPPER_POLICY_NOMEM;
	r->host = host;
	r->ctx = ctx;
	keys_defaults(kr_keys, r);
	keys_defaults(kr_ssd_keys, &r->k);
	cost_rule_init(&r->econ);
	*state = r;
	return SKIPPER_POLICY_OK;
}

static void kr_destroy(void *state)
{
	struct knn_router *r = state;
	if (!r)
		return;
	keys_free(kr_keys, r);
	free(r->anchors);
	free(r->label);
	free(r->masks);
	free(r->max_draft);
	for (int i = 0; i < r->n_domains; i++)
		free(r->domains[i]);
	free(r->domains);
	free(r);
}

static int kr_config(void *state, const char *key, const char *value)
{
	struct knn_router *r = state;
	int rc = keys_config(kr_keys, r, r->host, r->ctx, key, value);
	if (rc == SKIPPER_POLICY_UNKNOWN_KEY)
		rc = keys_config(kr_ssd_keys, &r->k, r->host, r->ctx, key, value);
	return rc == SKIPPER_POLICY_UNKNOWN_KEY ? keys_config(cost_rule_keys, &r->econ, r->host, r->ctx, key, value) : rc;
}

const char *knn_profile_file(const struct knn_router *r)
{
	return r->profile ? r->profile : r->host->profile_path(r->ctx);
}

static int kr_config_complete(void *state)
{
	struct knn_router *r = state;
	econ_adaptive_init(&r->ad, r->k.threshold, r->k.alpha, r->k.eps, r->k.beta1, r->k.beta2);
	if (r->host->n_layer <= 0 || !knn_profile_file(r))
		return SKIPPER_POLICY_OK; /* calibrate writes the profile; begin() refuses to run without */
	return knn_load(r, knn_profile_file(r));
}

static int kr_begin(void *state, const struct skipper_request *req)
{
	struct knn_router *r = state;
	const struct skipper_host *h = r->host;
	double sim;
	int a;

	if (!r->n_anchors) {
		h->set_error(r->ctx, "no routing profile: set profile = FILE in [knn-router] or [policy] profile "
		                     "(skipper calibrate --policy knn-router --domains category writes one)");
		return SKIPPER_POLICY_ERROR;
	}
	if (!req->prompt_mean) {
		h->set_error(r->ctx, "the engine passed no prompt state to route on");
		return SKIPPER_POLICY_ERROR;
	}
	a = vec_nearest_cosine(req->prompt_mean, r->anchors, r->n_anchors, (size_t)r->n_embd, &sim);
	if (a < 0) { /* every cosine NaN: the prompt state is not finite */
		h->set_error(r->ctx, "request %llu: the prompt state is not finite: nothing to route by",
		             (unsigned long long)req->id);
		return SKIPPER_POLICY_ERROR;
	}
	/* another domain's set accepts at another rate: what the last request
	 * measured is a guess for this one only when the set is the same */
	if (r->label[a] != r->route)
		cost_rule_seed(&r->econ, COST_RULE_PRIOR);
	r->route = r->label[a];
	r->route_sim = sim;
	h->log(r->ctx, SKIPPER_LOG_INFO, "knn-router: request %llu routed to domain %s (cosine %.4f, anchor %d)",
	       (unsigned long long)req->id, r->domains[r->route], sim, a);
	econ_adaptive_begin(&r->ad);
	return SKIPPER_POLICY_OK;
}

static int kr_select_draft(void *state, struct skipper_plan *plan)
{
	struct knn_router *r = state;
	const uint8_t *m = r->masks + (size_t)r->route * 2 * r->n_layer;
	return ssd_plan(r->host, r->ctx, plan, r->n_layer, m, m + r->n_layer, r->k.max_draft,
	                r->max_draft[r->route], &r->econ);
}

static int kr_should_exit(void *state, const struct skipper_step *step)
{
	struct knn_router *r = state;
	return ssd_should_exit(&r->k, &r->ad, step);
}

static int kr_on_accept(void *state, const struct skipper_verdict *v)
{
	struct knn_router *r = state;
	ssd_on_accept(&r->k, &r->ad, &r->econ, v);
	return SKIPPER_POLICY_OK;
}

/* The routing decision again at the end, next to the request's totals, so a
 * log reader sees domain, similarity, M and α on one line. */
static int kr_end(void *state, const struct skipper_stats *st)
{
	struct knn_router *r = state;
	if (r->n_anchors)
		r->host->log(r->ctx, SKIPPER_LOG_INFO, "knn-router: domain %s cosine %.4f M %.2f alpha %.3f",
		             r->domains[r->route], r->route_sim,
		             st->verify_passes ? (double)(st->n_generated - 1) / st->verify_passes : 1.0,
		             st->drafted ? (double)st->accepted / st->drafted : 0.0);
	return SKIPPER_POLICY_OK;
}

static const struct skipper_policy knn_router_policy = {
	.name = "knn-router",
	.version = "1.1.0",
	.description = "KNN-SSD: route each request to a per-domain skip set by its nearest anchor",
	.needs = SKIPPER_NEED_PROMPT_MEAN,
	.create = kr_create,
	.config = kr_config,
	.config_complete = kr_config_complete,
	.destroy = kr_destroy,
	.begin = kr_begin,
	.select_draft = kr_select_draft,
	.should_exit = kr_should_exit,
	.on_accept = kr_on_accept,
	.end = kr_end,
	.calibrate = knn_calibrate,
};

/* config_help from the key tables, when the plugin is loaded */
static void kr_help(struct skipper_policy *d)
{
	static char help[4096];
	keys_help(help, sizeof help, (const struct key_spec *const[]){ kr_keys, kr_ssd_keys, cost_rule_keys, NULL });
	d->config_help = help;
}

SKIPPER_POLICY_REGISTER_WITH(knn_router_policy, kr_help)
