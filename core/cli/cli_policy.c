/* Policy glue for the CLI. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_policy.h"
#include "engine/engine_services.h"
#include "base/error.h"
#include "hub_cli.h"
#include "policy/policy_builtin.h"
#include "model/quant.h"

static const struct skipper_policy *const builtins[] = { &skipper_policy_none, &skipper_policy_lookup, NULL };

struct cli_policy {
	struct skipper_policy_lib *lib;
	struct skipper_policy_instance *inst;
	struct skipper_policy_env env;
	struct cli_session *session;
	struct skipper_engine *engine;
	char sha[65];
	int have_sha;
	char *profile;        /* resolved [policy] profile, or the one found */
	int searched;         /* find_profile has looked */
};

void cli_policy_search(const struct skipper_config *cfg, struct skipper_policy_search *search)
{
	const char *dir = skipper_config_get(cfg, "policy", "plugin_dir");
	search->plugin_dir = dir && *dir ? dir : NULL;
	search->builtins = builtins;
}

int cli_policy_section_ok(const char *section, void *cfg)
{
	struct skipper_policy_search search;
	cli_policy_search(cfg, &search);
	return skipper_policy_exists(section, &search);
}

static const char *model_sha256(void *ctx)
{
	struct cli_policy *p = ctx;
	struct skipper_error err = { 0 };
	if (!p->have_sha) {
		if (skipper_model_sha256(p->session->model, p->sha, &err))
			return NULL;
		p->have_sha = 1;
	}
	return p->sha;
}

/* Looked for once, when the plugin first asks for its profile. */
static const char *find_profile(void *ctx)
{
	struct cli_policy *p = ctx;
	const char *sha, *method = skipper_policy_lib_desc(p->lib)->name;

	if (p->searched || p->session->no_profile_search)
		return p->profile;
	p->searched = 1;
	if (!(sha = model_sha256(ctx)) || !(p->profile = cli_find_profile(p->session, method, sha)))
		return NULL;
	if (p->env.log_level >= SKIPPER_LOG_INFO)
		fprintf(stderr, "skipper: policy %s: profile %s (found for this model)\n", method, p->profile);
	return p->profile;
}

static void log_line(void *ctx, int level, const char *policy, const char *msg)
{
	static const char *names[] = { "error", "warning", "info", "debug" };
	fprintf(stderr, "skipper: policy %s: %s: %s\n", policy, names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

/* Compute services are forwarded to the engine bound to the policy. */
static int svc_score_mask(void *ctx, const uint8_t *a, const uint8_t *m, const int32_t *t, int n, int start,
                          int32_t *out, struct skipper_error *err)
{
	return skipper_engine_score_mask(((struct cli_policy *)ctx)->engine, a, m, t, n, start, out, err);
}

static int svc_sublayer(void *ctx, int kind, int layer, int n_seq, int seq_len, float *states, const int32_t *pos,
                        int n_past, struct skipper_error *err)
{
	return skipper_engine_sublayer_forward(((struct cli_policy *)ctx)->engine, kind, layer, n_seq, seq_len, states,
	                                       pos, n_past, err);
}

static int svc_head(void *ctx, int n, const float *states, int32_t *ids, struct skipper_error *err)
{
	return skipper_engine_head_argmax(((struct cli_policy *)ctx)->engine, n, states, ids, err);
}

static int svc_time(void *ctx, int kind, int layer, int ctx_len, double *s, struct skipper_error *err)
{
	return skipper_engine_time_sublayer(((struct cli_policy *)ctx)->engine, kind, layer, ctx_len, s, err);
}

static int svc_costs(void *ctx, const struct skipper_costs **out, struct skipper_error *err)
{
	struct cli_policy *p = ctx;
	return cli_engine_costs(p->session, p->engine, out, err);
}

int cli_policy_open(struct cli_session *s, const struct skipper_config *cfg, const char *name,
                    struct cli_policy **out, struct skipper_error *err)
{
	struct skipper_policy_search search;
	struct cli_policy *p = calloc(1, sizeof *p);
	const char *prof = skipper_config_get(cfg, "policy", "profile");
	long seed = 0;
	int rc;

	if (!p)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	p->session = s;
	cli_policy_search(cfg, &search);
	if ((rc = skipper_policy_load(name, &search, &p->lib, err))) {
		free(p);
		return rc;
	}
	skipper_config_get_int(cfg, "generate", "seed", &seed, NULL);
	p->env.n_layer = s->model->view.hp.n_layer;
	p->env.n_embd = s->model->view.hp.n_embd;
	p->env.n_vocab = s->model->view.hp.n_vocab;
	p->env.n_ctx = s->be->n_ctx;
	p->env.model_name = s->model->view.name;
	p->env.model_sha256 = model_sha256;
	if (prof && strncmp(prof, "hub:", 4) == 0) {
		/* fetched (and signature-checked) through the hub cache */
		if (cli_hub_profile_path(cfg, prof, &p->profile) != EXIT_OK) {
			skipper_policy_unload(p->lib);
			free(p);
			return skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "[policy] profile = %s: not available", prof);
		}
		prof = p->profile;
	}
	p->env.profile_path = prof && *prof ? prof : NULL;
	p->env.find_profile = find_profile;
	p->env.seed = (uint64_t)seed;
	p->env.log = log_line;
	p->env.log_level = getenv("SKIPPER_DEBUG") ? SKIPPER_LOG_DEBUG : SKIPPER_LOG_WARN;
	p->env.score_mask = svc_score_mask;
	p->env.sublayer_forward = svc_sublayer;
	p->env.head_argmax = svc_head;
	p->env.time_sublayer = svc_time;
	p->env.trial = cli_trial;
	p->env.embed_prompt = cli_embed_prompt;
	p->env.costs = svc_costs;
	p->env.engine = p;
	if ((rc = skipper_policy_instance_new(p->lib, &p->env, cfg, &p->inst, err))) {
		cli_policy_close(p);
		return rc;
	}
	*out = p;
	return SKIPPER_OK;
}

struct cli_session *cli_policy_session(void *ctx) { return ((struct cli_policy *)ctx)->session; }

struct skipper_policy_instance *cli_policy_instance(struct cli_policy *p) { return p->inst; }

void cli_policy_bind_engine(struct cli_policy *p, struct skipper_engine *e) { p->engine = e; }

void cli_policy_show_info(struct cli_policy *p)
{
	/* the host reads the level at each message */
	if (p->env.log_level < SKIPPER_LOG_INFO)
		p->env.log_level = SKIPPER_LOG_INFO;
}

void cli_policy_close(struct cli_policy *p)
{
	if (!p)
		return;
	skipper_policy_instance_free(p->inst);
	skipper_policy_unload(p->lib);
	free(p->profile);
	free(p);
}
