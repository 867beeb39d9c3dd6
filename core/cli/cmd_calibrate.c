/* skipper calibrate: run a policy's offline search (its calibrate hook) on
 * JSONL prompts and write the profile it produces under --out. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "base/error.h"
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: skipper calibrate --policy NAME --data FILE.jsonl --out DIR [--domains KEY]\n"
	           "                         [--iterations N] [--prompts N] [--tokens N] [--limit N] [--seed N]\n"
	           "                         [--categories LIST]\n"
	           "                         [-c FILE] [--set SECTION.KEY=VALUE]...\n"
	           "Writes DIR/NAME.ini (knn-router also DIR/NAME.anchors.safetensors) and the\n"
	           "search journal DIR/NAME.search, from which the same command resumes.\n"
	           "--iterations N search steps in all (journal included; policy default 1000)\n"
	           "--prompts N    development prompts per evaluation (policy default 4)\n"
	           "--tokens N     new tokens per prompt per evaluation (policy default 32;\n"
	           "               --max-tokens is the same)\n"
	           "--domains KEY  JSON field holding each prompt's domain (default category)\n"
	           "--limit N      at most N prompts per domain (first in file order)\n"
	           "--categories L only prompts whose domain is in the comma-separated list L\n");
}

/* The value of field key on each non-blank line, in bench_load_prompts'
 * order. Numbers are turned into text so "label": 3 works too. */
static char **load_labels(const char *path, const char *key, int n, char *errbuf, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char **out = calloc((size_t)n, sizeof *out), *line = NULL;
	size_t cap = 0;
	int i = 0, lineno = 0;

	if (!f || !out) {
		snprintf(errbuf, errlen, "%s: cannot open", path);
		goto fail;
	}
	while (i < n && getline(&line, &cap, f) > 0) {
		json_t *o, *v;
		char buf[64];
		lineno++;
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		o = json_loads(line, 0, NULL);
		v = json_object_get(o, key);
		if (json_is_string(v))
			out[i] = strdup(json_string_value(v));
		else if (json_is_integer(v))
			snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v)), out[i] = strdup(buf);
		json_decref(o);
		if (!out[i]) {
			snprintf(errbuf, errlen, "%s:%d: no string field \"%s\" (--domains)", path, lineno, key);
			goto fail;
		}
		i++;
	}
	free(line);
	fclose(f);
	return out;
fail:
	free(line);
	if (f)
		fclose(f);
	for (int k = 0; out && k < n; k++)
		free(out[k]);
	free(out);
	return NULL;
}

static int in_list(const char *list, const char *s)
{
	size_t n = strlen(s);
	for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
		if (strncmp(p, s, n) == 0 && (p[n] == ',' || p[n] == 0))
			return 1;
	return 0;
}

static void progress(void *ctx, int done, int total, const char *what)
{
	int tty = *(int *)ctx;
	fprintf(stderr, tty ? "\r\033[K[%d/%d] %s" : "[%d/%d] %s\n", done, total, what);
	if (tty && done == total)
		fputc('\n', stderr);
	fflush(stderr);
}

static int add_set(struct cli_common *c, const char *fmt, const char *v)
{
	char set[512];
	char **ns = realloc(c->sets, (size_t)(c->n_sets + 1) * sizeof *ns);
	if (!ns)
		return -1;
	c->sets = ns;
	snprintf(set, sizeof set, fmt, v);
	return (c->sets[c->n_sets++] = strdup(set)) ? 0 : -1;
}

struct calib_run {
	struct cli_common c;
	const char *policy, *data, *out, *domains, *only, *n_dev;
	int iterations, max_tokens, limit;
	unsigned long long seed;
	struct bench_prompt *prompts;
	int n_prompts;
	char **labels;            /* --domains FIELD: each prompt's domain, else NULL */
	const char **texts, **cats; /* the prompts calibrated on, and their domains */
	int n;
};

/* --policy, --seed and --max-tokens are also common shortcuts; here they
 * mean the policy to calibrate, the search seed and the trial length. */
static const char *const own_options[] = { "--policy", "--seed", "--max-tokens", "--tokens" };

