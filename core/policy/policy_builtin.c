/* The built-in policies. Neither drafts with skipped layers: `none` makes
 * every round one plain full-model step (the baseline every speedup is
 * measured against); under `lookup` the engine's context lookup proposes
 * the drafts, which the engine sizes and verifies itself. */
#include <stdlib.h>

#include "policy_builtin.h"

static int builtin_create(const struct skipper_host *host, void *ctx, void **state)
{
	*state = NULL;
	return SKIPPER_POLICY_OK;
}

static void builtin_destroy(void *state) {}

const struct skipper_policy skipper_policy_none = {
	.name = "none",
	.version = PACKAGE_VERSION,
	.description = "plain autoregressive decoding (the baseline)",
	.config_help = "",
	.create = builtin_create,
	.destroy = builtin_destroy,
};

const struct skipper_policy skipper_policy_lookup = {
	.name = "lookup",
	.version = PACKAGE_VERSION,
	.description = "context lookup: drafts copied from the prompt and output, no layer skipping",
	.config_help = "min_ngram = 1   shortest suffix n-gram to match (1..8)\n"
	               "max_ngram = 4   longest suffix n-gram to match, tried first (1..8)\n"
	               "max_draft = 16  most tokens proposed per round (1..32)\n"
	               "branches = 8    most continuations verified together as a tree (1..8)\n"
	               "ngrams = auto   corpus n-gram file (auto: the model's shipped one; off; a path)\n",
	.create = builtin_create,
	.destroy = builtin_destroy,
};
