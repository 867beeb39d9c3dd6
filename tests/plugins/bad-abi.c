/* One source, several broken (or merely old) descriptors, chosen by -D.
 * They set the ABI fields by hand, as plugins from before
 * SKIPPER_POLICY_REGISTER filled them did. */
#include <stddef.h>

#include "skipper/policy.h"

__attribute__((unused)) static int t_create(const struct skipper_host *host, void *ctx, void **state)
{
	*state = NULL;
	return SKIPPER_POLICY_OK;
}

static void t_destroy(void *state)
{
}

/* Lies beyond an old plugin's struct_size: the host must never see it. */
static int t_select(void *state, struct skipper_plan *plan)
{
	return SKIPPER_POLICY_ERROR;
}

static const struct skipper_policy desc = {
#ifdef BAD_MAJOR
	.abi_major = SKIPPER_POLICY_ABI_MAJOR + 98,
#else
	.abi_major = SKIPPER_POLICY_ABI_MAJOR,
#endif
#if defined(BAD_MINOR)
	.abi_minor = SKIPPER_POLICY_ABI_MINOR + 1,
#elif defined(OLD_MINOR)
	.abi_minor = 1, /* from before the thread model */
#else
	.abi_minor = SKIPPER_POLICY_ABI_MINOR,
#endif
#if defined(OLD_SHORT)
	/* a plugin from before the hooks existed: descriptor ends at destroy */
	.struct_size = offsetof(struct skipper_policy, destroy) + sizeof(void (*)(void *)),
#elif defined(OLD_MINOR)
	.struct_size = offsetof(struct skipper_policy, thread_model),
#elif defined(TINY)
	.struct_size = 16,
#else
	.struct_size = sizeof(struct skipper_policy),
#endif
	.name = "oldie",
	.version = "0.1",
	.description = "test descriptor",
#ifndef NO_CREATE
	.create = t_create,
#endif
	.destroy = t_destroy,
	.select_draft = t_select,
#ifdef BAD_THREADS
	.thread_model = 7,
#endif
};

SKIPPER_POLICY_REGISTER(desc)
