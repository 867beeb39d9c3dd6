/* The built-in `trial` policy behind host->trial (skipper-policy(3)): a
 * fixed skip set, drafted up to a fixed length, each round stopped where
 * the draft's top probability falls below a threshold, which the Self-SD
 * rule may move between rounds (bo-static's search runs its complete
 * method). The session makes one per trial from the struct skipper_trial
 * the plugin passed, as [trial] keys; it is not in the search path, so no
 * configuration can name it. */
#include <stdlib.h>
#include <string.h>

#include "policy_builtin.h"

struct trial {
	const struct skipper_host *host;
	void *ctx;
	uint8_t *attn, *mlp;       /* [n_layer] */
	int64_t max_draft;
	double threshold;          /* the exit threshold gamma (0 = none); moves with adaptive */
	int adaptive;
	double alpha, eps, beta1, beta2, ar; /* the Self-SD rule (skipper-policy-bo-static(5)) */
	int drafted;               /* this request has drafted (the rule's first round) */
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
	t->alpha = 0.9;
	t->eps = 0.01;
	t->beta1 = 0.5;
	t->beta2 = 0.9;
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
		return h->parse_double(t->ctx, value, 0, 1, &t->threshold);
	if (!strcmp(key, "adaptive"))
		return h->parse_bool(t->ctx, value, &t->adaptive);
	if (!strcmp(key, "target_alpha"))
		return h->parse_double(t->ctx, value, 0, 1, &t->alpha);
	if (!strcmp(key, "epsilon"))
		return h->parse_double(t->ctx, value, 0, 1, &t->eps);
	if (!strcmp(key, "beta1"))
		return h->parse_double(t->ctx, value, 0, 1, &t->beta1);
	if (!strcmp(key, "beta2"))
		return h->parse_double(t->ctx, value, 0, 1, &t->beta2);
	return SKIPPER_POLICY_UNKNOWN_KEY;
}

static int trial_begin(void *state, const struct skipper_request *req)
{
	((struct trial *)state)->drafted = 0;
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
	return t->threshold > 0 && step->top_probs[0] < t->threshold ? SKIPPER_DRAFT_STOP : SKIPPER_DRAFT_CONTINUE;
}

static int trial_accept(void *state, const struct skipper_verdict *v)
{
	struct trial *t = state;
	if (t->adaptive && v->n_drafted > 0) {
		double are = (double)v->n_accepted / v->n_drafted;
		t->ar = t->drafted ? t->beta1 * t->ar + (1 - t->beta1) * are : are;
		double tmp = t->ar <= t->alpha ? t->threshold + t->eps : t->threshold - t->eps;
		t->threshold = t->beta2 * t->threshold + (1 - t->beta2) * tmp;
		t->drafted = 1;
	}
	return SKIPPER_POLICY_OK;
}

const struct skipper_policy skipper_policy_trial = {
	.abi_major = SKIPPER_POLICY_ABI_MAJOR,
	.abi_minor = SKIPPER_POLICY_ABI_MINOR,
	.struct_size = sizeof(struct skipper_policy),
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
