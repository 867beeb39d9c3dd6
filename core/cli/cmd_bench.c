/* skipper bench: autoregressive decoding and each policy, interleaved on
 * the same prompts, compared per category (DESIGN §10). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "cli_policy.h"
#include "error.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: skipper bench --data FILE.jsonl [--policies LIST] [--categories LIST]\n"
	        "                     [--limit N] [--per-category N] [--max-tokens N] [--warmup N]\n"
	        "                     [--out PREFIX] [-c FILE] [--set SECTION.KEY=VALUE]...\n"
	        "LIST items are policy names or INI files whose [policy] name and policy section\n"
	        "are layered on the base configuration (default: none,<[policy] name>).\n");
}

struct variant {
	char *label;
	struct skipper_config *cfg; /* NULL for none */
	struct cli_policy *policy;
	struct skipper_engine *engine;
};

struct collect {
	int32_t *tok;
	int n, cap;
};

static int on_token(void *user, int32_t t)
{
	struct collect *c = user;
	if (c->n == c->cap) {
		int cap = c->cap ? c->cap * 2 : 256;
		int32_t *nt = realloc(c->tok, (size_t)cap * sizeof *nt);
		if (!nt)
			return 1;
		c->tok = nt;
		c->cap = cap;
	}
	c->tok[c->n++] = t;
	return cli_interrupted != 0;
}

static int index_of(char **list, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(list[i], s) == 0)
			return i;
	return -1;
}

static int split(const char *s, char ***out)
{
	char *copy = strdup(s), *save = NULL, **list = NULL;
	int n = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char **nl = realloc(list, (size_t)(n + 1) * sizeof *nl);
		if (!nl)
			break;
		list = nl;
		list[n++] = strdup(t);
	}
	free(copy);
	*out = list;
	return n;
}

