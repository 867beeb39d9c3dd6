/* Options and configuration loading shared by the model-using commands,
 * and the small file helpers they share (atomic writes, reading a file). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_policy.h"
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

/* A section of another policy than the configured one (a file that keeps
 * several policies' sections): its plugin must load and know each key. */
static int check_other_section(const struct skipper_config_entry *first, const struct skipper_policy_search *search,
                               const struct skipper_config *cfg, struct skipper_error *err)
{
	struct skipper_policy_lib *lib = NULL;
	int rc = skipper_policy_load(first->section, search, &lib, err);

	if (rc)
		return first->line > 0 ? skipper_fail_prefix(err, "%s:%d: [%s]", first->file, first->line, first->section)
		                       : skipper_fail_prefix(err, "%s: [%s]", first->file, first->section);
	rc = skipper_policy_check_keys(lib, cfg, err);
	skipper_policy_unload(lib);
	return rc;
}

/* Policy sections are checked by their plugins, with no model bound, so a
 * typo there is reported before any model loads: the configured policy's
 * section in full, every other policy's section key by key. */
static int check_policy_keys(const struct skipper_config *cfg, struct skipper_error *err)
{
	struct skipper_policy_search search;
	struct skipper_policy_lib *lib = NULL;
	const struct skipper_config_entry *e;
	const char *name = skipper_config_get(cfg, "policy", "name"), *why = NULL;
	struct stat st;
	int rc;

	cli_policy_search(cfg, &search);
	if (search.plugin_dir)
		why = stat(search.plugin_dir, &st) != 0 ? strerror(errno) : !S_ISDIR(st.st_mode) ? "not a directory" : NULL;
	if (why) {
		e = skipper_config_find(cfg, "policy", "plugin_dir");
		return e->line > 0 ? skipper_fail(err, SKIPPER_ERR_CONFIG, "%s:%d: [policy] plugin_dir %s: %s", e->file,
		                                  e->line, e->value, why)
		                   : skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: [policy] plugin_dir %s: %s", e->file,
		                                  e->value, why);
	}
	if ((rc = skipper_policy_load(name, &search, &lib, err)))
		return rc;
	rc = skipper_policy_check_config(lib, cfg, err);
	skipper_policy_unload(lib);
	for (size_t i = 0; !rc && (e = skipper_config_entry_at(cfg, i)); i++) {
		int seen = skipper_config_core_section(e->section) || !strcmp(e->section, name);
		for (size_t j = 0; !seen && j < i; j++)
			seen = !strcmp(skipper_config_entry_at(cfg, j)->section, e->section);
		if (!seen)
			rc = check_other_section(e, &search, cfg, err);
	}
	return rc;
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
		rc = skipper_config_validate(cfg, cli_policy_section_ok, cfg, &err);
	if (!rc)
		rc = check_policy_keys(cfg, &err);
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

/* See cli.h. */
long cli_read_line(FILE *f, char **buf, size_t *cap, size_t max)
{
	return skipper_read_line(f, buf, cap, max);
}

/* See cli.h. */
char *cli_read_all(FILE *f, size_t max, char *why, size_t why_n)
{
	size_t len = 0, cap = 4096;
	char *s = malloc(cap);

	while (s) {
		size_t n = fread(s + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
		if (len > max) {
			snprintf(why, why_n, "more than %zu MiB of text", max >> 20);
			free(s);
			return NULL;
		}
		if (len + 1 == cap) {
			char *t = realloc(s, cap *= 2);
			if (!t)
				free(s);
			s = t;
		}
	}
	if (!s || ferror(f) || memchr(s, '\0', len)) {
		snprintf(why, why_n, "%s", !s ? "out of memory" : ferror(f) ? strerror(errno) : "NUL byte in the text");
		free(s);
		return NULL;
	}
	s[len] = '\0';
	return s;
}