/* argv with "--policy=X" of the options above as "--policy" "X", as the
 * common shortcuts take either form; pointers into argv (free the array
 * only). NULL when out of memory. */
static char **split_own_options(int argc, char **argv, int *n)
{
	char **v = malloc(sizeof *v * (size_t)(2 * argc + 1));
	*n = 0;
	for (int i = 0; v && i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		size_t k = 0, len = eq ? (size_t)(eq - argv[i]) : 0;
		while (eq && k < sizeof own_options / sizeof own_options[0] &&
		       (strlen(own_options[k]) != len || strncmp(argv[i], own_options[k], len)))
			k++;
		if (eq && k < sizeof own_options / sizeof own_options[0]) {
			v[(*n)++] = (char *)own_options[k];
			v[(*n)++] = (char *)eq + 1;
		} else {
			v[(*n)++] = argv[i];
		}
	}
	return v;
}

/* Command line into b; returns -1 to go on, else the exit code. */
static int parse_args(struct calib_run *b, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int mine = 0;
		for (size_t k = 0; k < sizeof own_options / sizeof own_options[0]; k++)
			mine |= !strcmp(a, own_options[k]);
		int r = mine ? 0 : cli_common_option(&b->c, argc, argv, &i);
		if (r < 0)
			return EXIT_USAGE;
		if (r)
			continue;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return EXIT_OK;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "skipper calibrate: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE;
		}
		if (!strcmp(a, "--policy"))
			b->policy = argv[++i];
		else if (!strcmp(a, "--data"))
			b->data = argv[++i];
		else if (!strcmp(a, "--out"))
			b->out = argv[++i];
		else if (!strcmp(a, "--domains"))
			b->domains = argv[++i];
		else if (!strcmp(a, "--iterations") || !strcmp(a, "--max-tokens") || !strcmp(a, "--tokens")) {
			int *n = !strcmp(a, "--iterations") ? &b->iterations : &b->max_tokens;
			if (cli_count_arg("skipper calibrate", a, argv[++i], n))
				return EXIT_USAGE;
		} else if (!strcmp(a, "--prompts"))
			b->n_dev = argv[++i];
		else if (!strcmp(a, "--categories"))
			b->only = argv[++i];
		else if (!strcmp(a, "--limit")) {
			if (cli_count_arg("skipper calibrate", a, argv[++i], &b->limit))
				return EXIT_USAGE;
		} else if (!strcmp(a, "--seed")) {
			char *end;
			const char *v = argv[++i];
			errno = 0;
			b->seed = strtoull(v, &end, 10);
			if (end == v || *end || *v == '-' || errno) {
				fprintf(stderr, "skipper calibrate: --seed: expected a whole number, got '%s'\n", v);
				return EXIT_USAGE;
			}
		} else {
			fprintf(stderr, "skipper calibrate: unknown option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!b->policy || !b->data || !b->out) {
		fprintf(stderr, "skipper calibrate: --policy, --data and --out are required\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	return -1;
}

/* Load the data and keep, per domain, the first --limit prompts of the
 * wanted --categories, so no domain is crowded out. */
static int pick_prompts(struct calib_run *b)
{
	char errbuf[1024];

	if (bench_load_prompts(b->data, &b->prompts, &b->n_prompts, errbuf, sizeof errbuf) ||
	    (b->domains && strcmp(b->domains, "category") &&
	     !(b->labels = load_labels(b->data, b->domains, b->n_prompts, errbuf, sizeof errbuf)))) {
		fprintf(stderr, "skipper calibrate: %s\n", errbuf);
		return EXIT_USAGE;
	}
	b->texts = malloc(((size_t)b->n_prompts + 1) * sizeof *b->texts);
	b->cats = malloc(((size_t)b->n_prompts + 1) * sizeof *b->cats);
	if (!b->texts || !b->cats)
		return EXIT_FAILURE_GENERIC;
	for (int i = 0; i < b->n_prompts; i++) {
		const char *cat = b->labels ? b->labels[i] : b->prompts[i].category;
		int seen = 0;
		for (int k = 0; k < b->n; k++)
			seen += !strcmp(b->cats[k], cat);
		if ((b->limit && seen >= b->limit) || (b->only && !in_list(b->only, cat)))
			continue;
		b->texts[b->n] = b->prompts[i].text;
		b->cats[b->n++] = cat;
	}
	return EXIT_OK;
}

/* The policy's calibrate hook on the picked prompts, writing OUT/POLICY.ini. */
static int calibrate(struct calib_run *b, struct skipper_session *s)
{
	struct skipper_error err = { 0 };
	char *path = malloc(strlen(b->out) + strlen(b->policy) + 8);
	int tty = isatty(STDERR_FILENO), rc = EXIT_OK;

	if (!path)
		return EXIT_FAILURE_GENERIC;
	sprintf(path, "%s/%s.ini", b->out, b->policy);
	cli_install_signals();
	struct skipper_calibrate cal = {
		.n_prompts = b->n, .prompts = b->texts, .categories = b->cats, .output = path,
		.iterations = b->iterations, .max_tokens = b->max_tokens, .seed = b->seed, .progress = progress,
		.progress_ctx = &tty,
	};
	fprintf(stderr, "skipper calibrate: %s on %d prompts from %s\n", b->policy, b->n, b->data);
	if (skipper_policy_calibrate(skipper_engine_policy(s->engine), &cal, &err)) {
		fprintf(stderr, "skipper calibrate: %s\n", err.msg);
		if (cli_interrupted)
			fprintf(stderr, "skipper calibrate: finished evaluations are kept in %s/%s.search; "
			                "the same command resumes from them\n", b->out, b->policy);
		rc = cli_interrupted ? EXIT_INTERRUPTED : EXIT_FAILURE_GENERIC;
	} else {
		printf("%s\n", path);
	}
	free(path);
	return rc;
}

int cmd_calibrate(int argc, char **argv)
{
	struct calib_run b = { .seed = 1 };
	struct skipper_config *cfg = NULL;
	struct skipper_session *s = NULL;
	struct skipper_session_opts so = { .no_profile_search = 1 };
	int rc;

	int n_args;
	char **args = split_own_options(argc, argv, &n_args);
	if (!args) {
		fprintf(stderr, "skipper calibrate: out of memory\n");
		return EXIT_FAILURE_GENERIC;
	}
	rc = parse_args(&b, n_args, args);
	free(args); /* b keeps pointers into argv, not into args */
	if (rc >= 0)
		goto done;
	/* --prompts is the policy's calib_prompts key, so the INI layering and
	 * its range check apply as to any key */
	char set[512];
	snprintf(set, sizeof set, "%s.calib_prompts=%s", b.policy, b.n_dev ? b.n_dev : "");
	if (b.n_dev && add_set(&b.c, "%s", set)) {
		rc = EXIT_FAILURE_GENERIC;
		goto done;
	}
	if (add_set(&b.c, "policy.name=%s", b.policy) || (rc = cli_load_config(&b.c, &cfg)) ||
	    (rc = pick_prompts(&b)))
		goto done;
	if (mkdir(b.out, 0777) && errno != EEXIST) {
		fprintf(stderr, "skipper calibrate: cannot create %s: %s\n", b.out, strerror(errno));
		rc = EXIT_USAGE;
		goto done;
	}
	/* calibrate writes a profile; it does not start from one it finds */
	if ((rc = cli_session_open(cfg, &so, &s)))
		goto done;
	if (!skipper_engine_policy(s->engine)) {
		fprintf(stderr, "skipper calibrate: policy 'none' has nothing to calibrate\n");
		rc = EXIT_USAGE;
		goto done;
	}
	rc = calibrate(&b, s);
done:
	skipper_config_free(cfg);
	skipper_session_close(s);
	if (b.prompts)
		bench_free_prompts(b.prompts, b.n_prompts);
	for (int i = 0; b.labels && i < b.n_prompts; i++)
		free(b.labels[i]);
	free(b.labels);
	free(b.texts);
	free(b.cats);
	cli_common_free(&b.c);
	return rc;
}
