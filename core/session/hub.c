/* The hub behind [model] hub, hub: profiles and skipper pull: options from
 * the configuration and the environment (an explicit [hub] key, then the
 * HF_* variables huggingface_hub reads, then its default). */
#define _GNU_SOURCE /* asprintf */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "build-config.h"
#include "hub/hub.h"
#include "hub/sign.h"
#include "session.h"

static const char *cfg_str(const struct skipper_config *cfg, const char *key)
{
	const char *v = skipper_config_get(cfg, "hub", key);
	return v && *v ? v : NULL;
}

static int env_true(const char *name)
{
	const char *v = getenv(name);
	return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 ||
	             strcasecmp(v, "on") == 0);
}

/* [hub] retries and timeout, when set. */
static int limits(const struct skipper_config *cfg, struct skipper_hub_options *o, struct skipper_error *err)
{
	long n;
	int rc;
	o->retries = 5;
	if (skipper_config_get(cfg, "hub", "retries")) {
		if ((rc = skipper_config_get_int(cfg, "hub", "retries", &n, err)))
			return rc;
		o->retries = (int)n;
	}
	if (skipper_config_get(cfg, "hub", "timeout")) {
		if ((rc = skipper_config_get_int(cfg, "hub", "timeout", &n, err)))
			return rc;
		o->timeout_s = n;
	}
	return SKIPPER_OK;
}

/* The hub tells its retries through the session's hooks. */
static void note(void *arg, const char *msg)
{
	const struct skipper_session_hooks *hooks = arg;
	if (hooks && hooks->log)
		hooks->log(hooks->ctx, SKIPPER_LOG_WARN, msg);
}

/* The hub reports progress through the session's hooks. */
static int progress(void *arg, const char *file, long long done, long long total, int finished)
{
	const struct skipper_session_hooks *hooks = arg;
	return hooks && hooks->progress ? hooks->progress(hooks->ctx, file, done, total, finished) : 0;
}

int session_hub_open(struct session_hub *h, const struct skipper_config *cfg, int force_offline,
                     const struct skipper_session_hooks *hooks, struct skipper_error *err)
{
	struct skipper_hub_options o = { 0 };
	const char *v;
	int b = 0, rc;

	memset(h, 0, sizeof *h);
	h->hooks = hooks;
	h->endpoint = cfg_str(cfg, "endpoint");
	if (!h->endpoint)
		h->endpoint = getenv("HF_ENDPOINT") && *getenv("HF_ENDPOINT") ? getenv("HF_ENDPOINT") : "https://huggingface.co";
	h->cache_dir = cfg_str(cfg, "cache_dir") ? strdup(cfg_str(cfg, "cache_dir")) : skipper_hub_default_cache_dir();
	if (!h->cache_dir) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if ((rc = skipper_config_get_bool(cfg, "hub", "offline", &b, err)))
		goto fail;
	h->offline = force_offline || b || env_true("HF_HUB_OFFLINE");
	o.offline = h->offline;
	if ((v = cfg_str(cfg, "max_file_size")) && skipper_hub_parse_size(v, &o.max_file_size) < 0) {
		rc = skipper_fail(err, SKIPPER_ERR_CONFIG, "[hub] max_file_size = %s is not a size like 64G", v);
		goto fail;
	}
	if ((rc = limits(cfg, &o, err)))
		goto fail;
	if (!h->offline && (rc = skipper_hub_token_load(cfg_str(cfg, "token_file"), &h->token, err))) {
		rc = SKIPPER_ERR_CONFIG;
		goto fail;
	}
	o.endpoint = h->endpoint;
	o.cache_dir = h->cache_dir;
	o.token = h->token;
	o.user_agent = "skipper/" PACKAGE_VERSION;
	o.progress = progress;
	o.note = note;
	o.progress_arg = (void *)hooks;
	if ((rc = skipper_hub_new(&h->hub, &o, err))) {
		if (err->status == SKIPPER_ERR_ARG) { /* the endpoint: say where it came from */
			char why[SKIPPER_ERROR_MAX];
			snprintf(why, sizeof why, "%s", err->msg);
			rc = skipper_fail(err, SKIPPER_ERR_CONFIG, "%s%s", cfg_str(cfg, "endpoint") ? "[hub] " : "HF_ENDPOINT: ",
			                  why);
		}
		goto fail;
	}
	return SKIPPER_OK;
fail:
	session_hub_close(h);
	return rc;
}

