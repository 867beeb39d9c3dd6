/* skipper vocab: rank a model's vocabulary by frequency over a corpus, for
 * [generate] draft_vocab (draft passes that compute the LM head over the
 * most frequent tokens only); and loading such a ranking into an engine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "error.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: skipper vocab --data FILE.jsonl|FILE.txt --out FILE [--generate N] [--skip N] [--limit N]\n"
	           "                     [-m MODEL] [-c FILE] [--set SECTION.KEY=VALUE]...\n"
	           "Counts the model's tokens over the corpus (JSONL prompts with the chat template, or\n"
	           "a text file) and, with --generate, over N tokens the model writes per prompt; writes\n"
	           "the ids most frequent first, for [generate] draft_vocab.\n");
}

struct counts {
	uint64_t *n;
	uint64_t total;
};

static int count_token(void *user, int32_t t)
{
	struct counts *c = user;
	c->n[t]++;
	c->total++;
	return cli_interrupted != 0;
}

static struct counts *sort_counts; /* for qsort's comparator only */

static int by_count(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	uint64_t cx = sort_counts->n[x], cy = sort_counts->n[y];
	return cx != cy ? (cx < cy ? 1 : -1) : (x > y) - (x < y); /* ties: lower id first */
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
		buf[n] = 0;
	else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* The ranking, atomically: a header, then "id count" lines. */
static int write_ranking(const char *out, const struct cli_session *s, const char *data, int n_prompts, int gen,
                         struct counts *c)
{
	int V = s->model->hp.n_vocab;
	int32_t *ids = malloc(sizeof *ids * (size_t)V);
	char *tmp = malloc(strlen(out) + 32);
	FILE *f = NULL;
	int rc = EXIT_FAILURE_GENERIC;

	if (!ids || !tmp)
		goto out;
	for (int i = 0; i < V; i++)
		ids[i] = i;
	sort_counts = c;
	qsort(ids, (size_t)V, sizeof *ids, by_count);
	sprintf(tmp, "%s.tmp%ld", out, (long)getpid());
	if (!(f = fopen(tmp, "w"))) {
		fprintf(stderr, "skipper vocab: %s: %s\n", tmp, strerror(errno));
		goto out;
	}
	fprintf(f, "# skipper draft vocabulary: token ids, most frequent first (id count); ties by lower id\n");
	fprintf(f, "# model %s (%d tokens), corpus %s: %d prompts, %llu tokens counted%s\n", s->model->name, V, data,
	        n_prompts, (unsigned long long)c->total, gen ? ", generated ones included" : "");
	for (int i = 0; i < V; i++)
		fprintf(f, "%d %llu\n", ids[i], (unsigned long long)c->n[ids[i]]);
	if (fclose(f) != 0 || rename(tmp, out) != 0) {
		fprintf(stderr, "skipper vocab: %s: %s\n", out, strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = EXIT_OK;
out:
	free(ids);
	free(tmp);
	return rc;
}

int cmd_vocab(int argc, char **argv)
{
	struct cli_common c = { 0 };
	struct skipper_config *cfg = NULL;
	struct cli_session s = { 0 };
	struct bench_prompt *prompts = NULL;
	struct counts cnt = { 0 };
	const char *data = NULL, *out = NULL;
	int gen = 0, skip = 0, limit = 0, n_prompts = 0, n_used = 0, rc = EXIT_USAGE;
	char errbuf[1024], *text = NULL;

	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(&c, argc, argv, &i);
		const char *a = argv[i];
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
			fprintf(stderr, "skipper vocab: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			goto done;
		}
		if (!strcmp(a, "--data"))
			data = argv[++i];
		else if (!strcmp(a, "--out"))
			out = argv[++i];
		else if (!strcmp(a, "--generate"))
			gen = atoi(argv[++i]);
		else if (!strcmp(a, "--skip"))
			skip = atoi(argv[++i]);
		else if (!strcmp(a, "--limit"))
			limit = atoi(argv[++i]);
		else {
			fprintf(stderr, "skipper vocab: unknown option '%s'\n", a);
			usage(stderr);
			goto done;
		}
	}
	if (!data || !out || gen < 0 || skip < 0 || limit < 0) {
		fprintf(stderr, "skipper vocab: --data and --out are required; counts are >= 0\n");
		usage(stderr);
		goto done;
	}
	if ((rc = cli_load_config(&c, &cfg)))
		goto done;
	size_t dl = strlen(data);
	if (dl > 6 && !strcmp(data + dl - 6, ".jsonl")) {
		if (bench_load_prompts(data, &prompts, &n_prompts, errbuf, sizeof errbuf)) {
			fprintf(stderr, "skipper vocab: %s\n", errbuf);
			skipper_config_free(cfg);
			rc = EXIT_USAGE;
			goto done;
		}
	} else if (!(text = read_text(data))) {
		fprintf(stderr, "skipper vocab: %s: cannot read\n", data);
		skipper_config_free(cfg);
		rc = EXIT_USAGE;
		goto done;
	}
	if (skipper_config_set(cfg, "policy.name=none", NULL) || (rc = cli_session_open(&s, cfg)))
		goto done;
	rc = EXIT_FAILURE_GENERIC;
	if (!(cnt.n = calloc((size_t)s.model->hp.n_vocab, sizeof *cnt.n)))
		goto done;
	cli_install_signals();
	if (text) {
		struct skipper_error err = { 0 };
		int32_t *ids;
		size_t n;
		if (skipper_tokenize(s.tok, text, strlen(text), 0, 0, &ids, &n, &err)) {
			fprintf(stderr, "skipper vocab: %s\n", err.msg);
			goto done;
		}
		for (size_t i = 0; i < n; i++)
			count_token(&cnt, ids[i]);
		free(ids);
		n_used = 1;
	}
	s.gen.max_tokens = gen;
	for (int i = skip; prompts && i < n_prompts && (!limit || n_used < limit) && !cli_interrupted; i++) {
		struct skipper_run_stats st;
		struct skipper_error err = { 0 };
		int32_t *ids;
		size_t n;
		if (cli_prompt_tokens(&s, prompts[i].text, &ids, &n))
			goto done;
		for (size_t k = 0; k < n; k++)
			count_token(&cnt, ids[k]);
		if (gen > 0 && skipper_engine_generate(s.engine, ids, (int)n, &s.gen, count_token, &cnt, &st, &err)) {
			fprintf(stderr, "skipper vocab: prompt %s: %s\n", prompts[i].id, err.msg);
			free(ids);
			goto done;
		}
		free(ids);
		n_used++;
		if (isatty(STDERR_FILENO))
			fprintf(stderr, "\rskipper vocab: %d prompts, %llu tokens", n_used, (unsigned long long)cnt.total);
	}
	if (isatty(STDERR_FILENO))
		fputc('\n', stderr);
	if (cli_interrupted) {
		rc = EXIT_INTERRUPTED;
		goto done;
	}
	if ((rc = write_ranking(out, &s, data, n_used, gen, &cnt)) == EXIT_OK)
		printf("%s\n", out);
done:
	free(cnt.n);
	free(text);
	if (prompts)
		bench_free_prompts(prompts, n_prompts);
	cli_common_free(&c);
	cli_session_close(&s);
	return rc;
}

int cli_load_draft_vocab(struct cli_session *s, const struct skipper_config *cfg, struct skipper_engine *e)
{
	const char *file = skipper_config_get(cfg, "generate", "draft_vocab_file");
	struct skipper_error err = { 0 };
	char *found = NULL, *line = NULL;
	size_t cap = 0;
	long want = 0;
	int32_t *ids = NULL;
	int n = 0, rc = EXIT_FAILURE_GENERIC, V = s->model->hp.n_vocab, lineno = 0;
	FILE *f;

	skipper_config_get_int(cfg, "generate", "draft_vocab", &want, NULL);
	if (want <= 0 || want >= V)
		return EXIT_OK;
	if ((!file || !*file) && !(file = found = cli_model_data_file(s, "draft-vocab.txt"))) {
		fprintf(stderr,
		        "skipper: [generate] draft_vocab = %ld needs a ranking of %s's vocabulary: none ships for it; "
		        "make one with skipper vocab and name it in [generate] draft_vocab_file\n",
		        want, s->model->name);
		return EXIT_USAGE;
	}
	if (!(f = fopen(file, "r"))) {
		fprintf(stderr, "skipper: [generate] draft_vocab_file %s: %s\n", file, strerror(errno));
		free(found);
		return EXIT_USAGE;
	}
	uint8_t *seen = calloc((size_t)V, 1);
	if (!(ids = malloc(sizeof *ids * (size_t)want)) || !seen) {
		free(seen);
		goto out;
	}
	while (n < want && getline(&line, &cap, f) > 0) {
		long id;
		char *end;
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		id = strtol(line, &end, 10);
		if (end == line || id < 0 || id >= V || seen[id]) {
			fprintf(stderr, "skipper: %s:%d: %s token id of this model (0..%d)\n", file, lineno,
			        end != line && id >= 0 && id < V ? "a repeated" : "not a", V - 1);
			free(seen);
			rc = EXIT_USAGE;
			goto out;
		}
		seen[id] = 1;
		ids[n++] = (int32_t)id;
	}
	free(seen);
	if (n < want) {
		fprintf(stderr, "skipper: %s: %d token ids, [generate] draft_vocab asks for %ld\n", file, n, want);
		rc = EXIT_USAGE;
		goto out;
	}
	if (skipper_engine_set_draft_vocab(e, ids, n, &err)) {
		fprintf(stderr, "skipper: %s: %s\n", file, err.msg);
		goto out;
	}
	rc = EXIT_OK;
out:
	fclose(f);
	free(line);
	free(ids);
	free(found);
	return rc;
}
