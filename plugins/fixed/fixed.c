/* `fixed`: one skip mask for every round, from its INI section or a skip
 * profile; a fixed draft length or a confidence exit; optionally a top-k
 * "spine + leaf siblings" tree so tree verification can be exercised
 * without a search policy. With the host's cost curve (costs = true) the
 * draft length is a cap: each round drafts the length that maximises the
 * expected tokens per step for the measured acceptance (none when no length
 * beats a plain step), and a tree keeps only the siblings whose expected
 * gain pays for their verification rows. See skipper-policy-fixed(5). */
#include <stdlib.h>
#include <string.h>

#include "common/drafting/costrule.h"
#include "common/drafting/spine.h"
#include "common/keys/keys.h"
#include "econ/econ.h"
#include "skipper/policy.h"

#define FIXED_MAX_DRAFT 32
#define FIXED_MAX_TREE 8
/* draft lengths by the keys' absence: draft_length without threshold, max_draft with */
#define FIXED_DRAFT_LENGTH 4
#define FIXED_THRESHOLD_CAP 8
#define FIXED_SECTION "mask"

struct fixed {
	const struct skipper_host *host;
	void *ctx;

	/* configuration as given; lists are parsed once the model is known */
	char *attn_s, *mlp_s;
	char *profile;      /* profile = FILE */
	char *section;      /* profile_section (NULL: FIXED_SECTION) */
	int draft_length;   /* 0 = unset */
	int max_draft;      /* 0 = unset */
	double threshold;   /* 0 = off */
	int tree;           /* top-k candidates per depth; <= 1 = chain */

	int n_layer;
	uint8_t *attn, *mlp;
	int cap;            /* effective draft cap */
	struct cost_rule econ;
};

#define FX(member) offsetof(struct fixed, member)
static const struct key_spec fixed_keys[] = {
	{ "attn", KEY_LAYERS, FX(attn_s), .help = "attention sub-layers to skip, e.g. 3,5,7-12" },
	{ "mlp", KEY_LAYERS, FX(mlp_s), .help = "MLP sub-layers to skip" },
	{ "profile", KEY_STRING, FX(profile), .value = "FILE", .help = "read the mask from a skip profile instead" },
	{ "profile_section", KEY_STRING, FX(section), .value = "S", .help = "profile section holding attn/mlp",
	  .dflt_text = FIXED_SECTION },
	{ "draft_length", KEY_INT, FX(draft_length), 0, 1, FIXED_MAX_DRAFT, "K",
	  "tokens drafted per round, at most with costs", KEY_TEXT(FIXED_DRAFT_LENGTH) },
	{ "threshold", KEY_DOUBLE, FX(threshold), 0, 0, 1, "P", "stop drafting when the draft token's prob < P; 0 = off" },
	{ "max_draft", KEY_INT, FX(max_draft), 0, 1, FIXED_MAX_DRAFT, "K", "draft cap with threshold",
	  KEY_TEXT(FIXED_THRESHOLD_CAP) },
	{ "tree", KEY_INT, FX(tree), 0, 0, FIXED_MAX_TREE, "K", "verify the top-K candidates at each depth; 0 = chain" },
	{ NULL },
};

static int fixed_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct fixed *f = calloc(1, sizeof *f);
	if (!f)
		return SKIPPER_POLICY_NOMEM;
	f->host = host;
	f->ctx = ctx;
	keys_defaults(fixed_keys, f);
	cost_rule_init(&f->econ);
	*state = f;
	return SKIPPER_POLICY_OK;
}

static void fixed_destroy(void *state)
{
	struct fixed *f = state;
	if (!f)
		return;
	keys_free(fixed_keys, f);
	free(f->attn);
	free(f->mlp);
	free(f);
}

static int fixed_config(void *state, const char *key, const char *value)
{
	struct fixed *f = state;
	int rc = keys_config(fixed_keys, f, f->host, f->ctx, key, value);
	return rc == SKIPPER_POLICY_UNKNOWN_KEY ? keys_config(cost_rule_keys, &f->econ, f->host, f->ctx, key, value) : rc;
}

