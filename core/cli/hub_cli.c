/* Configuration -> hub options, the progress bar, and the `[model] hub` /
 * `hub:` profile resolvers. Precedence for every value: an explicit [hub]
 * key, then the HF_* environment huggingface_hub reads, then its default. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "build-config.h"
#include "cli.h"
#include "base/error.h"
#include "hub/hub.h"
#include "hub/sign.h"
#include "hub_cli.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void human(char *buf, size_t cap, double bytes)
{
	static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
	int u = 0;
	while (bytes >= 1000 && u < 4) {
		bytes /= 1000;
		u++;
	}
	snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

/* Drawn on stderr, only on a terminal, at most ten times a second. */
static int progress(void *arg, const char *file, long long done, long long total, int finished)
{
	struct hub_cli *h = arg;
	double t = now_s(), rate;
	char d[32], tt[32], r[32], eta[32] = "";

	if (cli_interrupted)
		return 1;
	if (!file || !h->bar.tty)
		return 0;
	if (h->bar.start == 0 || done < h->bar.start_bytes) {
		h->bar.start = t;
		h->bar.start_bytes = done;
	}
	if (!finished && t - h->bar.last < 0.1)
		return 0;
	h->bar.last = t;
	rate = t > h->bar.start ? (double)(done - h->bar.start_bytes) / (t - h->bar.start) : 0;
	human(d, sizeof d, (double)done);
	human(tt, sizeof tt, total > 0 ? (double)total : 0);
	human(r, sizeof r, rate);
	if (total > 0 && rate > 0 && !finished) {
		long s = (long)((double)(total - done) / rate);
		snprintf(eta, sizeof eta, " ETA %ld:%02ld", s / 60, s % 60);
	}
	if (total > 0)
		fprintf(stderr, "\r\033[K%-32.32s %3d%% %s / %s  %s/s%s", file, (int)(100.0 * done / total), d, tt, r, eta);
	else
		fprintf(stderr, "\r\033[K%-32.32s %s  %s/s", file, d, r);
	if (finished) {
		fputc('\n', stderr);
		h->bar.start = 0;
	}
	return 0;
}

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

int hub_cli_open(struct hub_cli *h, const struct skipper_config *cfg, int force_offline)
{
	struct skipper_hub_options o = {0};
	struct skipper_error err = {0};
	const char *v;
	long n;
	int b = 0;

	memset(h, 0, sizeof *h);
	h->bar.tty = isatty(2);
	h->endpoint = cfg_str(cfg, "endpoint");
	if (!h->endpoint)
		h->endpoint = getenv("HF_ENDPOINT") && *getenv("HF_ENDPOINT") ? getenv("HF_ENDPOINT") : "https://huggingface.co";
	h->cache_dir = cfg_str(cfg, "cache_dir") ? strdup(cfg_str(cfg, "cache_dir")) : skipper_hub_default_cache_dir();
	if (!h->cache_dir)
		goto nomem;
	if (skipper_config_get_bool(cfg, "hub", "offline", &b, &err))
		goto config;
	h->offline = force_offline || b || env_true("HF_HUB_OFFLINE");
	o.offline = h->offline;
	if ((v = cfg_str(cfg, "max_file_size")) && skipper_hub_parse_size(v, &o.max_file_size) < 0) {
		fprintf(stderr, "skipper: [hub] max_file_size = %s is not a size like 64G\n", v);
		hub_cli_close(h);
		return EXIT_USAGE;
	}
	o.retries = 5;
	if (skipper_config_get(cfg, "hub", "retries")) {
		if (skipper_config_get_int(cfg, "hub", "retries", &n, &err))
			goto config;
		o.retries = (int)n;
	}
	if (skipper_config_get(cfg, "hub", "timeout")) {
		if (skipper_config_get_int(cfg, "hub", "timeout", &n, &err))
			goto config;
		o.timeout_s = n;
	}
	if (!h->offline && skipper_hub_token_load(cfg_str(cfg, "token_file"), &h->token, &err)) {
		fprintf(stderr, "skipper: %s\n", err.msg);
		hub_cli_close(h);
		return EXIT_USAGE;
	}
	o.endpoint = h->endpoint;
	o.cache_dir = h->cache_dir;
	o.token = h->token;
	o.user_agent = "skipper/" PACKAGE_VERSION;
	o.progress = progress;
	o.progress_arg = h;
	if (skipper_hub_new(&h->hub, &o, &err)) {
		int usage = err.status == SKIPPER_ERR_ARG;
		fprintf(stderr, "skipper: %s%s\n", usage ? (cfg_str(cfg, "endpoint") ? "[hub] " : "HF_ENDPOINT: ") : "",
		        err.msg);
		hub_cli_close(h);
		return usage ? EXIT_USAGE : EXIT_FAILURE_GENERIC;
	}
	return EXIT_OK;
config:
	fprintf(stderr, "skipper: %s\n", err.msg);
	hub_cli_close(h);
	return EXIT_USAGE;
nomem:
	fprintf(stderr, "skipper: out of memory\n");
	hub_cli_close(h);
	return EXIT_FAILURE_GENERIC;
}