void session_hub_close(struct session_hub *h)
{
	skipper_hub_free(h->hub);
	skipper_hub_token_free(h->token);
	free(h->cache_dir);
	memset(h, 0, sizeof *h);
}

size_t session_trusted_keys(const struct skipper_config *cfg, char **buf, const char **keys, size_t max)
{
	const char *v = cfg_str(cfg, "trusted_keys");
	*buf = v ? strdup(v) : NULL;
	return *buf ? skipper_sign_split_keys(*buf, keys, max) : 0;
}

static void got_one(void *arg, const char *file, const char *path, int downloaded)
{
	char **out = arg;
	free(*out);
	*out = strdup(path);
}

int session_hub_pull_one(struct session_hub *h, const char *repo, const char *rev, const char *file, char **path,
                         struct skipper_error *err)
{
	struct skipper_hub_request req = { .repo = repo, .revision = rev, .files = &file, .n_files = 1 };
	int rc;

	*path = NULL;
	if ((rc = skipper_hub_pull(h->hub, &req, got_one, path, err))) {
		free(*path);
		*path = NULL;
		return rc;
	}
	return *path ? SKIPPER_OK : skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
}

/* hub:ORG/REPO[@REV]/FILE -> repo, rev, file inside buf. */
static int split_profile_spec(char *buf, char **repo, char **rev, char **file)
{
	char *s = buf + 4, *slash1 = strchr(s, '/'), *slash2, *at;

	if (strncmp(buf, "hub:", 4) != 0 || !slash1 || !(slash2 = strchr(slash1 + 1, '/')) || !slash2[1])
		return -1;
	*slash2 = '\0';
	*repo = s;
	*file = slash2 + 1;
	*rev = NULL;
	if ((at = strchr(slash1, '@'))) {
		*at = '\0';
		*rev = at + 1;
	}
	return 0;
}

int session_hub_profile(const struct skipper_config *cfg, const char *spec, const struct skipper_session_hooks *hooks,
                        char **path, struct skipper_error *err)
{
	char *copy = strdup(spec), *repo, *rev, *file, *kbuf = NULL, *sig = NULL, *sigfile = NULL;
	const char *keys[32];
	size_t nkeys = session_trusted_keys(cfg, &kbuf, keys, 32);
	struct session_hub h;
	int rc;

	*path = NULL;
	if (!copy || split_profile_spec(copy, &repo, &rev, &file) < 0) {
		rc = skipper_fail(err, SKIPPER_ERR_CONFIG, "profile %s: expected hub:ORG/REPO[@REVISION]/FILE", spec);
		goto out;
	}
	if (!skipper_hub_profile_name_ok(file)) {
		rc = skipper_fail(err, SKIPPER_ERR_CONFIG,
		                  "profile %s: refusing to fetch %s (profiles are data: .ini, .safetensors, ...)", spec, file);
		goto out;
	}
	if ((rc = session_hub_open(&h, cfg, 0, hooks, err)))
		goto out;
	rc = session_hub_pull_one(&h, repo, rev, file, path, err);
	if (rc == SKIPPER_OK && nkeys) {
		if (asprintf(&sigfile, "%s.sig", file) < 0) {
			sigfile = NULL;
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		}
		if (!rc)
			rc = session_hub_pull_one(&h, repo, rev, sigfile, &sig, err);
		if (!rc)
			rc = skipper_sign_check_trusted(*path, keys, nkeys, err);
	}
	session_hub_close(&h);
out:
	if (rc) {
		free(*path);
		*path = NULL;
	}
	free(sig);
	free(sigfile);
	free(copy);
	free(kbuf);
	return rc;
}