static int load_masks(struct fixed *f)
{
	const struct skipper_host *h = f->host;
	const char *path = f->profile;
	const char *section = f->section ? f->section : FIXED_SECTION;
	struct skipper_profile *p;
	int rc;

	if (f->attn_s || f->mlp_s || (!path && !h->profile_path(f->ctx))) {
		if ((rc = h->parse_layers(f->ctx, f->attn_s ? f->attn_s : "", f->attn, f->n_layer)))
			return rc;
		return h->parse_layers(f->ctx, f->mlp_s ? f->mlp_s : "", f->mlp, f->n_layer);
	}
	if (!path)
		path = h->profile_path(f->ctx);
	if ((rc = h->profile_read(f->ctx, path, &p)))
		return rc;
	/* An absent key is an empty list; a section with neither is a mistake. */
	int ra = h->profile_get_mask(f->ctx, p, section, "attn", f->attn);
	int rm = ra < 0 && ra != SKIPPER_POLICY_UNKNOWN_KEY ? ra : h->profile_get_mask(f->ctx, p, section, "mlp", f->mlp);
	h->profile_free(f->ctx, p);
	if (ra < 0 && ra != SKIPPER_POLICY_UNKNOWN_KEY)
		return ra;
	if (rm < 0 && rm != SKIPPER_POLICY_UNKNOWN_KEY)
		return rm;
	if (ra == SKIPPER_POLICY_UNKNOWN_KEY && rm == SKIPPER_POLICY_UNKNOWN_KEY) {
		h->set_error(f->ctx, "%s: no attn or mlp key in [%s]", path, section);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int fixed_config_complete(void *state)
{
	struct fixed *f = state;
	const struct skipper_host *h = f->host;

	if (f->profile && (f->attn_s || f->mlp_s)) {
		h->set_error(f->ctx, "give either profile or attn/mlp, not both");
		return SKIPPER_POLICY_ERROR;
	}
	if (f->section && (f->attn_s || f->mlp_s)) {
		h->set_error(f->ctx, "profile_section selects a profile section; it does not apply with attn/mlp");
		return SKIPPER_POLICY_ERROR;
	}
	if (f->section && !f->profile && !h->profile_path(f->ctx)) {
		h->set_error(f->ctx, "profile_section needs a profile (profile = FILE or [policy] profile)");
		return SKIPPER_POLICY_ERROR;
	}
	if (f->threshold > 0 && f->draft_length) {
		h->set_error(f->ctx, "draft_length and threshold exclude each other: with threshold, cap the "
		                     "draft with max_draft");
		return SKIPPER_POLICY_ERROR;
	}
	if (f->threshold <= 0 && f->max_draft) {
		h->set_error(f->ctx, "max_draft applies with threshold; without it use draft_length");
		return SKIPPER_POLICY_ERROR;
	}
	f->cap = f->threshold > 0 ? (f->max_draft ? f->max_draft : FIXED_THRESHOLD_CAP)
	                          : (f->draft_length ? f->draft_length : FIXED_DRAFT_LENGTH);

	f->n_layer = h->n_layer;
	if (f->n_layer <= 0)
		return SKIPPER_POLICY_OK; /* configuration check: no model, nothing to resolve */
	f->attn = calloc((size_t)f->n_layer, 1);
	f->mlp = calloc((size_t)f->n_layer, 1);
	if (!f->attn || !f->mlp)
		return SKIPPER_POLICY_NOMEM;
	return load_masks(f);
}

static int fixed_refine_needs(void *state, struct skipper_needs *needs)
{
	struct fixed *f = state;
	if (f->tree > 1) {
		needs->flags |= SKIPPER_NEED_TOPK;
		needs->top_k = f->tree;
	}
	return SKIPPER_POLICY_OK;
}

static int fixed_select_draft(void *state, struct skipper_plan *plan)
{
	struct fixed *f = state;
	if (!f->attn || plan->n_layer != f->n_layer) {
		f->host->set_error(f->ctx, "select_draft: masks for %d layers, plan has %d", f->n_layer, plan->n_layer);
		return SKIPPER_POLICY_ERROR;
	}
	memcpy(plan->skip_attn, f->attn, (size_t)f->n_layer);
	memcpy(plan->skip_mlp, f->mlp, (size_t)f->n_layer);
	if (plan->max_draft > f->cap)
		plan->max_draft = f->cap;
	cost_rule_plan(&f->econ, f->host, f->ctx, plan);
	return SKIPPER_POLICY_OK;
}

static int fixed_should_exit(void *state, const struct skipper_step *step)
{
	struct fixed *f = state;
	return f->threshold > 0 && step->prob < f->threshold ? SKIPPER_DRAFT_STOP : SKIPPER_DRAFT_CONTINUE;
}

/* Spine + leaf siblings: depth j holds the chain token and up to tree - 1
 * other top-k candidates of draft step j, all children of chain node j-1
 * (or the root). With costs only those whose expected gain pays for their
 * row (econ_tree_widths); without, all tree - 1. */
static int fixed_verify(void *state, const struct skipper_draft *d, struct skipper_tree *t)
{
	struct fixed *f = state;
	int cap[SPINE_MAX_DEPTH], extra[SPINE_MAX_DEPTH], n = d->n < SPINE_MAX_DEPTH ? d->n : SPINE_MAX_DEPTH;

	if (f->tree <= 1)
		return SKIPPER_POLICY_OK;
	for (int j = 0; j < n; j++)
		cap[j] = extra[j] = f->tree - 1;
	if (f->econ.costs) {
		struct skipper_draft head = *d;
		head.n = n;
		if (econ_tree_widths(f->econ.costs, f->econ.last_d, &head, cap, extra) == 0)
			return SKIPPER_POLICY_OK; /* no sibling pays for its row: the chain */
	}
	spine_tree(d, extra, n, t);
	return SKIPPER_POLICY_OK;
}

static int fixed_on_accept(void *state, const struct skipper_verdict *v)
{
	struct fixed *f = state;
	cost_rule_verdict(&f->econ, v);
	return SKIPPER_POLICY_OK;
}

static const struct skipper_policy fixed_policy = {
	.name = "fixed",
	.version = "1.1.0",
	.description = "one hand-chosen skip mask; fixed draft length or confidence exit",
	.create = fixed_create,
	.config = fixed_config,
	.config_complete = fixed_config_complete,
	.refine_needs = fixed_refine_needs,
	.destroy = fixed_destroy,
	.select_draft = fixed_select_draft,
	.should_exit = fixed_should_exit,
	.verify = fixed_verify,
	.on_accept = fixed_on_accept,
};

/* config_help from the key tables, when the plugin is loaded */
static void fixed_help(struct skipper_policy *d)
{
	static char help[2048];
	keys_help(help, sizeof help, (const struct key_spec *const[]){ fixed_keys, cost_rule_keys, NULL });
	d->config_help = help;
}

SKIPPER_POLICY_REGISTER_WITH(fixed_policy, fixed_help)
