/* Options and configuration layering shared by the model-using commands,
 * signals, and atomic writes of their outputs. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build-config.h"
#include "cli.h"
#include "base/atomic.h"
#include "base/error.h"
#include "base/file.h"

volatile sig_atomic_t cli_interrupted;

static void on_signal(int sig) { cli_interrupted = sig; }

void cli_install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* Shortcut options: each is exactly a --set of one key. */
static const struct {
	const char *opt, *alt, *key;
} shortcuts[] = {
	{ "-m", "--model", "model.path" },
	{ "-n", "--max-tokens", "generate.max_tokens" },
	{ "-t", "--threads", "model.threads" },
	{ NULL, "--ctx", "model.ctx" },
	{ NULL, "--kv-type", "model.kv_type" },
	{ NULL, "--policy", "policy.name" },
	{ NULL, "--profile", "policy.profile" },
	{ NULL, "--seed", "generate.seed" },
	{ NULL, "--temperature", "generate.temperature" },
	{ NULL, "--template", "generate.chat_template" },
};

static int add_set(struct cli_common *c, const char *key, const char *value)
{
	size_t len = strlen(key) + strlen(value) + 2;
	char **ns = realloc(c->sets, (size_t)(c->n_sets + 1) * sizeof *ns), *s;

	if (!ns)
		return -1;
	c->sets = ns;
	if (!(s = malloc(len)))
		return -1;
	snprintf(s, len, "%s%s%s", key, key[0] ? "=" : "", value);
	c->sets[c->n_sets++] = s;
	return 0;
}

int cli_common_add_set(struct cli_common *c, const char *key, const char *value)
{
	return add_set(c, key, value);
}

int cli_common_option(struct cli_common *c, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	const char *val = NULL;

	if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
		if (*i + 1 >= argc)
			goto missing;
		c->config_file = argv[++*i];
		return 1;
	}
	if (strcmp(a, "--set") == 0) {
		if (*i + 1 >= argc)
			goto missing;
		return add_set(c, "", argv[++*i]) ? -1 : 1;
	}
	for (size_t k = 0; k < sizeof shortcuts / sizeof shortcuts[0]; k++) {
		size_t n = strlen(shortcuts[k].alt);
		if ((shortcuts[k].opt && strcmp(a, shortcuts[k].opt) == 0) || strcmp(a, shortcuts[k].alt) == 0) {
			if (*i + 1 >= argc)
				goto missing;
			val = argv[++*i];
		} else if (strncmp(a, shortcuts[k].alt, n) == 0 && a[n] == '=') {
			val = a + n + 1;
		} else {
			continue;
		}
		return add_set(c, shortcuts[k].key, val) ? -1 : 1;
	}
	return 0;
missing:
	fprintf(stderr, "skipper: option %s needs an argument\n", a);
	return -1;
}

int cli_count_arg(const char *who, const char *opt, const char *arg, int *out)
{
	long v;
	if (skipper_parse_long(arg, &v) || v < 0 || v > INT_MAX) {
		fprintf(stderr, "%s: %s: expected a whole number, got '%s'\n", who, opt, arg);
		return -1;
	}
	*out = (int)v;
	return 0;
}

void cli_common_free(struct cli_common *c)
{
	for (int i = 0; i < c->n_sets; i++)
		free(c->sets[i]);
	free(c->sets);
	c->sets = NULL;
	c->n_sets = 0;
}

int cli_load_config(const struct cli_common *c, struct skipper_config **out)
{
	struct skipper_config *cfg;
	struct skipper_error err = { 0 };
	const char *sys = getenv("SKIPPER_SYSTEM_CONFIG");
	int rc;

	if (skipper_config_new(&cfg, &err)) {
		fprintf(stderr, "skipper: %s\n", err.msg);
		return EXIT_FAILURE_GENERIC;
	}
	rc = skipper_config_load_file(cfg, sys ? sys : SKIPPER_SYSCONFDIR "/skipper.ini", 0, &err);
	if (!rc && c->config_file)
		rc = skipper_config_load_file(cfg, c->config_file, 1, &err);
	if (!rc && c->extra_file)
		rc = skipper_config_load_file(cfg, c->extra_file, 1, &err);
	for (int i = 0; !rc && i < c->n_sets; i++)
		rc = skipper_config_set(cfg, c->sets[i], &err);
	if (!rc && c->extra_set)
		rc = skipper_config_set(cfg, c->extra_set, &err);
	if (!rc)
		rc = skipper_config_check(cfg, &err);
	if (rc) {
		fprintf(stderr, "skipper: %s\n", err.msg);
		skipper_config_free(cfg);
		return EXIT_USAGE;
	}
	*out = cfg;
	return EXIT_OK;
}

/* See cli.h. */
FILE *cli_atomic_open(const char *who, const char *path, struct skipper_atomic **a)
{
	struct skipper_error err = { 0 };
	if (!(*a = skipper_atomic_open(path, &err))) {
		fprintf(stderr, "%s: %s\n", who, err.msg);
		return NULL;
	}
	return skipper_atomic_file(*a);
}

/* See cli.h. */
int cli_atomic_close(const char *who, struct skipper_atomic *a)
{
	struct skipper_error err = { 0 };
	if (skipper_atomic_commit(a, &err)) {
		fprintf(stderr, "%s: %s\n", who, err.msg);
		return EXIT_FAILURE_GENERIC;
	}
	return EXIT_OK;
}


int cli_stdout_check(int write_errno)
{
	if (!write_errno && fflush(stdout) == 0 && !ferror(stdout))
		return EXIT_OK;
	fprintf(stderr, "skipper: standard output: %s (the output is lost)\n",
	        strerror(write_errno ? write_errno : errno ? errno : EIO));
	return EXIT_FAILURE_GENERIC;
}
