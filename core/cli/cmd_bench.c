/* skipper bench: autoregressive decoding and each policy, interleaved on
 * the same prompts, compared per category (DESIGN §10). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic.h"
#include "bench.h"
#include "base/atomic.h"
#include "base/error.h"
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: skipper bench --data FILE.jsonl [--policies LIST] [--categories LIST]\n"
	        "                     [--limit N] [--per-category N] [--max-tokens N] [--warmup N]\n"
	        "                     [--out PREFIX | --dump-prompts FILE|-] [-c FILE]\n"
	        "                     [--set SECTION.KEY=VALUE]...\n"
	        "LIST items are policy names or INI files whose [policy] name and policy section\n"
	        "are layered on the base configuration (default: none,<[policy] name>).\n"
	        "--dump-prompts writes the selected prompts as a run would see them (JSON lines:\n"
	        "the user text, the prompt with the chat template applied, its token ids) and\n"
	        "runs nothing.\n");
}

struct variant {
	char *label;
	struct skipper_config *cfg;
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

/* Token ids as a JSON array (a new reference; NULL on no memory, which
 * json_pack then reports as a failed pack). */
static json_t *id_array(const int32_t *ids, int n)
{
	json_t *a = json_array();
	for (int i = 0; a && i < n; i++)
		json_array_append_new(a, json_integer(ids[i]));
	return a;
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

/* One variant's configuration, before any model is loaded (a bad one is
 * a usage error, as for generate): an INI file layered on the base, or
 * the base with [policy] name set to the item. */
static int variant_config(const struct cli_common *base, const char *item, struct variant *v)
{
	struct cli_common c = *base;
	const char *file = strrchr(item, '/') ? strrchr(item, '/') + 1 : item;
	char *set = NULL;
	int rc, ini = ends_with(item, ".ini");

	memset(v, 0, sizeof *v);
	if (ini)
		c.extra_file = item;
	else if (asprintf(&set, "policy.name=%s", item) >= 0)
		c.extra_set = set;
	v->label = ini ? strndup(file, strlen(file) - 4) : strdup(item);
	if (!v->label || (!ini && !set)) {
		fprintf(stderr, "skipper bench: out of memory\n");
		rc = EXIT_FAILURE_GENERIC;
	} else {
		rc = cli_load_config(&c, &v->cfg);
	}
	free(set);
	return rc;
}

/* Its policy and engine on the loaded model. */
static int open_variant(struct skipper_session *s, struct variant *v)
{
	struct skipper_error err = { 0 };
	int rc = skipper_session_engine(s, v->cfg, &v->engine, &err);
	return rc ? cli_fail(&err, rc) : EXIT_OK;
}

static void close_variant(struct variant *v)
{
	skipper_engine_free(v->engine);
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

/* Everything one bench run holds; freed by bench_free. */
struct bench_run {
	struct cli_common c;
	const char *data, *policies, *cats, *out, *dump;
	int limit, per_cat, warmup;
	char **items, **want_cats;
	int n_items, n_want;
	struct bench_prompt *prompts;
	int n_prompts;
	int *sel, n_sel;          /* indices of the measured prompts, in run order */
	struct skipper_session *s;
	struct variant *vars;     /* [n_items] */
	struct bench_report rep;
	FILE *jsonl;              /* --out: PREFIX.jsonl, whole when the run ends or not at all */
	struct skipper_atomic *jsonl_a;
	struct collect base_out, cur;
};

/* Command line into b; returns -1 to go on, else the exit code. */
static int parse_args(struct bench_run *b, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(&b->c, argc, argv, &i);
		const char *a = argv[i];
		if (r < 0)
			return EXIT_USAGE;
		if (r)
			continue;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return EXIT_OK;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "skipper bench: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE;
		}
		if (strcmp(a, "--data") == 0)
			b->data = argv[++i];
		else if (strcmp(a, "--policies") == 0)
			b->policies = argv[++i];
		else if (strcmp(a, "--categories") == 0)
			b->cats = argv[++i];
		else if (strcmp(a, "--out") == 0)
			b->out = argv[++i];
		else if (strcmp(a, "--dump-prompts") == 0)
			b->dump = argv[++i];
		else if (strcmp(a, "--limit") == 0 || strcmp(a, "--per-category") == 0 || strcmp(a, "--warmup") == 0) {
			int *n = !strcmp(a, "--limit") ? &b->limit : !strcmp(a, "--warmup") ? &b->warmup : &b->per_cat;
			if (cli_count_arg("skipper bench", a, argv[++i], n))
				return EXIT_USAGE;
		} else if (strcmp(a, "--max-tokens") == 0) {
			char set[64];
			snprintf(set, sizeof set, "generate.max_tokens=%s", argv[++i]);
			b->c.sets = realloc(b->c.sets, (size_t)(b->c.n_sets + 1) * sizeof *b->c.sets);
			b->c.sets[b->c.n_sets++] = strdup(set);
		} else {
			fprintf(stderr, "skipper bench: unknown option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!b->data) {
		fprintf(stderr, "skipper bench: --data FILE.jsonl is required\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (b->dump && b->out) {
		fprintf(stderr, "skipper bench: --dump-prompts runs nothing, so --out has nothing to write\n");
		return EXIT_USAGE;
	}
	return -1;
}

/* Prompts: wanted categories, --per-category each, then --limit taken
 * round-robin across categories so every category is represented. Only
 * categories with a selected prompt enter the report. */
static int select_prompts(struct bench_run *b)
{
	struct bench_report *rep = &b->rep;
	char **seen = calloc((size_t)b->n_prompts + 1, sizeof *seen);
	int n_seen = 0, *count = calloc((size_t)b->n_prompts + 1, sizeof *count);
	int *taken = calloc((size_t)b->n_prompts + 1, sizeof *taken);

	b->sel = malloc(((size_t)b->n_prompts + 1) * sizeof *b->sel);
	rep->categories = calloc((size_t)b->n_prompts + 1, sizeof *rep->categories);
	if (!seen || !count || !taken || !b->sel || !rep->categories) {
		free(seen);
		free(count);
		free(taken);
		fprintf(stderr, "skipper bench: out of memory\n");
		return EXIT_FAILURE_GENERIC;
	}
	for (int i = 0; i < b->n_prompts; i++) {
		const char *cat = b->prompts[i].category;
		int k;
		if (b->n_want && index_of(b->want_cats, b->n_want, cat) < 0)
			continue;
		if ((k = index_of(seen, n_seen, cat)) < 0)
			seen[k = n_seen++] = (char *)cat;
		if (b->per_cat && count[k] >= b->per_cat)
			continue;
		count[k]++;
	}
	for (int added = 1; added && (b->limit == 0 || b->n_sel < b->limit);) {
		added = 0;
		for (int k = 0; k < n_seen && (b->limit == 0 || b->n_sel < b->limit); k++) {
			int nth = 0;
			for (int i = 0; i < b->n_prompts && taken[k] < count[k]; i++) {
				if (strcmp(b->prompts[i].category, seen[k]) != 0 || nth++ != taken[k])
					continue;
				b->sel[b->n_sel++] = i;
				taken[k]++;
				added = 1;
				if (index_of(rep->categories, rep->n_categories, seen[k]) < 0)
					rep->categories[rep->n_categories++] = strdup(seen[k]);
				break;
			}
		}
	}
	if (b->n_want && n_seen < b->n_want)
		fprintf(stderr, "skipper bench: warning: some --categories are not in %s\n", b->data);
	free(seen);
	free(count);
	free(taken);
	if (!b->n_sel) {
		fprintf(stderr, "skipper bench: no prompt selected from %s\n", b->data);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* One selected prompt as a run sees it, one JSON object on a line: the
 * text after the chat template and the ids the run feeds the engine (the
 * session's own path, as run_prompt's), so that a peer engine can be given
 * the same input
 * (scripts/bench-peers.py). */
static int dump_prompt(struct bench_run *b, const struct bench_prompt *pr, FILE *f)
{
	struct skipper_session *s = b->s;
	struct skipper_message m = { "user", pr->text };
	struct skipper_error err = { 0 };
	int32_t *ids = NULL;
	size_t n_ids = 0;
	char *text = NULL;
	json_t *j;
	int rc;

	if ((rc = skipper_session_chat_text(s, &m, 1, &text, &err)) ||
	    (rc = skipper_session_chat_tokens(s, &m, 1, &ids, &n_ids, &err))) {
		free(text);
		fprintf(stderr, "skipper bench: prompt %s: %s\n", pr->id, err.msg);
		return cli_exit_code(rc);
	}
	j = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:s?, s:b}", "id", pr->id, "category", pr->category, "user",
	              pr->text, "prompt", text, "prompt_ids", id_array(ids, (int)n_ids), "template",
	              skipper_chat_template_name(s->chat_template), "system", s->system, "add_bos",
	              skipper_tokenizer_add_bos(s->tok));
	rc = j && json_dumpf(j, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF ? EXIT_OK : EXIT_FAILURE_GENERIC;
	json_decref(j);
	free(ids);
	free(text);
	if (rc)
		fprintf(stderr, "skipper bench: --dump-prompts %s: cannot write prompt %s\n", b->dump, pr->id);
	return rc;
}

/* --dump-prompts: the selected prompts in run order into FILE (atomically:
 * all or nothing) or, for "-", standard output. The model and its tokenizer
 * load as for a run; no policy and no engine run. Takes cfg over. */
static int dump_prompts(struct bench_run *b, struct skipper_config *cfg)
{
	int to_stdout = strcmp(b->dump, "-") == 0, rc;
	struct skipper_atomic *a = NULL;
	FILE *f;

	if (skipper_config_set(cfg, "policy.name=none", NULL)) {
		skipper_config_free(cfg);
		return EXIT_FAILURE_GENERIC;
	}
	rc = cli_session_open(cfg, NULL, &b->s);
	skipper_config_free(cfg);
	if (rc)
		return rc;
	if (!(f = to_stdout ? stdout : cli_atomic_open("skipper bench", b->dump, &a)))
		return EXIT_FAILURE_GENERIC;
	for (int w = 0; w < b->n_sel && !rc; w++)
		rc = dump_prompt(b, &b->prompts[b->sel[w]], f);
	if (to_stdout)
		return rc ? rc : fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILURE_GENERIC;
	if (!rc)
		return cli_atomic_close("skipper bench", a);
	skipper_atomic_abort(a);
	return rc;
}

/* One model and backend; one engine per policy so stateful policies keep
 * their state across prompts. Takes cfg over. */
static int open_variants(struct bench_run *b, struct skipper_config *cfg)
{
	struct bench_report *rep = &b->rep;
	int rc;

	if (skipper_config_set(cfg, "policy.name=none", NULL)) {
		skipper_config_free(cfg);
		return EXIT_FAILURE_GENERIC;
	}
	if (!(b->vars = calloc((size_t)b->n_items, sizeof *b->vars))) {
		skipper_config_free(cfg);
		return EXIT_FAILURE_GENERIC;
	}
	for (int i = 0; i < b->n_items; i++)
		if ((rc = variant_config(&b->c, b->items[i], &b->vars[i]))) {
			skipper_config_free(cfg);
			return rc;
		}
	rc = cli_session_open(cfg, NULL, &b->s);
	skipper_config_free(cfg);
	if (rc)
		return rc;
	rep->n_policies = b->n_items;
	rep->policies = calloc((size_t)b->n_items, sizeof *rep->policies);
	rep->baseline = -1;
	for (int i = 0; i < b->n_items; i++) {
		if ((rc = open_variant(b->s, &b->vars[i])))
			return rc;
		rep->policies[i] = b->vars[i].label;
		if (strcmp(b->items[i], "none") == 0 && rep->baseline < 0)
			rep->baseline = i;
	}
	rep->cells = calloc((size_t)b->n_items * (rep->n_categories + 1), sizeof *rep->cells);
	if (b->out) {
		char path[4096];
		snprintf(path, sizeof path, "%s.jsonl", b->out);
		if (!(b->jsonl = cli_atomic_open("skipper bench", path, &b->jsonl_a)))
			return EXIT_FAILURE_GENERIC;
	}
	return EXIT_OK;
}

/* Every variant on prompt pi, the baseline first so the others can be
 * compared with it; measured (not a warm-up) rows go into the report. */
static int run_prompt(struct bench_run *b, int pi, int measured)
{
	struct bench_report *rep = &b->rep;
	const struct bench_prompt *pr = &b->prompts[pi];
	int k = index_of(rep->categories, rep->n_categories, pr->category), rc;
	int32_t *ids = NULL;
	size_t n_ids = 0;

	struct skipper_error perr = { 0 };
	if ((rc = skipper_session_prompt_tokens(b->s, pr->text, &ids, &n_ids, &perr)))
		return cli_fail(&perr, rc);
	for (int o = 0; o < b->n_items; o++) {
		int v = rep->baseline < 0 ? o : o == 0 ? rep->baseline : o <= rep->baseline ? o - 1 : o;
		struct skipper_run_stats st;
		struct skipper_error err = { 0 };
		int mismatch = 0;
		b->cur.n = 0;
		if (skipper_engine_generate(b->vars[v].engine, ids, (int)n_ids, &b->s->gen, on_token, &b->cur, &st, &err)) {
			fprintf(stderr, "\nskipper bench: %s on prompt %s: %s\n", b->vars[v].label, pr->id, err.msg);
			free(ids);
			return EXIT_FAILURE_GENERIC;
		}
		if (!measured)
			continue;
		if (v == rep->baseline) {
			b->base_out.n = 0;
			for (int t = 0; t < b->cur.n; t++)
				on_token(&b->base_out, b->cur.tok[t]);
		} else if (rep->baseline >= 0 && b->s->gen.sampling.temperature <= 0) {
			mismatch = b->cur.n != b->base_out.n ||
			           memcmp(b->cur.tok, b->base_out.tok, (size_t)b->cur.n * sizeof *b->cur.tok);
		}
		add(&rep->cells[v * (rep->n_categories + 1) + k], &st, mismatch);
		add(&rep->cells[v * (rep->n_categories + 1) + rep->n_categories], &st, mismatch);
		if (b->jsonl) {
			json_t *j = json_pack("{s:s, s:s, s:s, s:b, s:o, s:o, s:o}", "id", pr->id, "category", pr->category,
			                      "policy", b->vars[v].label, "matches_baseline", !mismatch, "stats",
			                      cli_stats_json(&st), "prompt_ids", id_array(ids, (int)n_ids), "output_ids",
			                      id_array(b->cur.tok, b->cur.n));
			json_dumpf(j, b->jsonl, JSON_COMPACT);
			fputc('\n', b->jsonl);
			json_decref(j);
		}
	}
	free(ids);
	return EXIT_OK;
}

/* The table on stdout, the .md and chart files with --out; fails when a
 * greedy output differed from none's. */
static int report(struct bench_run *b)
{
	struct bench_report *rep = &b->rep;
	int bad = 0, rc;

	bench_write_markdown(rep, stdout);
	if (b->out) {
		/* the run's outputs appear whole, or not at all */
		char path[4096];
		struct skipper_atomic *md_a;
		FILE *md;
		rc = cli_atomic_close("skipper bench", b->jsonl_a);
		b->jsonl = NULL;
		b->jsonl_a = NULL;
		if (rc)
			return rc;
		snprintf(path, sizeof path, "%s.md", b->out);
		if (!(md = cli_atomic_open("skipper bench", path, &md_a)))
			return EXIT_FAILURE_GENERIC;
		bench_write_markdown(rep, md);
		if ((rc = cli_atomic_close("skipper bench", md_a)))
			return rc;
		snprintf(path, sizeof path, "%s.svg", b->out);
		if (bench_write_chart(rep, path) == 0)
			fprintf(stderr, "skipper bench: wrote %s.jsonl, %s.md and %s\n", b->out, b->out, path);
		else
			fprintf(stderr, "skipper bench: wrote %s.jsonl and %s.md (no chart: gnuplot missing or failed)\n",
			        b->out, b->out);
	}
	for (int v = 0; v < b->n_items; v++)
		bad += rep->cells[v * (rep->n_categories + 1) + rep->n_categories].mismatches;
	if (bad) {
		fprintf(stderr, "skipper bench: %d greedy outputs differ from none's: the lossless guarantee failed\n", bad);
		return EXIT_FAILURE_GENERIC;
	}
	if ((rc = cli_stdout_check(0)))
		return rc;
	return cli_interrupted ? EXIT_INTERRUPTED : EXIT_OK;
}

static void bench_free(struct bench_run *b)
{
	skipper_atomic_abort(b->jsonl_a); /* a run that failed leaves no partial file */
	for (int i = 0; b->vars && i < b->n_items; i++)
		close_variant(&b->vars[i]);
	free(b->vars);
	free(b->rep.policies);
	free(b->rep.cells);
	for (int k = 0; k < b->rep.n_categories; k++)
		free(b->rep.categories[k]);
	free(b->rep.categories);
	free(b->sel);
	free(b->cur.tok);
	free(b->base_out.tok);
	bench_free_prompts(b->prompts, b->n_prompts);
	free_list(b->items, b->n_items);
	free_list(b->want_cats, b->n_want);
	cli_common_free(&b->c);
	skipper_session_close(b->s);
}

int cmd_bench(int argc, char **argv)
{
	struct bench_run b = { .warmup = 1 };
	struct skipper_config *cfg = NULL;
	char errbuf[1024];
	int rc;

	if ((rc = parse_args(&b, argc, argv)) >= 0)
		goto done;
	if ((rc = cli_load_config(&b.c, &cfg)))
		goto done;
	{
		const char *name = skipper_config_get(cfg, "policy", "name");
		char dflt[256];
		snprintf(dflt, sizeof dflt, "none,%s", name);
		b.n_items = split(b.policies ? b.policies : strcmp(name, "none") ? dflt : "none", &b.items);
	}
	if (b.cats)
		b.n_want = split(b.cats, &b.want_cats);
	if (bench_load_prompts(b.data, &b.prompts, &b.n_prompts, errbuf, sizeof errbuf)) {
		fprintf(stderr, "skipper bench: %s\n", errbuf);
		skipper_config_free(cfg);
		rc = EXIT_USAGE;
		goto done;
	}
	if ((rc = select_prompts(&b))) {
		skipper_config_free(cfg);
		goto done;
	}
	if (b.dump) {
		rc = dump_prompts(&b, cfg);
		goto done;
	}
	if ((rc = open_variants(&b, cfg)))
		goto done;

	cli_install_signals();
	int n_warm = b.warmup < b.n_sel ? b.warmup : b.n_sel;
	for (int w = -n_warm; w < b.n_sel && !cli_interrupted; w++) {
		int pi = b.sel[w < 0 ? w + n_warm : w];
		if (isatty(STDERR_FILENO) && w >= 0)
			fprintf(stderr, "\r[%d/%d] %s %-20s", w + 1, b.n_sel, b.prompts[pi].id, b.prompts[pi].category);
		if ((rc = run_prompt(&b, pi, w >= 0)))
			goto done;
	}
	if (isatty(STDERR_FILENO))
		fputc('\n', stderr);
	rc = report(&b);
done:
	bench_free(&b);
	return rc;
}