static void free_list(char **l, int n)
{
	for (int i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Build one variant: a policy name, or an INI file layered on the base. */
static int open_variant(struct cli_session *s, const struct cli_common *base, const char *item, struct variant *v)
{
	struct skipper_error err = { 0 };
	const char *name = item;

	memset(v, 0, sizeof *v);
	if (ends_with(item, ".ini")) {
		struct cli_common c = *base;
		const char *slash = strrchr(item, '/');
		int rc;
		c.extra_file = item;
		if ((rc = cli_load_config(&c, &v->cfg)))
			return rc;
		name = skipper_config_get(v->cfg, "policy", "name");
		v->label = strndup(slash ? slash + 1 : item, strlen(slash ? slash + 1 : item) - 4);
	} else {
		struct cli_common c = *base;
		int rc;
		if ((rc = cli_load_config(&c, &v->cfg)))
			return rc;
		v->label = strdup(item);
	}
	if (strcmp(name, "none") != 0 && cli_policy_open(s, v->cfg, name, &v->policy, &err)) {
		fprintf(stderr, "skipper: %s\n", err.msg);
		return EXIT_FAILURE_GENERIC;
	}
	if (skipper_engine_new(s->be, s->tok, v->policy ? cli_policy_instance(v->policy) : NULL, &v->engine, &err)) {
		fprintf(stderr, "skipper: %s\n", err.msg);
		return EXIT_FAILURE_GENERIC;
	}
	if (v->policy)
		cli_policy_bind_engine(v->policy, v->engine);
	return EXIT_OK;
}

static void close_variant(struct variant *v)
{
	skipper_engine_free(v->engine);
	cli_policy_close(v->policy);
	skipper_config_free(v->cfg);
	free(v->label);
}

static void add(struct bench_cell *c, const struct skipper_run_stats *st, int mismatch)
{
	c->n_prompts++;
	c->n_generated += st->n_generated;
	c->n_decoded += st->n_generated > 0 ? st->n_generated - 1 : 0;
	c->rounds += st->rounds;
	c->drafted += st->drafted;
	c->accepted += st->accepted;
	c->seconds += st->t_total - st->t_prefill;
	c->prefill += st->t_prefill;
	c->draft += st->t_draft;
	c->verify += st->t_verify;
	c->policy += st->t_policy;
	c->mismatches += mismatch;
}

int cmd_bench(int argc, char **argv)
{
	struct cli_common c = { 0 };
	struct skipper_config *cfg = NULL;
	struct cli_session s = { 0 };
	struct bench_prompt *prompts = NULL;
	struct variant *vars = NULL;
	struct bench_report rep = { 0 };
	const char *data = NULL, *policies = NULL, *cats = NULL, *out = NULL;
	char **items = NULL, **want_cats = NULL, errbuf[1024];
	int n_items = 0, n_want = 0, n_prompts = 0, limit = 0, per_cat = 0, warmup = 1, rc = EXIT_USAGE;
	int *sel = NULL, n_sel = 0;
	FILE *jsonl = NULL;
	struct collect base_out = { 0 }, cur = { 0 };

	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(&c, argc, argv, &i);
		const char *a = argv[i];
		if (r < 0)
			goto done;
		if (r)
			continue;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			rc = EXIT_OK;
			goto done;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "skipper bench: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			goto done;
		}
		if (strcmp(a, "--data") == 0)
			data = argv[++i];
		else if (strcmp(a, "--policies") == 0)
			policies = argv[++i];
		else if (strcmp(a, "--categories") == 0)
			cats = argv[++i];
		else if (strcmp(a, "--out") == 0)
			out = argv[++i];
		else if (strcmp(a, "--limit") == 0)
			limit = atoi(argv[++i]);
		else if (strcmp(a, "--per-category") == 0)
			per_cat = atoi(argv[++i]);
		else if (strcmp(a, "--warmup") == 0)
			warmup = atoi(argv[++i]);
		else if (strcmp(a, "--max-tokens") == 0) {
			char set[64];
			snprintf(set, sizeof set, "generate.max_tokens=%s", argv[++i]);
			c.sets = realloc(c.sets, (size_t)(c.n_sets + 1) * sizeof *c.sets);
			c.sets[c.n_sets++] = strdup(set);
		} else {
			fprintf(stderr, "skipper bench: unknown option '%s'\n", a);
			usage(stderr);
			goto done;
		}
	}
	if (!data) {
		fprintf(stderr, "skipper bench: --data FILE.jsonl is required\n");
		usage(stderr);
		goto done;
	}
	if (limit < 0 || per_cat < 0 || warmup < 0) {
		fprintf(stderr, "skipper bench: --limit, --per-category and --warmup take a count >= 0\n");
		goto done;
	}
	if ((rc = cli_load_config(&c, &cfg)))
		goto done;
	{
		char dflt[256];
		snprintf(dflt, sizeof dflt, "none,%s", skipper_config_get(cfg, "policy", "name"));
		n_items = split(policies ? policies : strcmp(skipper_config_get(cfg, "policy", "name"), "none") ? dflt : "none",
		                &items);
	}
	if (cats)
		n_want = split(cats, &want_cats);
	if (bench_load_prompts(data, &prompts, &n_prompts, errbuf, sizeof errbuf)) {
		fprintf(stderr, "skipper bench: %s\n", errbuf);
		skipper_config_free(cfg);
		rc = EXIT_USAGE;
		goto done;
	}

	/* Prompts: wanted categories, --per-category each, then --limit taken
	 * round-robin across categories so every category is represented. */
	sel = malloc((size_t)n_prompts * sizeof *sel);
	rep.categories = calloc((size_t)n_prompts, sizeof *rep.categories);
	{
		int *count = calloc((size_t)n_prompts, sizeof *count), *taken = calloc((size_t)n_prompts, sizeof *taken);
		for (int i = 0; i < n_prompts; i++) {
			int k;
			if (n_want && index_of(want_cats, n_want, prompts[i].category) < 0)
				continue;
			if ((k = index_of(rep.categories, rep.n_categories, prompts[i].category)) < 0) {
				k = rep.n_categories++;
				rep.categories[k] = strdup(prompts[i].category);
			}
			if (per_cat && count[k] >= per_cat)
				continue;
			count[k]++;
		}
		for (int round = 0; limit == 0 || n_sel < limit; round++) {
			int added = 0;
			for (int k = 0; k < rep.n_categories && (limit == 0 || n_sel < limit); k++) {
				int seen = 0;
				for (int i = 0; i < n_prompts; i++) {
					if (strcmp(prompts[i].category, rep.categories[k]) != 0)
						continue;
					if (seen++ == taken[k] && taken[k] < count[k]) {
						sel[n_sel++] = i;
						taken[k]++;
						added = 1;
						break;
					}
				}
			}
			if (!added)
				break;
		}
		free(count);
		free(taken);
	}
	if (n_want && rep.n_categories < n_want)
		fprintf(stderr, "skipper bench: warning: some --categories are not in %s\n", data);
	if (!n_sel) {
		fprintf(stderr, "skipper bench: no prompt selected from %s\n", data);
		skipper_config_free(cfg);
		rc = EXIT_USAGE;
		goto done;
	}

	/* One model and backend; one engine per policy so stateful policies
	 * keep their state across prompts. */
	if (skipper_config_set(cfg, "policy.name=none", NULL) || (rc = cli_session_open(&s, cfg)))
		goto done;
	vars = calloc((size_t)n_items, sizeof *vars);
	rep.n_policies = n_items;
	rep.policies = calloc((size_t)n_items, sizeof *rep.policies);
	rep.baseline = -1;
	for (int i = 0; i < n_items; i++) {
		if ((rc = open_variant(&s, &c, items[i], &vars[i])))
			goto done;
		rep.policies[i] = vars[i].label;
		if (strcmp(items[i], "none") == 0 && rep.baseline < 0)
			rep.baseline = i;
	}
	rep.cells = calloc((size_t)n_items * (rep.n_categories + 1), sizeof *rep.cells);
	if (out) {
		char path[4096];
		snprintf(path, sizeof path, "%s.jsonl", out);
		if (!(jsonl = fopen(path, "w"))) {
			fprintf(stderr, "skipper bench: %s: cannot write\n", path);
			rc = EXIT_FAILURE_GENERIC;
			goto done;
		}
	}

	cli_install_signals();
	for (int w = -(warmup < n_sel ? warmup : n_sel); w < n_sel && !cli_interrupted; w++) {
		int pi = sel[w < 0 ? w + (warmup < n_sel ? warmup : n_sel) : w];
		int k = index_of(rep.categories, rep.n_categories, prompts[pi].category);
		int32_t *ids = NULL;
		size_t n_ids = 0;
		if ((rc = cli_prompt_tokens(&s, prompts[pi].text, &ids, &n_ids)))
			goto done;
		if (isatty(STDERR_FILENO) && w >= 0)
			fprintf(stderr, "\r[%d/%d] %s %-20s", w + 1, n_sel, prompts[pi].id, prompts[pi].category);
		for (int o = 0; o < n_items; o++) {
			/* the baseline first, so the others can be compared with it */
			int v = rep.baseline < 0 ? o : o == 0 ? rep.baseline : o <= rep.baseline ? o - 1 : o;
			struct skipper_run_stats st;
			struct skipper_error err = { 0 };
			int mismatch = 0;
			cur.n = 0;
			if (skipper_engine_generate(vars[v].engine, ids, (int)n_ids, &s.gen, on_token, &cur, &st, &err)) {
				fprintf(stderr, "\nskipper bench: %s on prompt %s: %s\n", vars[v].label, prompts[pi].id, err.msg);
				free(ids);
				rc = EXIT_FAILURE_GENERIC;
				goto done;
			}
			if (w < 0)
				continue;
			if (v == rep.baseline) {
				base_out.n = 0;
				for (int t = 0; t < cur.n; t++)
					on_token(&base_out, cur.tok[t]);
			} else if (rep.baseline >= 0 && s.gen.sampling.temperature <= 0) {
				mismatch = cur.n != base_out.n || memcmp(cur.tok, base_out.tok, (size_t)cur.n * sizeof *cur.tok);
			}
			add(&rep.cells[v * (rep.n_categories + 1) + k], &st, mismatch);
			add(&rep.cells[v * (rep.n_categories + 1) + rep.n_categories], &st, mismatch);
			if (jsonl) {
				json_t *j = json_pack("{s:s, s:s, s:s, s:b, s:o}", "id", prompts[pi].id, "category",
				                      prompts[pi].category, "policy", vars[v].label, "matches_baseline", !mismatch,
				                      "stats", cli_stats_json(&st));
				json_dumpf(j, jsonl, JSON_COMPACT);
				fputc('\n', jsonl);
				json_decref(j);
			}
		}
		free(ids);
	}
	if (isatty(STDERR_FILENO))
		fputc('\n', stderr);
	bench_write_markdown(&rep, stdout);
	if (out) {
		char path[4096];
		FILE *md;
		snprintf(path, sizeof path, "%s.md", out);
		if ((md = fopen(path, "w"))) {
			bench_write_markdown(&rep, md);
			fclose(md);
		}
		snprintf(path, sizeof path, "%s.svg", out);
		if (bench_write_chart(&rep, path) == 0)
			fprintf(stderr, "skipper bench: wrote %s.jsonl, %s.md and %s\n", out, out, path);
		else
			fprintf(stderr, "skipper bench: wrote %s.jsonl and %s.md (no chart: gnuplot missing or failed)\n",
			        out, out);
	}
	rc = cli_interrupted ? EXIT_INTERRUPTED : EXIT_OK;
	{
		int bad = 0;
		for (int v = 0; v < n_items; v++)
			bad += rep.cells[v * (rep.n_categories + 1) + rep.n_categories].mismatches;
		if (bad) {
			fprintf(stderr, "skipper bench: %d greedy outputs differ from none's: the lossless guarantee failed\n",
			        bad);
			rc = EXIT_FAILURE_GENERIC;
		}
	}
done:
	if (jsonl)
		fclose(jsonl);
	for (int i = 0; vars && i < n_items; i++)
		close_variant(&vars[i]);
	free(vars);
	free(rep.policies);
	free(rep.cells);
	for (int k = 0; k < rep.n_categories; k++)
		free(rep.categories[k]);
	free(rep.categories);
	free(sel);
	free(cur.tok);
	free(base_out.tok);
	bench_free_prompts(prompts, n_prompts);
	free_list(items, n_items);
	free_list(want_cats, n_want);
	cli_common_free(&c);
	if (s.cfg)
		cli_session_close(&s);
	return rc;
}
