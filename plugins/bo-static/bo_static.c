/* `bo-static`: Draft & Verify (Self-SD, Zhang et al. 2024). One skip set,
 * found offline by Bayesian optimisation on measured tokens/s, drafts every
 * round; drafting exits when the draft's top probability falls below a
 * threshold that adapts to keep acceptance near alpha. With the host's cost
 * curve, K is a cap: each round drafts at most the length that maximises
 * expected tokens per step for the measured acceptance, none when no length
 * beats a plain step (probing again later; plugins/common/drafting/costrule.h).
 * See skipper-policy-bo-static(5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/drafting/costrule.h"
#include "common/keys/keys.h"
#include "common/selfsd/masksearch.h"
#include "common/selfsd/ssdkeys.h"
#include "common/selfsd/ssdrun.h"
#include "econ/adaptive.h"
#include "skipper/policy.h"

struct bo_static {
	const struct skipper_host *host;
	void *ctx;
	struct ssd_keys k;
	char *profile, *section; /* owned; NULL = [policy] profile, BS_SECTION */
	int n_layer;
	uint8_t *attn, *mlp;     /* [n_layer] */
	int prof_max_draft;      /* the profile's cap (32 = none; 0 = drafting does not pay) */
	struct econ_adaptive ad;
	struct cost_rule econ;
};

#define BS_SECTION "mask"

static const struct key_spec bs_keys[] = {
	{ "profile", KEY_STRING, offsetof(struct bo_static, profile), .value = "FILE", .help = "skip profile",
	  .dflt_text = "[policy] profile" },
	{ "profile_section", KEY_STRING, offsetof(struct bo_static, section), .value = "S",
	  .help = "profile section with attn/mlp", .dflt_text = BS_SECTION },
	{ NULL },
};

/* paper defaults (skipper-policy-bo-static(5) lists where each comes from) */
static const struct key_spec bs_ssd_keys[] = { SSD_KEYS(0.6, 1, 8), { NULL } };

static int bs_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct bo_static *b = calloc(1, sizeof *b);
	if (!b)
		return SKIPPER_POLICY_NOMEM;
	b->host = host;
	b->ctx = ctx;
	b->prof_max_draft = 32;
	keys_defaults(bs_keys, b);
	keys_defaults(bs_ssd_keys, &b->k);
	cost_rule_init(&b->econ);
	*state = b;
	return SKIPPER_POLICY_OK;
}

static void bs_destroy(void *state)
{
	struct bo_static *b = state;
	if (!b)
		return;
	keys_free(bs_keys, b);
	free(b->attn);
	free(b->mlp);
	free(b);
}

static int bs_config(void *state, const char *key, const char *value)
{
	struct bo_static *b = state;
	int rc = keys_config(bs_keys, b, b->host, b->ctx, key, value);
	if (rc == SKIPPER_POLICY_UNKNOWN_KEY)
		rc = keys_config(bs_ssd_keys, &b->k, b->host, b->ctx, key, value);
	return rc == SKIPPER_POLICY_UNKNOWN_KEY ? keys_config(cost_rule_keys, &b->econ, b->host, b->ctx, key, value) : rc;
}

static const char *profile_file(const struct bo_static *b)
{
	return b->profile ? b->profile : b->host->profile_path(b->ctx);
}

static int load_profile(struct bo_static *b)
{
	const struct skipper_host *h = b->host;
	const char *path = profile_file(b), *sec = b->section ? b->section : BS_SECTION;
	struct skipper_profile *p;
	int ra, rm = SKIPPER_POLICY_OK, rc;

	if ((rc = h->profile_read(b->ctx, path, &p)))
		return rc; /* model hash / layer count mismatch is reported by the host */
	b->prof_max_draft = 32;
	if ((rc = ssd_profile_method(h, b->ctx, p, path, "bo-static")) ||
	    (rc = ssd_profile_max_draft(h, b->ctx, p, path, sec, &b->prof_max_draft))) {
		h->profile_free(b->ctx, p);
		return rc;
	}
	ra = h->profile_get_mask(b->ctx, p, sec, "attn", b->attn);
	if (ra == SKIPPER_POLICY_OK || ra == SKIPPER_POLICY_UNKNOWN_KEY)
		rm = h->profile_get_mask(b->ctx, p, sec, "mlp", b->mlp);
	h->profile_free(b->ctx, p);
	if (ra == SKIPPER_POLICY_UNKNOWN_KEY && rm == SKIPPER_POLICY_UNKNOWN_KEY) {
		h->set_error(b->ctx, "%s: no attn or mlp key in [%s] (write one with skipper calibrate --policy bo-static)",
		             path, sec);
		return SKIPPER_POLICY_ERROR;
	}
	if (ra < 0 && ra != SKIPPER_POLICY_UNKNOWN_KEY)
		return ra;
	return rm < 0 && rm != SKIPPER_POLICY_UNKNOWN_KEY ? rm : SKIPPER_POLICY_OK;
}

