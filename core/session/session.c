/* Opening a session: configuration checked, then model, tokenizer, chat
 * template, backend and the configured policy's engine, in the order that
 * fails fastest. */
#define _GNU_SOURCE /* asprintf */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "model/quant.h"
#include "base/error.h"
#include "build-config.h"
#include "hub/hub.h"
#include "session.h"

void session_log(const struct skipper_session *s, int level, const char *fmt, ...)
{
	char msg[SKIPPER_ERROR_MAX];
	va_list ap;

	if (!s->hooks.log || level > s->log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	s->hooks.log(s->hooks.ctx, level, msg);
}

/* The models scripts/fetch-model.sh knows, by the names -m and [model] path
 * accept (keep the two lists equal; tests/t-cli.sh checks). */
static const struct {
	const char *name, *file;
} known_models[] = {
	{ "smollm2-135m", SKIPPER_DEFAULT_MODEL },
	{ "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" },
	{ "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" },
};

/* A known model's file in the cache; an error naming the fetch command
 * when it is not there. */
static int known_model_path(const char *name, const char *file, char **path, struct skipper_error *err)
{
	char dir[4096];
	if (skipper_cache_dir(dir, sizeof dir, "models") || asprintf(path, "%s/%s", dir, file) < 0) {
		*path = NULL;
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	if (access(*path, R_OK) != 0) {
		skipper_fail(err, SKIPPER_ERR_NOT_FOUND,
		             "model %s is not in the cache (%s); fetch it with scripts/fetch-model.sh %s", name, *path, name);
		free(*path);
		*path = NULL;
		return SKIPPER_ERR_NOT_FOUND;
	}
	return SKIPPER_OK;
}

/* The files of a Hugging Face checkpoint that loading reads: the
 * configuration, the tokenizer's, the chat template's and the weights at
 * the top of the repository (not its onnx/, original/, ... copies). */
static int checkpoint_file(const char *name)
{
	static const char *const json[] = { "config.json", "generation_config.json", "tokenizer.json",
		                            "tokenizer_config.json", "chat_template.jinja", "model.safetensors.index.json" };
	size_t n = strlen(name);
	if (strchr(name, '/'))
		return 0;
	for (size_t i = 0; i < sizeof json / sizeof json[0]; i++)
		if (strcmp(name, json[i]) == 0)
			return 1;
	return n > 12 && strcmp(name + n - 12, ".safetensors") == 0;
}

/* The snapshot directory: where config.json landed. */
static void got_checkpoint_file(void *arg, const char *file, const char *path, int downloaded)
{
	char **dir = arg;
	(void)downloaded;
	if (strcmp(file, "config.json") == 0 && !*dir && (*dir = strdup(path)))
		*strrchr(*dir, '/') = '\0';
}

/* [model] hub = ORG/REPO:FILE.gguf[@REVISION] (one file), or
 * ORG/REPO[@REVISION] (a Hugging Face checkpoint: its directory in the
 * snapshot). */
static int hub_model_path(const struct skipper_config *cfg, const char *spec, const struct skipper_session_hooks *hooks,
                          char **path, struct skipper_error *err)
{
	char *copy = strdup(spec), *colon, *at, *rev = NULL, *slash;
	struct session_hub h;
	int rc;

	*path = NULL;
	if (!copy)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	colon = strchr(copy, ':');
	if ((at = strrchr(colon ? colon + 1 : copy, '@'))) {
		*at = '\0';
		rev = at + 1;
	}
	if (colon)
		*colon = '\0';
	slash = strchr(copy, '/');
	if ((colon && !colon[1]) || !slash || slash == copy || !slash[1] || strchr(slash + 1, '/') || (rev && !*rev)) {
		free(copy);
		return skipper_fail(err, SKIPPER_ERR_CONFIG,
		                    "[model] hub = %s: expected ORG/REPO[@REVISION] (a checkpoint) or "
		                    "ORG/REPO:FILE.gguf[@REVISION]", spec);
	}
	rc = session_hub_open(&h, cfg, 0, hooks, err);
	if (rc == SKIPPER_OK && colon) {
		rc = session_hub_pull_one(&h, copy, rev, colon + 1, path, err);
	} else if (rc == SKIPPER_OK) {
		struct skipper_hub_request req = { .repo = copy, .revision = rev, .filter = checkpoint_file };
		rc = skipper_hub_pull(h.hub, &req, got_checkpoint_file, path, err);
		if (rc == SKIPPER_OK && !*path)
			rc = skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s has no config.json: not a Hugging Face checkpoint "
			                  "(for a GGUF file in it: [model] hub = %s:FILE.gguf)", copy, copy);
		if (rc) {
			free(*path);
			*path = NULL;
		}
	}
	session_hub_close(&h);
	free(copy);
	return rc;
}

/* ORG/NAME as a hub repository id: two names of the characters the hub
 * allows, nothing else (a relative path of two parts that does not exist
 * reads the same: it is looked up on the hub, whose error names it). */
static int repo_id(const char *p)
{
	const char *slash = strchr(p, '/');
	size_t n = strlen(p);
	if (!slash || slash == p || !slash[1] || strchr(slash + 1, '/') || p[0] == '.' ||
	    (n > 5 && strcmp(p + n - 5, ".gguf") == 0))
		return 0;
	for (const char *c = p; *c && *c != '@'; c++)
		if (!(isalnum((unsigned char)*c) || strchr("-_./", *c)))
			return 0;
	return 1;
}

int skipper_session_model_path(const struct skipper_config *cfg, const struct skipper_session_hooks *hooks,
                               char **path, struct skipper_error *err)
{
	const char *p = skipper_config_get(cfg, "model", "path");
	const char *hub = skipper_config_get(cfg, "model", "hub");

	*path = NULL;
	if (p && *p) {
		/* a known name, unless a file of that name is right here */
		for (size_t i = 0; i < sizeof known_models / sizeof known_models[0]; i++)
			if (strcmp(p, known_models[i].name) == 0 && access(p, F_OK) != 0)
				return known_model_path(p, known_models[i].file, path, err);
		if (access(p, F_OK) != 0 && repo_id(p)) {
			int rc = hub_model_path(cfg, p, hooks, path, err);
			if (rc)
				skipper_fail_prefix(err, "model %s: no such file or directory here; from the hub", p);
			return rc;
		}
		return (*path = strdup(p)) ? SKIPPER_OK : skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	if (hub && *hub)
		return hub_model_path(cfg, hub, hooks, path, err);
	return known_model_path(known_models[0].name, known_models[0].file, path, err);
}

/* [generate] as the engine takes it. */
static int gen_params(const struct skipper_config *cfg, struct skipper_gen_params *g, struct skipper_error *err)
{
	long l;
	double d;
	int rc;

	if ((rc = skipper_config_get_int(cfg, "generate", "max_tokens", &l, err)))
		return rc;
	g->max_tokens = (int)l;
	if ((rc = skipper_config_get_double(cfg, "generate", "temperature", &d, err)))
		return rc;
	g->sampling.temperature = (float)d;
	if ((rc = skipper_config_get_int(cfg, "generate", "top_k", &l, err)))
		return rc;
	g->sampling.top_k = (int)l;
	if ((rc = skipper_config_get_double(cfg, "generate", "top_p", &d, err)))
		return rc;
	g->sampling.top_p = (float)d;
	if ((rc = skipper_config_get_int(cfg, "generate", "seed", &l, err)))
		return rc;
	g->seed = l ? (uint64_t)l : (uint64_t)getpid() ^ (uint64_t)time(NULL);
	return SKIPPER_OK;
}

/* The chat template ([generate] chat_template, auto: the model's) and the
 * system prompt ([generate] system, else the template's default). */
static int chat_setup(struct skipper_session *s, struct skipper_error *err)
{
	const char *name = skipper_config_get(s->cfg, "generate", "chat_template");
	const char *sys = skipper_config_get(s->cfg, "generate", "system");

	if (strcmp(name, "auto") == 0) {
		char *j = skipper_model_chat_template(s->model);
		s->chat_template = j ? skipper_chat_template_detect(j, strlen(j)) : SKIPPER_CHAT_NONE;
		if (j && s->chat_template == SKIPPER_CHAT_NONE)
			session_log(s, SKIPPER_LOG_WARN,
			            "warning: %s: the model's chat template is none skipper knows (chatml, llama2, llama3, "
			            "mistral, zephyr): prompts go in as raw text; name one with [generate] chat_template "
			            "(--template)", skipper_model_path(s->model));
		if (j)
			s->system = skipper_chat_default_system(j, strlen(j));
		free(j);
	} else {
		s->chat_template = skipper_chat_template_by_name(name);
	}
	if (sys && *sys) {
		free(s->system);
		if (!(s->system = strdup(sys)))
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	return SKIPPER_OK;
}

/* The context the backend gets: [model] ctx, within the model's training
 * context. */
static void cap_ctx(struct skipper_backend_opts *bo, const struct skipper_model *m)
{
	if (m && m->view.hp.n_ctx_train > 0 && bo->n_ctx > m->view.hp.n_ctx_train)
		bo->n_ctx = m->view.hp.n_ctx_train;
}

int skipper_session_backend_opts(const struct skipper_config *cfg, const struct skipper_model *m,
                                 struct skipper_backend_opts *bo, struct skipper_error *err)
{
	const char *backend = skipper_config_get(cfg, "model", "backend");
	long l;
	int rc;

	if ((rc = skipper_config_get_int(cfg, "model", "threads", &l, err)))
		return rc;
	bo->n_threads = (int)l;
	if ((rc = skipper_config_get_int(cfg, "model", "ctx", &l, err)))
		return rc;
	bo->n_ctx = (int)l;
	bo->kv_type = strcmp(skipper_config_get(cfg, "model", "kv_type"), "q8_0") == 0 ? SKIPPER_KV_Q8_0 : SKIPPER_KV_F16;
	bo->kind = strcmp(backend, "cuda") == 0 ? SKIPPER_BACKEND_CUDA :
	           strcmp(backend, "cpu") == 0  ? SKIPPER_BACKEND_CPU : SKIPPER_BACKEND_AUTO;
	cap_ctx(bo, m);
	return SKIPPER_OK;
}

static void fill_info(struct skipper_session *s)
{
	struct skipper_session_info *i = &s->info;
	i->model = s->model->view.name;
	i->model_path = skipper_model_path(s->model);
	i->arch = s->model->view.arch;
	i->backend = s->be->ops->name;
	i->device = s->be->device;
	i->policy = skipper_config_get(s->cfg, "policy", "name");
	i->chat_template = skipper_chat_template_name(s->chat_template);
	i->n_ctx = s->be->n_ctx;
	i->n_vocab = s->model->view.hp.n_vocab;
	i->n_layer = s->model->view.hp.n_layer;
}

int skipper_session_open_opts(const struct skipper_config *cfg, const struct skipper_session_opts *o,
                              struct skipper_session **out, struct skipper_error *err)
{
	struct skipper_session *s = calloc(1, sizeof *s);
	struct skipper_backend_opts bo = { 0 };
	struct skipper_model_opts mo = { -1 };
	char *path = NULL;
	int rc;

	*out = NULL;
	if (!s)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (o && o->hooks)
		s->hooks = *o->hooks;
	s->log_level = o && o->log_level ? o->log_level : SKIPPER_LOG_WARN;
	s->no_profile_search = o && o->no_profile_search;
	/* every configuration error before any loading */
	if ((rc = skipper_config_check(cfg, err)) || (rc = skipper_config_copy(cfg, &s->cfg, err)) ||
	    (rc = gen_params(s->cfg, &s->gen, err)) || (rc = skipper_session_backend_opts(s->cfg, NULL, &bo, err)))
		goto fail;
	mo.quantize = skipper_model_quantize_type(skipper_config_get(s->cfg, "model", "quantize"));
	if ((rc = skipper_session_model_path(s->cfg, &s->hooks, &path, err)) ||
	    (rc = skipper_model_load_opts(path, &mo, &s->model, err)))
		goto fail;
	if (s->model->quantized >= 0)
		session_log(s, SKIPPER_LOG_INFO, "%s: weights quantized to %s at load in %.1f s", skipper_model_path(s->model),
		            skipper_dtype_name(s->model->quantized), s->model->quantize_seconds);
	cap_ctx(&bo, s->model);
	if ((rc = skipper_tokenizer_for_model(s->model, &s->tok, err)) || (rc = chat_setup(s, err)))
		goto fail;
	session_log(s, SKIPPER_LOG_INFO, "K/V cache: %d tokens, %s, %.1f MiB", bo.n_ctx, skipper_kv_type_name(bo.kv_type),
	            skipper_backend_kv_bytes(&s->model->view.hp, bo.n_ctx, bo.kv_type) / 1048576.0);
	if ((rc = skipper_backend_create(&s->model->view, &bo, &s->be, err))) {
		skipper_fail_prefix(err, "%s", skipper_model_path(s->model));
		goto fail;
	}
	if ((rc = session_history_open(s, err)) || (rc = skipper_session_engine(s, s->cfg, &s->engine, err)))
		goto fail;
	fill_info(s);
	free(path);
	*out = s;
	return SKIPPER_OK;
fail:
	free(path);
	skipper_session_close(s);
	return rc;
}

int skipper_session_open(const struct skipper_config *cfg, const struct skipper_session_hooks *hooks,
                         struct skipper_session **out, struct skipper_error *err)
{
	struct skipper_session_opts o = { .hooks = hooks };
	return skipper_session_open_opts(cfg, &o, out, err);
}

int session_keep(struct skipper_session *s, char *str, struct skipper_error *err)
{
	char **k = realloc(s->kept, sizeof *k * (size_t)(s->n_kept + 1));
	if (!k) {
		free(str);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	s->kept = k;
	s->kept[s->n_kept++] = str;
	return SKIPPER_OK;
}

void skipper_session_close(struct skipper_session *s)
{
	if (!s)
		return;
	skipper_engine_free(s->engine);
	struct skipper_error err = { 0 };
	if (session_history_close(s, &err))
		session_log(s, SKIPPER_LOG_WARN, "warning: [lookup] history not saved: %s", err.msg);
	for (int i = 0; i < s->n_kept; i++)
		free(s->kept[i]);
	free(s->kept);
	free(s->draft_ids);
	if (s->be)
		s->be->ops->destroy(s->be);
	skipper_tokenizer_free(s->tok);
	skipper_model_free(s->model);
	skipper_config_free(s->cfg);
	free(s->system);
	free(s);
}

const struct skipper_session_info *skipper_session_info(const struct skipper_session *s) { return &s->info; }

const struct skipper_run_stats *skipper_session_stats(const struct skipper_session *s) { return &s->last; }

const char *skipper_version(void) { return PACKAGE_VERSION; }
