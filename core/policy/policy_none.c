/* The built-in `none` policy: never drafts, so every round is one plain
 * full-model step. It is the baseline every speedup is measured against. */
#include <stdlib.h>

#include "policy_none.h"

static int none_create(const struct skipper_host *host, void *ctx, void **state)
{
	*state = NULL;
	return SKIPPER_POLICY_OK;
}

static void none_destroy(void *state) {}

const struct skipper_policy skipper_policy_none = {
	.abi_major = SKIPPER_POLICY_ABI_MAJOR,
	.abi_minor = SKIPPER_POLICY_ABI_MINOR,
	.struct_size = sizeof(struct skipper_policy),
	.name = "none",
	.version = PACKAGE_VERSION,
	.description = "plain autoregressive decoding (the baseline)",
	.config_help = "",
	.create = none_create,
	.destroy = none_destroy,
};
