/* Loading what a generation needs, in the order that fails fastest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "cli.h"
#include "cli_policy.h"
#include "base/error.h"
#include "hub_cli.h"

static int fail(struct skipper_error *err, int code)
{
	fprintf(stderr, "skipper: %s\n", err->msg);
	return code;
}

/* The models scripts/fetch-model.sh knows, by the names -m and [model] path
 * accept (keep the two lists equal; tests/t-cli.sh checks). */
static const struct { const char *name, *file; } known_models[] = {
	{ "smollm2-135m", SKIPPER_DEFAULT_MODEL },
	{ "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" },
	{ "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" },
};

/* Where fetch-model.sh puts FILE: $SKIPPER_CACHE_DIR/models, else the XDG
 * cache. malloc'ed. */
static char *cached_model_path(const char *file)
{
	char dir[4096], *path;
	if (cli_cache_dir(dir, sizeof dir, "models") || asprintf(&path, "%s/%s", dir, file) < 0)
		return NULL;
	return path;
}

/* A known model's cached file; an error naming the fetch command when it
 * is not there. */
static int known_model_path(const char *name, const char *file, char **path)
{
	*path = cached_model_path(file);
	if (*path && access(*path, R_OK) != 0) {
		fprintf(stderr, "skipper: model %s is not in the cache (%s); fetch it with scripts/fetch-model.sh %s\n",
		        name, *path, name);
		free(*path);
		*path = NULL;
		return EXIT_FAILURE_GENERIC;
	}
	return *path ? EXIT_OK : EXIT_FAILURE_GENERIC;
}

int cli_model_path(const struct skipper_config *cfg, char **path)
{
	const char *p = skipper_config_get(cfg, "model", "path");
	const char *hub = skipper_config_get(cfg, "model", "hub");

	if (p && *p) {
		/* a known name, unless a file of that name is right here */
		for (size_t i = 0; i < sizeof known_models / sizeof known_models[0]; i++)
			if (strcmp(p, known_models[i].name) == 0 && access(p, F_OK) != 0)
				return known_model_path(p, known_models[i].file, path);
		*path = strdup(p);
		return EXIT_OK;
	}
	if (hub && *hub)
		return cli_hub_model_path(cfg, hub, path);
	return known_model_path(known_models[0].name, known_models[0].file, path);
}