void hub_cli_close(struct hub_cli *h)
{
	skipper_hub_free(h->hub);
	skipper_hub_token_free(h->token);
	free(h->cache_dir);
	memset(h, 0, sizeof *h);
}

int hub_cli_exit_code(int status)
{
	switch (status) {
	case SKIPPER_OK: return EXIT_OK;
	case SKIPPER_ERR_ARG:
	case SKIPPER_ERR_CONFIG: return EXIT_USAGE;
	case SKIPPER_ERR_INTERRUPTED: return EXIT_INTERRUPTED;
	case SKIPPER_ERR_NETWORK:
	case SKIPPER_ERR_NOT_FOUND:
	case SKIPPER_ERR_AUTH:
	case SKIPPER_ERR_CHECKSUM:
	case SKIPPER_ERR_OFFLINE:
	case SKIPPER_ERR_SIGNATURE:
	case SKIPPER_ERR_FORMAT:
	case SKIPPER_ERR_RANGE: return EXIT_NETWORK;
	default: return EXIT_FAILURE_GENERIC;
	}
}

size_t hub_cli_trusted_keys(const struct skipper_config *cfg, char **buf, const char **keys, size_t max)
{
	const char *v = cfg_str(cfg, "trusted_keys");
	*buf = v ? strdup(v) : NULL;
	return *buf ? skipper_sign_split_keys(*buf, keys, max) : 0;
}

struct one {
	char *path;
};

static void got_one(void *arg, const char *file, const char *path, int downloaded)
{
	struct one *o = arg;
	free(o->path);
	o->path = strdup(path);
}

int hub_cli_pull_one(struct hub_cli *h, const char *repo, const char *rev, const char *file, char **path)
{
	struct skipper_error err = {0};
	struct skipper_hub_request req = {.repo = repo, .revision = rev, .files = &file, .n_files = 1};
	struct one o = {0};
	int rc = skipper_hub_pull(h->hub, &req, got_one, &o, &err);

	if (rc) {
		/* End a progress line cut short before the message. */
		fprintf(stderr, "%sskipper: %s\n", h->bar.tty && h->bar.start != 0 ? "\n" : "", err.msg);
		free(o.path);
		return hub_cli_exit_code(rc);
	}
	*path = o.path;
	return *path ? EXIT_OK : EXIT_FAILURE_GENERIC;
}

int cli_hub_model_path(const struct skipper_config *cfg, const char *spec, char **path)
{
	char *copy = strdup(spec), *colon, *at, *rev = NULL;
	struct hub_cli h;
	int rc;

	if (!copy)
		return EXIT_FAILURE_GENERIC;
	colon = strchr(copy, ':');
	if (!colon || !colon[1]) {
		fprintf(stderr, "skipper: [model] hub = %s: expected ORG/REPO:FILE.gguf[@REVISION]\n", spec);
		free(copy);
		return EXIT_USAGE;
	}
	*colon = '\0';
	if ((at = strrchr(colon + 1, '@'))) {
		*at = '\0';
		rev = at + 1;
	}
	rc = hub_cli_open(&h, cfg, 0);
	if (rc == EXIT_OK)
		rc = hub_cli_pull_one(&h, copy, rev, colon + 1, path);
	hub_cli_close(&h);
	free(copy);
	return rc;
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

int cli_hub_profile_path(const struct skipper_config *cfg, const char *spec, char **path)
{
	char *copy = strdup(spec), *repo, *rev, *file, *kbuf = NULL, *sig = NULL, *sigfile = NULL;
	const char *keys[32];
	size_t nkeys = hub_cli_trusted_keys(cfg, &kbuf, keys, 32);
	struct skipper_error err = {0};
	struct hub_cli h;
	int rc;

	*path = NULL;
	if (!copy || split_profile_spec(copy, &repo, &rev, &file) < 0) {
		fprintf(stderr, "skipper: profile %s: expected hub:ORG/REPO[@REVISION]/FILE\n", spec);
		free(copy);
		free(kbuf);
		return EXIT_USAGE;
	}
	if (!skipper_hub_profile_name_ok(file)) {
		fprintf(stderr, "skipper: profile %s: refusing to fetch %s (profiles are data: .ini, .safetensors, ...)\n",
		        spec, file);
		free(copy);
		free(kbuf);
		return EXIT_USAGE;
	}
	rc = hub_cli_open(&h, cfg, 0);
	if (rc == EXIT_OK)
		rc = hub_cli_pull_one(&h, repo, rev, file, path);
	if (rc == EXIT_OK && nkeys) {
		if (asprintf(&sigfile, "%s.sig", file) < 0)
			sigfile = NULL;
		rc = sigfile ? hub_cli_pull_one(&h, repo, rev, sigfile, &sig) : EXIT_FAILURE_GENERIC;
		if (rc == EXIT_OK && skipper_sign_check_trusted(*path, keys, nkeys, &err)) {
			fprintf(stderr, "skipper: %s\n", err.msg);
			rc = hub_cli_exit_code(err.status);
		}
	}
	if (rc) {
		free(*path);
		*path = NULL;
	}
	hub_cli_close(&h);
	free(sig);
	free(sigfile);
	free(copy);
	free(kbuf);
	return rc;
}