static int bs_config_complete(void *state)
{
	struct bo_static *b = state;
	b->n_layer = b->host->n_layer;
	econ_adaptive_init(&b->ad, b->k.threshold, b->k.alpha, b->k.eps, b->k.beta1, b->k.beta2);
	if (b->n_layer <= 0)
		return SKIPPER_POLICY_OK;
	b->attn = calloc((size_t)b->n_layer, 1);
	b->mlp = calloc((size_t)b->n_layer, 1);
	if (!b->attn || !b->mlp)
		return SKIPPER_POLICY_NOMEM;
	/* No profile is fine for calibrate (it writes one); a request without
	 * one is refused in begin(), where the message can say why. */
	return profile_file(b) ? load_profile(b) : SKIPPER_POLICY_OK;
}

static int bs_begin(void *state, const struct skipper_request *req)
{
	struct bo_static *b = state;
	(void)req;
	if (!profile_file(b)) {
		b->host->set_error(b->ctx, "no skip profile: set profile = FILE in [bo-static] or [policy] profile "
		                           "(skipper calibrate --policy bo-static writes one)");
		return SKIPPER_POLICY_ERROR;
	}
	econ_adaptive_begin(&b->ad);
	return SKIPPER_POLICY_OK;
}

static int bs_select_draft(void *state, struct skipper_plan *plan)
{
	struct bo_static *b = state;
	return ssd_plan(b->host, b->ctx, plan, b->n_layer, b->attn, b->mlp, b->k.max_draft, b->prof_max_draft,
	                &b->econ);
}

static int bs_should_exit(void *state, const struct skipper_step *step)
{
	struct bo_static *b = state;
	return ssd_should_exit(&b->k, &b->ad, step);
}

static int bs_on_accept(void *state, const struct skipper_verdict *v)
{
	struct bo_static *b = state;
	ssd_on_accept(&b->k, &b->ad, &b->econ, v);
	return SKIPPER_POLICY_OK;
}

static int bs_calibrate(void *state, const struct skipper_calibrate *c)
{
	struct bo_static *b = state;
	const struct skipper_host *h = b->host;
	struct ssd_search s;
	struct ssd_result res;
	struct skipper_profile *p = NULL;
	const char **pr;
	char *journal;
	int *idx, n, rc;

	if (b->n_layer <= 0 || c->n_prompts <= 0) {
		h->set_error(b->ctx, "calibrate needs a model and at least one prompt");
		return SKIPPER_POLICY_ERROR;
	}
	idx = malloc((size_t)c->n_prompts * sizeof *idx);
	pr = malloc((size_t)c->n_prompts * sizeof *pr);
	journal = ssd_sibling_path(c->output, ".search");
	if (!idx || !pr || !journal) {
		free(idx), free(pr), free(journal);
		return SKIPPER_POLICY_NOMEM;
	}
	n = ssd_pick(c->n_prompts, b->k.calib_prompts, c->seed, idx);
	for (int i = 0; i < n; i++)
		pr[i] = c->prompts[idx[i]];
	ssd_search_setup(&s, &b->k, c);
	s.n_prompts = n;
	s.prompts = pr;
	s.journal = journal;
	rc = ssd_search_run(h, b->ctx, &s, b->attn, b->mlp, &res);
	if (!rc)
		rc = h->profile_new(b->ctx, "bo-static", &p);
	if (!rc)
		rc = ssd_record(h, b->ctx, p, "mask", "calibration", &s, &res, b->attn, b->mlp);
	if (!rc)
		rc = h->profile_write(b->ctx, p, c->output);
	if (!rc)
		h->log(b->ctx, SKIPPER_LOG_INFO, "bo-static: %d evaluations in %.1f s, best %.1f tok/s (plain decoding %.1f)",
		       res.evaluations, res.seconds, res.tokens_per_s, res.ar_tokens_per_s);
	if (p)
		h->profile_free(b->ctx, p);
	free(idx), free(pr), free(journal);
	return rc;
}

static const struct skipper_policy bo_static_policy = {
	.name = "bo-static",
	.version = "1.1.0",
	.description = "Draft & Verify: BO-searched static skip set, adaptive draft exit",
	.create = bs_create,
	.config = bs_config,
	.config_complete = bs_config_complete,
	.destroy = bs_destroy,
	.begin = bs_begin,
	.select_draft = bs_select_draft,
	.should_exit = bs_should_exit,
	.on_accept = bs_on_accept,
	.calibrate = bs_calibrate,
};

/* config_help from the key tables, when the plugin is loaded */
static void bs_help(struct skipper_policy *d)
{
	static char help[4096];
	keys_help(help, sizeof help, (const struct key_spec *const[]){ bs_keys, bs_ssd_keys, cost_rule_keys, NULL });
	d->config_help = help;
}

SKIPPER_POLICY_REGISTER_WITH(bo_static_policy, bs_help)
