/* A third-party policy, built out of tree against the installed
 * <skipper/policy.h> and skipper-policy.pc only: it skips the MLP of every
 * `stride`-th layer from `first` on, drafts up to `draft` tokens and stops
 * early when the draft is unsure. */
#include <stdlib.h>
#include <string.h>

#include <skipper/policy.h>

struct example {
	const struct skipper_host *host;
	void *ctx;
	int64_t stride, first, draft;
	double min_prob;
	int rounds;
};

static int ex_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct example *e = calloc(1, sizeof *e);
	if (!e)
		return SKIPPER_POLICY_NOMEM;
	e->host = host;
	e->ctx = ctx;
	e->stride = 2;
	e->first = 1;
	e->draft = 3;
	e->min_prob = 0.3;
	*state = e;
	return SKIPPER_POLICY_OK;
}

static void ex_destroy(void *state)
{
	free(state);
}

static int ex_config(void *state, const char *key, const char *value)
{
	struct example *e = state;
	if (strcmp(key, "stride") == 0)
		return e->host->parse_int(e->ctx, value, 1, 64, &e->stride);
	if (strcmp(key, "first") == 0)
		return e->host->parse_int(e->ctx, value, 0, 4095, &e->first);
	if (strcmp(key, "draft") == 0)
		return e->host->parse_int(e->ctx, value, 1, 16, &e->draft);
	if (strcmp(key, "min_prob") == 0)
		return e->host->parse_double(e->ctx, value, 0.0, 1.0, &e->min_prob);
	return SKIPPER_POLICY_UNKNOWN_KEY;
}

static int ex_select_draft(void *state, struct skipper_plan *plan)
{
	struct example *e = state;
	for (int64_t l = e->first; l < plan->n_layer; l += e->stride)
		plan->skip_mlp[l] = 1;
	if (plan->max_draft > e->draft)
		plan->max_draft = (int)e->draft;
	return SKIPPER_POLICY_OK;
}

static int ex_should_exit(void *state, const struct skipper_step *step)
{
	struct example *e = state;
	return step->prob < e->min_prob ? SKIPPER_DRAFT_STOP : SKIPPER_DRAFT_CONTINUE;
}

static int ex_on_accept(void *state, const struct skipper_verdict *v)
{
	struct example *e = state;
	e->rounds++;
	return SKIPPER_POLICY_OK;
}

static int ex_end(void *state, const struct skipper_stats *st)
{
	struct example *e = state;
	e->host->log(e->ctx, SKIPPER_LOG_INFO, "example: %d rounds, %d/%d accepted", e->rounds, st->accepted,
	             st->drafted);
	return SKIPPER_POLICY_OK;
}

static const struct skipper_policy example_policy = {
	.abi_major = SKIPPER_POLICY_ABI_MAJOR,
	.abi_minor = SKIPPER_POLICY_ABI_MINOR,
	.struct_size = sizeof(struct skipper_policy),
	.name = "example",
	.version = "0.1.0",
	.description = "third-party example: skip every stride-th MLP",
	.config_help = "stride = N    skip the MLP of every N-th layer (default 2)\n"
	               "first = L     first layer skipped (default 1)\n"
	               "draft = K     draft length (default 3)\n"
	               "min_prob = P  stop drafting below this probability (default 0.3)\n",
	.create = ex_create,
	.config = ex_config,
	.destroy = ex_destroy,
	.select_draft = ex_select_draft,
	.should_exit = ex_should_exit,
	.on_accept = ex_on_accept,
	.end = ex_end,
};

SKIPPER_POLICY_REGISTER(example_policy)