int cli_session_open(struct cli_session *s, struct skipper_config *cfg)
{
	struct skipper_error err = { 0 };
	struct skipper_backend_opts bo = { 0 };
	const char *tmpl_name, *backend, *sys;
	char *path = NULL;
	long l;
	double d;
	int rc;

	int no_search = s->no_profile_search; /* the one field a caller sets first */
	memset(s, 0, sizeof *s);
	s->no_profile_search = no_search;
	s->cfg = cfg;

	/* Generation parameters first: all config errors before any loading. */
	if (skipper_config_get_int(cfg, "generate", "max_tokens", &l, &err))
		return fail(&err, EXIT_USAGE);
	s->gen.max_tokens = (int)l;
	if (skipper_config_get_double(cfg, "generate", "temperature", &d, &err))
		return fail(&err, EXIT_USAGE);
	s->gen.sampling.temperature = (float)d;
	if (skipper_config_get_int(cfg, "generate", "top_k", &l, &err))
		return fail(&err, EXIT_USAGE);
	s->gen.sampling.top_k = (int)l;
	if (skipper_config_get_double(cfg, "generate", "top_p", &d, &err))
		return fail(&err, EXIT_USAGE);
	s->gen.sampling.top_p = (float)d;
	if (skipper_config_get_int(cfg, "generate", "seed", &l, &err))
		return fail(&err, EXIT_USAGE);
	s->gen.seed = l ? (uint64_t)l : (uint64_t)getpid() ^ (uint64_t)time(NULL);
	if (skipper_config_get_int(cfg, "model", "threads", &l, &err))
		return fail(&err, EXIT_USAGE);
	bo.n_threads = (int)l;
	if (skipper_config_get_int(cfg, "model", "ctx", &l, &err))
		return fail(&err, EXIT_USAGE);
	bo.n_ctx = (int)l;
	backend = skipper_config_get(cfg, "model", "backend");
	bo.kind = strcmp(backend, "cuda") == 0 ? SKIPPER_BACKEND_CUDA :
	          strcmp(backend, "cpu") == 0  ? SKIPPER_BACKEND_CPU : SKIPPER_BACKEND_AUTO;

	if ((rc = cli_model_path(cfg, &path)))
		return rc;
	rc = skipper_model_load(path, &s->model, &err);
	free(path);
	if (rc)
		return fail(&err, EXIT_FAILURE_GENERIC);
	if (bo.n_ctx > s->model->view.hp.n_ctx_train && s->model->view.hp.n_ctx_train > 0)
		bo.n_ctx = s->model->view.hp.n_ctx_train;
	if (skipper_tokenizer_from_gguf(s->model->gguf, &s->tok, &err))
		return fail(&err, EXIT_FAILURE_GENERIC);

	tmpl_name = skipper_config_get(cfg, "generate", "chat_template");
	if (strcmp(tmpl_name, "auto") == 0) {
		struct skipper_gguf_str j = { 0 };
		skipper_gguf_get_str(s->model->gguf, "tokenizer.chat_template", &j);
		s->chat_template = j.ptr ? skipper_chat_template_detect(j.ptr, j.len) : SKIPPER_CHAT_NONE;
		if (j.ptr)
			s->system = skipper_chat_default_system(j.ptr, j.len);
	} else {
		s->chat_template = skipper_chat_template_by_name(tmpl_name);
	}
	sys = skipper_config_get(cfg, "generate", "system");
	if (sys && *sys) {
		free(s->system);
		s->system = strdup(sys);
	}

	if (skipper_backend_create(&s->model->view, &bo, &s->be, &err)) {
		skipper_fail_prefix(&err, "%s", skipper_gguf_path(s->model->gguf));
		return fail(&err, EXIT_FAILURE_GENERIC);
	}
	return cli_session_set_policy(s, skipper_config_get(cfg, "policy", "name"));
}

int cli_session_set_policy(struct cli_session *s, const char *name)
{
	struct skipper_error err = { 0 };

	skipper_engine_free(s->engine);
	s->engine = NULL;
	cli_policy_close(s->policy);
	s->policy = NULL;
	if (strcmp(name, "none") != 0) {
		if (cli_policy_open(s, s->cfg, name, &s->policy, &err))
			return fail(&err, err.status == SKIPPER_ERR_CONFIG ? EXIT_USAGE : EXIT_FAILURE_GENERIC);
	}
	if (skipper_engine_new(s->be, s->tok, s->policy ? cli_policy_instance(s->policy) : NULL, &s->engine, &err))
		return fail(&err, EXIT_FAILURE_GENERIC);
	if (s->policy)
		cli_policy_bind_engine(s->policy, s->engine);
	return cli_engine_setup(s, s->cfg, name, s->engine);
}

void cli_session_close(struct cli_session *s)
{
	skipper_engine_free(s->engine);
	cli_policy_close(s->policy);
	if (s->be)
		s->be->ops->destroy(s->be);
	skipper_tokenizer_free(s->tok);
	skipper_model_free(s->model);
	skipper_config_free(s->cfg);
	free(s->system);
	memset(s, 0, sizeof *s);
}

int cli_prompt_tokens(struct cli_session *s, const char *user, int32_t **ids, size_t *n)
{
	struct skipper_error err = { 0 };
	char *text = NULL;
	int rc;

	if (s->chat_template != SKIPPER_CHAT_NONE) {
		if (skipper_chat_format(s->chat_template, s->system, user, &text, &err))
			return fail(&err, EXIT_FAILURE_GENERIC);
	} else if (!(text = strdup(user))) {
		return EXIT_FAILURE_GENERIC;
	}
	rc = skipper_tokenize(s->tok, text, strlen(text), skipper_tokenizer_add_bos(s->tok),
	                      s->chat_template != SKIPPER_CHAT_NONE, ids, n, &err);
	free(text);
	return rc ? fail(&err, EXIT_FAILURE_GENERIC) : EXIT_OK;
}
