/* "testpol": a well-formed policy whose behaviour the loader tests steer
 * through its INI keys, to exercise config errors and the hook checks. */
#include <stdlib.h>
#include <string.h>

#include "skipper/policy.h"

struct tp {
	const struct skipper_host *host;
	void *ctx;
	int fail_complete, draft, bad_tree, fail_begin;
};

static int tp_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct tp *t = calloc(1, sizeof *t);
	if (!t)
		return SKIPPER_POLICY_NOMEM;
	t->host = host;
	t->ctx = ctx;
	t->draft = 3;
	*state = t;
	return SKIPPER_POLICY_OK;
}

static void tp_destroy(void *state)
{
	free(state);
}

static int tp_config(void *state, const char *key, const char *value)
{
	struct tp *t = state;
	int64_t v;
	int rc;

	if (strcmp(key, "ok") == 0)
		return SKIPPER_POLICY_OK;
	if (strcmp(key, "speed") == 0) {
		if (strcmp(value, "fast") == 0)
			return SKIPPER_POLICY_OK;
		t->host->set_error(t->ctx, "speed must be 'fast', got '%s'", value);
		return SKIPPER_POLICY_ERROR;
	}
	if (strcmp(key, "fail_complete") == 0)
		return t->host->parse_bool(t->ctx, value, &t->fail_complete);
	if (strcmp(key, "fail_begin") == 0)
		return t->host->parse_bool(t->ctx, value, &t->fail_begin);
	if (strcmp(key, "bad_tree") == 0)
		return t->host->parse_bool(t->ctx, value, &t->bad_tree);
	if (strcmp(key, "draft") == 0) {
		if ((rc = t->host->parse_int(t->ctx, value, 0, 1000, &v)))
			return rc;
		t->draft = (int)v;
		return SKIPPER_POLICY_OK;
	}
	if (strcmp(key, "silent_error") == 0)
		return SKIPPER_POLICY_ERROR; /* no message: the host must still say something */
	return SKIPPER_POLICY_UNKNOWN_KEY;
}

static int tp_complete(void *state)
{
	struct tp *t = state;
	if (t->fail_complete) {
		t->host->set_error(t->ctx, "refusing to complete, as asked");
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int tp_begin(void *state, const struct skipper_request *req)
{
	struct tp *t = state;
	if (t->fail_begin) {
		t->host->set_error(t->ctx, "begin failed for a %d-token prompt", req->n_prompt);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int tp_select(void *state, struct skipper_plan *plan)
{
	struct tp *t = state;
	plan->max_draft = t->draft;
	for (int l = 0; l < plan->n_layer; l += 2)
		plan->skip_mlp[l] = 7; /* non-canonical true: the host normalises */
	return SKIPPER_POLICY_OK;
}

static int tp_should_exit(void *state, const struct skipper_step *step)
{
	return step->index >= 1 ? SKIPPER_DRAFT_STOP : SKIPPER_DRAFT_CONTINUE;
}

static int tp_verify(void *state, const struct skipper_draft *d, struct skipper_tree *tree)
{
	struct tp *t = state;
	tree->n = 2;
	tree->tokens[0] = d->tokens[0];
	tree->parent[0] = -1;
	tree->tokens[1] = 5;
	tree->parent[1] = t->bad_tree ? 1 : -1; /* a node may not be its own parent */
	return SKIPPER_POLICY_OK;
}

static const struct skipper_policy desc = {
	.name = "testpol",
	.version = "0.0.1",
	.description = "loader test policy",
	.config_help = "ok = ANY\nspeed = fast\n",
	.needs = SKIPPER_NEED_TOPK,
	.top_k = 200,
	.create = tp_create,
	.config = tp_config,
	.config_complete = tp_complete,
	.destroy = tp_destroy,
	.begin = tp_begin,
	.select_draft = tp_select,
	.should_exit = tp_should_exit,
	.verify = tp_verify,
};

SKIPPER_POLICY_REGISTER(desc)
