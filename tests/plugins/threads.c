/* A plugin with state shared by its instances (a global count of the calls
 * inside it): every call checks that it is alone in the plugin, holding on
 * long enough for another thread to come in, and the hooks fail once any
 * call was not. Declares SKIPPER_THREAD_MODEL_SERIALIZE_ALL, under which
 * the host must never let two calls in; built with -DPARALLEL it keeps the
 * default model, the control that shows the check sees concurrent calls. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "skipper/policy.h"

static atomic_int inside;   /* calls in the plugin now, all instances */
static atomic_int overlaps; /* calls that found another one inside */

struct threads {
	const struct skipper_host *host;
	void *ctx;
};

static void visit(void)
{
	struct timespec pause = { 0, 200000 };
	int crowded = atomic_fetch_add(&inside, 1) != 0;
	nanosleep(&pause, NULL);
	crowded |= atomic_load(&inside) != 1;
	atomic_fetch_sub(&inside, 1);
	if (crowded)
		atomic_fetch_add(&overlaps, 1);
}

static int checked(struct threads *t)
{
	visit();
	if (atomic_load(&overlaps)) {
		t->host->set_error(t->ctx, "%d calls found another one inside the plugin", atomic_load(&overlaps));
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int th_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct threads *t = calloc(1, sizeof *t);
	visit();
	if (!t)
		return SKIPPER_POLICY_NOMEM;
	t->host = host;
	t->ctx = ctx;
	*state = t;
	return SKIPPER_POLICY_OK;
}

static int th_complete(void *state)
{
	return checked(state);
}

static void th_destroy(void *state)
{
	visit();
	free(state);
}

static int th_select(void *state, struct skipper_plan *plan)
{
	plan->max_draft = 1;
	return checked(state);
}

static int th_exit(void *state, const struct skipper_step *step)
{
	int rc = checked(state);
	return rc < 0 ? rc : SKIPPER_DRAFT_CONTINUE;
}

static int th_accept(void *state, const struct skipper_verdict *v)
{
	return checked(state);
}

static const struct skipper_policy desc = {
	.name = "threads",
	.version = "1",
	.description = "test: detects concurrent calls",
	.create = th_create,
	.config_complete = th_complete,
	.destroy = th_destroy,
	.select_draft = th_select,
	.should_exit = th_exit,
	.on_accept = th_accept,
#ifndef PARALLEL
	.thread_model = SKIPPER_THREAD_MODEL_SERIALIZE_ALL,
#endif
};

SKIPPER_POLICY_REGISTER(desc)
