/* The built-in `trial` policy behind host->trial (skipper-policy(3)): a
 * fixed skip set, drafted up to a fixed length, each round stopped where
 * the draft's top probability falls below a threshold, which the Self-SD
 * rule may move between rounds (bo-static's search runs its complete
 * method). The session makes one per trial from the struct skipper_trial
 * the plugin passed, as [trial] keys; it is not in the search path, so no
 * configuration can name it. */
#include <stdlib.h>
#include <string.h>

#include "econ/adaptive.h"
#include "policy_builtin.h"

struct trial {
	const struct skipper_host *host;
	void *ctx;
	uint8_t *attn, *mlp;       /* [n_layer] */
	int64_t max_draft;
	int adaptive;
	struct econ_adaptive exit; /* gamma: the exit threshold (0 = none); moves with adaptive */
};

static int trial_create(const struct skipper_host *host, void *ctx, void **state)
{
	struct trial *t = calloc(1, sizeof *t);
	int n = host->n_layer > 0 ? host->n_layer : 1;
	if (!t || !(t->attn = calloc((size_t)n, 1)) || !(t->mlp = calloc((size_t)n, 1))) {
		if (t)
			free(t->attn);
		free(t);
		return SKIPPER_POLICY_NOMEM;
	}
	t->host = host;
	t->ctx = ctx;
	t->max_draft = 4;
	econ_adaptive_init(&t->exit, 0, 0.9, 0.01, 0.5, 0.9);
	*state = t;
	return SKIPPER_POLICY_OK;
}

static void trial_destroy(void *state)
{
	struct trial *t = state;
	free(t->attn);
	free(t->mlp);
	free(t);
}

static int trial_config(void *state, const char *key, const char *value)
{
	struct trial *t = state;
	const struct skipper_host *h = t->host;
	if (!strcmp(key, "attn") || !strcmp(key, "mlp"))
		return h->parse_layers(t->ctx, value, !strcmp(key, "attn") ? t->attn : t->mlp, h->n_layer);
	if (!strcmp(key, "max_draft"))
		return h->parse_int(t->ctx, value, 1, 1024, &t->max_draft);
	if (!strcmp(key, "threshold"))
		return h->parse_double(t->ctx, value, 0, 1, &t->exit.gamma);
	if (!strcmp(key, "adaptive"))
		return h->parse_bool(t->ctx, value, &t->adaptive);
	if (!strcmp(key, "target_alpha"))
		return h->parse_double(t->ctx, value, 0, 1, &t->exit.alpha);
	if (!strcmp(key, "epsilon"))
		return h->parse_double(t->ctx, value, 0, 1, &t->exit.eps);
	if (!strcmp(key, "beta1"))
		return h->parse_double(t->ctx, value, 0, 1, &t->exit.beta1);
	if (!strcmp(key, "beta2"))
		return h->parse_double(t->ctx, value, 0, 1, &t->exit.beta2);
	return SKIPPER_POLICY_UNKNOWN_KEY;
}

static int trial_begin(void *state, const struct skipper_request *req)
{
	econ_adaptive_begin(&((struct trial *)state)->exit);
	return SKIPPER_POLICY_OK;
}

static int trial_select(void *state, struct skipper_plan *plan)
{
	struct trial *t = state;
	memcpy(plan->skip_attn, t->attn, (size_t)plan->n_layer);
	memcpy(plan->skip_mlp, t->mlp, (size_t)plan->n_layer);
	if (plan->max_draft > t->max_draft)
		plan->max_draft = (int)t->max_draft;
	return SKIPPER_POLICY_OK;
}

static int trial_exit(void *state, const struct skipper_step *step)
{
	const struct trial *t = state;
	return t->exit.gamma > 0 && step->top_probs[0] < t->exit.gamma ? SKIPPER_DRAFT_STOP : SKIPPER_DRAFT_CONTINUE;
}

static int trial_accept(void *state, const struct skipper_verdict *v)
{
	struct trial *t = state;
	if (t->adaptive)
		econ_adaptive_update(&t->exit, t->exit.rounds == 0, v->n_accepted, v->n_drafted);
	return SKIPPER_POLICY_OK;
}

const struct skipper_policy skipper_policy_trial = {
	.name = "trial",
	.version = PACKAGE_VERSION,
	.description = "a fixed skip set with a fixed or adaptive draft exit (host->trial's runs)",
	.create = trial_create,
	.config = trial_config,
	.destroy = trial_destroy,
	.begin = trial_begin,
	.select_draft = trial_select,
	.should_exit = trial_exit,
	.on_accept = trial_accept,
};
