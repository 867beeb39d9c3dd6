/* The services a policy's host gets from the session (skipper-policy(3)):
 * the model's hash and the profile found for it, the policy's log lines,
 * and the calibration runs that need whole prompts with the chat template
 * (host->trial, host->embed_prompt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "policy/policy_builtin.h"
#include "policy/profile.h"
#include "session.h"

static const char *svc_model_sha256(void *ctx)
{
	struct skipper_error err = { 0 };
	return session_model_sha256(ctx, &err);
}

static char *svc_find_profile(void *ctx, const char *method)
{
	struct skipper_session *s = ctx;
	char *path;

	if (s->no_profile_search || !(path = session_find_profile(s, method)))
		return NULL;
	session_log(s, SKIPPER_LOG_INFO, "policy %s: profile %s (found for this model)", method, path);
	return path;
}

static void svc_log(void *ctx, int level, const char *policy, const char *msg)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	struct skipper_session *s = ctx;
	session_log(s, level, "policy %s: %s: %s", policy, names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

/* host->trial's policy: the struct's members as [trial] keys. */
static int trial_config(const struct skipper_trial *t, int n_layer, struct skipper_config **cfg,
                        struct skipper_error *err)
{
	char layers[2][4096], set[4200];
	const uint8_t *masks[2] = { t->skip_attn, t->skip_mlp };
	int rc;

	for (int i = 0; i < 2; i++) {
		uint8_t none = 0;
		if (skipper_layers_format(masks[i] ? masks[i] : &none, masks[i] ? n_layer : 0, layers[i], sizeof layers[i]) >=
		    (int)sizeof layers[i])
			return skipper_fail(err, SKIPPER_ERR_ARG, "trial: a skip list of %d layers is too long", n_layer);
	}
	if ((rc = skipper_config_new(cfg, err)))
		return rc;
	const char *keys[][2] = { { "attn", layers[0] }, { "mlp", layers[1] } };
	for (int i = 0; i < 2 && !rc; i++) {
		snprintf(set, sizeof set, "trial.%s=%s", keys[i][0], keys[i][1]);
		rc = skipper_config_set(*cfg, set, err);
	}
	const struct {
		const char *key;
		double v;
	} num[] = {
		{ "max_draft", t->max_draft > 0 ? t->max_draft : 4 },
		{ "threshold", t->threshold },
		{ "adaptive", t->adaptive != 0 },
		{ "target_alpha", t->target_alpha > 0 ? t->target_alpha : 0.9 },
		{ "epsilon", t->epsilon > 0 ? t->epsilon : 0.01 },
		{ "beta1", t->beta1 > 0 ? t->beta1 : 0.5 },
		{ "beta2", t->beta2 > 0 ? t->beta2 : 0.9 },
	};
	for (size_t i = 0; i < sizeof num / sizeof num[0] && !rc; i++) {
		snprintf(set, sizeof set, "trial.%s=%.17g", num[i].key, num[i].v);
		rc = skipper_config_set(*cfg, set, err);
	}
	return rc;
}

/* SSD (or plain) decoding of whole prompts with a fixed mask, greedy,
 * with the guard off: a trial measures the mask itself (a guard that
 * paused a slow mask would hide how slow it is, and would make the drafted
 * and accepted counts, the objective, depend on the machine's load). */
static int svc_trial(void *ctx, const struct skipper_trial *t, struct skipper_trial_result *r,
                     struct skipper_error *err)
{
	struct skipper_session *s = ctx;
	/* the draft head of the session's runs: a set pays or not with it */
	struct skipper_engine_opts o = { .no_guard = 1, .draft_vocab = s->draft_ids, .n_draft_vocab = s->n_draft_ids };
	struct skipper_policy_env env = { .n_layer = s->model->view.hp.n_layer, .n_embd = s->model->view.hp.n_embd,
		                          .n_vocab = s->model->view.hp.n_vocab, .n_ctx = s->be->n_ctx,
		                          .model_name = s->model->view.name, .seed = s->gen.seed };
	struct skipper_gen_params gp = s->gen;
	struct skipper_config *cfg = NULL;
	struct skipper_engine *e = NULL;
	int rc = SKIPPER_OK;

	memset(r, 0, sizeof *r);
	gp.sampling.temperature = 0;
	if (t->max_tokens > 0)
		gp.max_tokens = t->max_tokens;
	if (!t->autoregressive) {
		session_bind_services(s, &env);
		if ((rc = trial_config(t, s->model->view.hp.n_layer, &cfg, err)) ||
		    (rc = skipper_policy_load_builtin(&skipper_policy_trial, &o.lib, err)))
			goto out;
		o.env = &env;
		o.cfg = cfg;
	}
	if ((rc = skipper_engine_new(s->be, s->tok, &o, &e, err)))
		goto out;
	for (int i = 0; i < t->n_prompts && !rc; i++) {
		struct skipper_run_stats st;
		int32_t *ids = NULL;
		size_t n = 0;
		if ((rc = skipper_session_prompt_tokens(s, t->prompts[i], &ids, &n, err))) {
			skipper_fail_prefix(err, "trial: prompt %d", i);
			break;
		}
		rc = skipper_engine_generate(e, ids, (int)n, &gp, NULL, NULL, &st, err);
		free(ids);
		r->n_generated += st.n_generated;
		r->seconds += st.t_total - st.t_prefill;
		r->rounds += st.rounds;
		r->drafted += st.drafted;
		r->accepted += st.accepted;
		if (!rc && s->hooks.progress && s->hooks.progress(s->hooks.ctx, NULL, 0, 0, 0))
			rc = skipper_fail(err, SKIPPER_ERR_INTERRUPTED, "interrupted");
	}
	/* decode speed as everywhere: each prompt's first token is the prefill's */
	if (r->seconds > 0 && r->n_generated > t->n_prompts)
		r->tokens_per_s = (r->n_generated - t->n_prompts) / r->seconds;
	r->alpha = r->drafted ? (double)r->accepted / r->drafted : 0;
	r->mean_accepted = r->rounds ? (double)(r->n_generated - t->n_prompts) / r->rounds : 1.0;
out:
	skipper_engine_free(e);
	skipper_config_free(cfg);
	return rc;
}

static int svc_embed_prompt(void *ctx, const char *text, float *out, struct skipper_error *err)
{
	struct skipper_session *s = ctx;
	struct skipper_engine *e = NULL;
	int32_t *ids = NULL;
	size_t n = 0;
	int rc;

	if ((rc = skipper_session_prompt_tokens(s, text, &ids, &n, err)))
		return skipper_fail_prefix(err, "embed_prompt");
	if (!(rc = skipper_engine_new(s->be, s->tok, NULL, &e, err)))
		rc = skipper_engine_prompt_mean(e, ids, (int)n, out, err);
	skipper_engine_free(e);
	free(ids);
	return rc;
}

void session_bind_services(struct skipper_session *s, struct skipper_policy_env *env)
{
	env->session = s;
	env->model_sha256 = svc_model_sha256;
	env->find_profile = svc_find_profile;
	env->log = svc_log;
	env->log_level = SKIPPER_LOG_DEBUG; /* svc_log filters, so that the level can change later */
	env->trial = svc_trial;
	env->embed_prompt = svc_embed_prompt;
}
