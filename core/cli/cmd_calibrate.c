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
#include "cli.h"
#include "cli_policy.h"
#include "error.h"

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

int cmd_calibrate(int argc, char **argv)
{
	struct cli_common c = { 0 };
	struct skipper_config *cfg = NULL;
	struct cli_session s = { 0 };
	struct bench_prompt *prompts = NULL;
	const char *policy = NULL, *data = NULL, *out = NULL, *domains = NULL, *only = NULL, *n_dev = NULL;
	const char **texts = NULL, **cats = NULL;
	char **labels = NULL, *path = NULL, errbuf[1024];
	int n_prompts = 0, iterations = 0, max_tokens = 0, limit = 0, rc = EXIT_USAGE, n = 0, tty;
	unsigned long long seed = 1;
	struct skipper_error err = { 0 };

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		/* --policy, --seed and --max-tokens are also common shortcuts; here they
		 * mean the policy to calibrate, the search seed and the trial length */
		int mine = !strcmp(a, "--policy") || !strcmp(a, "--seed") || !strcmp(a, "--max-tokens") ||
		           !strcmp(a, "--tokens");
		int r = mine ? 0 : cli_common_option(&c, argc, argv, &i);
		if (r < 0)
			goto done;
		if (r)
			continue;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			rc = EXIT_OK;
			goto done;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "skipper calibrate: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			goto done;
		}
		if (!strcmp(a, "--policy"))
			policy = argv[++i];
		else if (!strcmp(a, "--data"))
			data = argv[++i];
		else if (!strcmp(a, "--out"))
			out = argv[++i];
		else if (!strcmp(a, "--domains"))
			domains = argv[++i];
		else if (!strcmp(a, "--iterations"))
			iterations = atoi(argv[++i]);
		else if (!strcmp(a, "--max-tokens") || !strcmp(a, "--tokens"))
			max_tokens = atoi(argv[++i]);
		else if (!strcmp(a, "--prompts"))
			n_dev = argv[++i];
		else if (!strcmp(a, "--categories"))
			only = argv[++i];
		else if (!strcmp(a, "--limit"))
			limit = atoi(argv[++i]);
		else if (!strcmp(a, "--seed"))
			seed = strtoull(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "skipper calibrate: unknown option '%s'\n", a);
			usage(stderr);
			goto done;
		}
	}
	if (!policy || !data || !out) {
		fprintf(stderr, "skipper calibrate: --policy, --data and --out are required\n");
		usage(stderr);
		goto done;
	}
	if (iterations < 0 || max_tokens < 0 || limit < 0) {
		fprintf(stderr, "skipper calibrate: --iterations, --max-tokens and --limit take a count >= 0\n");
		goto done;
	}
	/* --prompts is the policy's calib_prompts key, so the INI layering and
	 * its range check apply as to any key */
	snprintf(errbuf, sizeof errbuf, "%s.calib_prompts=%s", policy, n_dev ? n_dev : "");
	if (n_dev && add_set(&c, "%s", errbuf)) {
		rc = EXIT_FAILURE_GENERIC;
		goto done;
	}
	if (add_set(&c, "policy.name=%s", policy) || (rc = cli_load_config(&c, &cfg)))
		goto done;
	rc = EXIT_USAGE;
	if (bench_load_prompts(data, &prompts, &n_prompts, errbuf, sizeof errbuf) ||
	    (domains && strcmp(domains, "category") &&
	     !(labels = load_labels(data, domains, n_prompts, errbuf, sizeof errbuf)))) {
		fprintf(stderr, "skipper calibrate: %s\n", errbuf);
		skipper_config_free(cfg);
		goto done;
	}
	texts = malloc((size_t)n_prompts * sizeof *texts);
	cats = malloc((size_t)n_prompts * sizeof *cats);
	if (!texts || !cats) {
		skipper_config_free(cfg);
		rc = EXIT_FAILURE_GENERIC;
		goto done;
	}
	/* --limit: the first N of each domain, so no domain is crowded out */
	for (int i = 0; i < n_prompts; i++) {
		const char *cat = labels ? labels[i] : prompts[i].category;
		int seen = 0;
		for (int k = 0; k < n; k++)
			seen += !strcmp(cats[k], cat);
		if ((limit && seen >= limit) || (only && !in_list(only, cat)))
			continue;
		texts[n] = prompts[i].text;
		cats[n++] = cat;
	}
	if (mkdir(out, 0777) && errno != EEXIST) {
		fprintf(stderr, "skipper calibrate: cannot create %s: %s\n", out, strerror(errno));
		skipper_config_free(cfg);
		goto done;
	}
	if ((rc = cli_session_open(&s, cfg)))
		goto done;
	if (!s.policy) {
		fprintf(stderr, "skipper calibrate: policy 'none' has nothing to calibrate\n");
		rc = EXIT_USAGE;
		goto done;
	}
	if (!(path = malloc(strlen(out) + strlen(policy) + 8))) {
		rc = EXIT_FAILURE_GENERIC;
		goto done;
	}
	sprintf(path, "%s/%s.ini", out, policy);
	tty = isatty(STDERR_FILENO);
	cli_install_signals();
	struct skipper_calibrate cal = {
		.n_prompts = n, .prompts = texts, .categories = cats, .output = path, .iterations = iterations,
		.max_tokens = max_tokens, .seed = seed, .progress = progress, .progress_ctx = &tty,
	};
	fprintf(stderr, "skipper calibrate: %s on %d prompts from %s\n", policy, n, data);
	if (skipper_policy_calibrate(cli_policy_instance(s.policy), &cal, &err)) {
		fprintf(stderr, "skipper calibrate: %s\n", err.msg);
		if (cli_interrupted)
			fprintf(stderr, "skipper calibrate: finished evaluations are kept in %s/%s.search; "
			                "the same command resumes from them\n", out, policy);
		rc = cli_interrupted ? EXIT_INTERRUPTED : EXIT_FAILURE_GENERIC;
		goto done;
	}
	printf("%s\n", path);
	rc = EXIT_OK;
done:
	cli_session_close(&s);
	if (prompts)
		bench_free_prompts(prompts, n_prompts);
	for (int i = 0; labels && i < n_prompts; i++)
		free(labels[i]);
	free(labels);
	free(texts);
	free(cats);
	free(path);
	cli_common_free(&c);
	return rc;
}
