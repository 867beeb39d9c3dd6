/* skipper vocab: rank a model's vocabulary by frequency over a corpus, for
 * [generate] draft_vocab (draft passes that compute the LM head over the
 * most frequent tokens only), and with --ngrams count what the model
 * writes after each short context, for [lookup] ngrams (ngram_file.c);
 * and loading such a ranking into an engine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "base/atomic.h"
#include "base/error.h"
#include "base/text.h"
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: skipper vocab --data FILE.jsonl|FILE.txt --out FILE [--generate N] [--ngrams FILE]\n"
	           "                     [--skip N] [--limit N] [-m MODEL] [-c FILE] [--set SECTION.KEY=VALUE]...\n"
	           "Counts the model's tokens over the corpus (JSONL prompts with the chat template, or\n"
	           "a text file) and, with --generate, over N tokens the model writes per prompt; writes\n"
	           "the ids most frequent first, for [generate] draft_vocab. --ngrams (JSONL, with\n"
	           "--generate) also writes what the model wrote after each context of 1 to 4 tokens,\n"
	           "for [lookup] ngrams.\n");
}

struct vocab_args {
	const char *data, *out, *ngrams;
	int gen, skip, limit;
};

struct counts {
	uint64_t *n;
	uint64_t total;
	struct ngram_corpus *ngrams; /* --ngrams: the generated tokens go here too */
	int oom;
};

static int count_token(void *user, int32_t t)
{
	struct counts *c = user;
	c->n[t]++;
	c->total++;
	return cli_interrupted != 0;
}

static int count_generated(void *user, int32_t t)
{
	struct counts *c = user;
	if (c->ngrams && ngram_corpus_push(c->ngrams, t, 1))
		c->oom = 1;
	return count_token(user, t) || c->oom;
}

struct ranked {
	uint64_t count;
	int32_t id;
};

static int by_count(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id); /* ties: lower id first */
}

/* The ranking into f: a header, then "id count" lines. */
static int write_ranking(FILE *f, const struct skipper_session *s, const char *data, int n_prompts, int gen,
                         const struct counts *c)
{
	int V = s->model->view.hp.n_vocab;
	struct ranked *r = malloc(sizeof *r * (size_t)V);

	if (!r) {
		fprintf(stderr, "skipper vocab: out of memory\n");
		return EXIT_FAILURE_GENERIC;
	}
	for (int i = 0; i < V; i++)
		r[i] = (struct ranked){ c->n[i], i };
	qsort(r, (size_t)V, sizeof *r, by_count);
	fprintf(f, "# skipper draft vocabulary: token ids, most frequent first (id count); ties by lower id\n");
	fprintf(f, "# model %s (%d tokens), corpus %s: %d prompts, %llu tokens counted%s\n", s->model->view.name, V, data,
	        n_prompts, (unsigned long long)c->total, gen ? ", generated ones included" : "");
	for (int i = 0; i < V; i++)
		fprintf(f, "%d %llu\n", r[i].id, (unsigned long long)r[i].count);
	free(r);
	return EXIT_OK;
}

/* Both outputs, each written to a temporary file opened before any work
 * (an unwritable place fails at once) and renamed into place at the end:
 * the ranking only once the n-grams are written too, so that a failure
 * leaves neither. */
struct vocab_out {
	FILE *rank, *ngrams;
	struct skipper_atomic *rank_a, *ngrams_a;
};

static int outputs_open(struct vocab_out *o, const struct vocab_args *va)
{
	if (!(o->rank = cli_atomic_open("skipper vocab", va->out, &o->rank_a)))
		return EXIT_FAILURE_GENERIC;
	if (va->ngrams && !(o->ngrams = cli_atomic_open("skipper vocab", va->ngrams, &o->ngrams_a)))
		return EXIT_FAILURE_GENERIC;
	return EXIT_OK;
}

static void outputs_abort(struct vocab_out *o)
{
	skipper_atomic_abort(o->rank_a);
	skipper_atomic_abort(o->ngrams_a);
	memset(o, 0, sizeof *o);
}

static int outputs_close(struct vocab_out *o, const struct vocab_args *va)
{
	int rc = EXIT_OK;
	if (o->ngrams_a) {
		rc = cli_atomic_close("skipper vocab", o->ngrams_a);
		o->ngrams_a = NULL;
	}
	if (rc == EXIT_OK) {
		rc = cli_atomic_close("skipper vocab", o->rank_a);
		o->rank_a = NULL;
		if (rc && va->ngrams)
			unlink(va->ngrams);
	}
	outputs_abort(o);
	return rc;
}

/* Options; EXIT_OK to go on, else the exit code (-h/--help: *done set). */
static int parse_args(int argc, char **argv, struct cli_common *c, struct vocab_args *va, int *done)
{
	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(c, argc, argv, &i);
		const char *a = argv[i];
		if (r < 0)
			return EXIT_USAGE;
		if (r)
			continue;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			*done = 1;
			return EXIT_OK;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "skipper vocab: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE;
		}
		if (!strcmp(a, "--data"))
			va->data = argv[++i];
		else if (!strcmp(a, "--out"))
			va->out = argv[++i];
		else if (!strcmp(a, "--ngrams"))
			va->ngrams = argv[++i];
		else if (!strcmp(a, "--generate") || !strcmp(a, "--skip") || !strcmp(a, "--limit")) {
			int *n = !strcmp(a, "--generate") ? &va->gen : !strcmp(a, "--skip") ? &va->skip : &va->limit;
			if (cli_count_arg("skipper vocab", a, argv[++i], n))
				return EXIT_USAGE;
		} else {
			fprintf(stderr, "skipper vocab: unknown option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!va->data || !va->out) {
		fprintf(stderr, "skipper vocab: --data and --out are required\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (va->ngrams && va->gen <= 0) {
		fprintf(stderr, "skipper vocab: --ngrams counts what the model writes: it needs --generate N\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The corpus: JSONL prompts into *prompts, anything else as one text into
 * *text (caller frees either). */
static int load_corpus(const char *data, struct bench_prompt **prompts, int *n_prompts, char **text)
{
	size_t dl = strlen(data);
	char errbuf[1024];
	if (dl > 6 && !strcmp(data + dl - 6, ".jsonl")) {
		if (bench_load_prompts(data, prompts, n_prompts, errbuf, sizeof errbuf)) {
			fprintf(stderr, "skipper vocab: %s\n", errbuf);
			return EXIT_USAGE;
		}
	} else {
		FILE *f = fopen(data, "rb");
		if (f) {
			*text = skipper_read_all(f, (size_t)1 << 30, errbuf, sizeof errbuf);
			fclose(f);
		} else {
			snprintf(errbuf, sizeof errbuf, "%s", strerror(errno));
		}
		if (!*text) {
			fprintf(stderr, "skipper vocab: %s: %s\n", data, errbuf);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

/* Counts the tokens of the text or of each prompt (with the chat template)
 * and, with va->gen, of what the model writes; *n_used: prompts counted. */
static int count_corpus(struct skipper_session *s, const struct vocab_args *va, const char *text,
                        const struct bench_prompt *prompts, int n_prompts, struct counts *cnt, int *n_used)
{
	struct skipper_error err = { 0 };
	int32_t *ids;
	size_t n;
	int rc;

	if (text) {
		if (skipper_tokenize(s->tok, text, strlen(text), 0, 0, &ids, &n, &err)) {
			fprintf(stderr, "skipper vocab: %s\n", err.msg);
			return EXIT_FAILURE_GENERIC;
		}
		for (size_t i = 0; i < n; i++)
			count_token(cnt, ids[i]);
		free(ids);
		*n_used = 1;
	}
	s->gen.max_tokens = va->gen;
	for (int i = va->skip; prompts && i < n_prompts && (!va->limit || *n_used < va->limit) && !cli_interrupted;
	     i++) {
		struct skipper_run_stats st;
		if ((rc = skipper_session_prompt_tokens(s, prompts[i].text, &ids, &n, &err)))
			return cli_fail(&err, rc);
		/* a -1 first: no context reaches back into the previous answer */
		if (cnt->ngrams && ngram_corpus_push(cnt->ngrams, -1, 0))
			cnt->oom = 1;
		for (size_t k = 0; k < n; k++) {
			count_token(cnt, ids[k]);
			if (cnt->ngrams && ngram_corpus_push(cnt->ngrams, ids[k], 0))
				cnt->oom = 1;
		}
		if (va->gen > 0 && !cnt->oom &&
		    skipper_engine_generate(s->engine, ids, (int)n, &s->gen, count_generated, cnt, &st, &err)) {
			fprintf(stderr, "skipper vocab: prompt %s: %s\n", prompts[i].id, err.msg);
			free(ids);
			return EXIT_FAILURE_GENERIC;
		}
		free(ids);
		if (cnt->oom) {
			fprintf(stderr, "skipper vocab: out of memory\n");
			return EXIT_FAILURE_GENERIC;
		}
		++*n_used;
		if (isatty(STDERR_FILENO))
			fprintf(stderr, "\rskipper vocab: %d prompts, %llu tokens", *n_used, (unsigned long long)cnt->total);
	}
	if (isatty(STDERR_FILENO))
		fputc('\n', stderr);
	return cli_interrupted ? EXIT_INTERRUPTED : EXIT_OK;
}

int cmd_vocab(int argc, char **argv)
{
	struct cli_common c = { 0 };
	struct vocab_args va = { 0 };
	struct skipper_config *cfg = NULL;
	struct skipper_session *s = NULL;
	struct bench_prompt *prompts = NULL;
	struct counts cnt = { 0 };
	struct ngram_corpus ngrams = { 0 };
	struct vocab_out out = { 0 };
	int n_prompts = 0, n_used = 0, help = 0, rc;
	char *text = NULL;

	if ((rc = parse_args(argc, argv, &c, &va, &help)) || help)
		goto done;
	if ((rc = cli_load_config(&c, &cfg)))
		goto done;
	if ((rc = load_corpus(va.data, &prompts, &n_prompts, &text))) {
		skipper_config_free(cfg);
		goto done;
	}
	if (va.ngrams && !prompts) {
		fprintf(stderr, "skipper vocab: --ngrams needs JSONL prompts for the model to answer, not a text\n");
		rc = EXIT_USAGE;
		skipper_config_free(cfg);
		goto done;
	}
	if (skipper_config_set(cfg, "policy.name=none", NULL)) {
		skipper_config_free(cfg);
		rc = EXIT_FAILURE_GENERIC;
		goto done;
	}
	rc = cli_session_open(cfg, NULL, &s);
	skipper_config_free(cfg);
	if (rc)
		goto done;
	rc = EXIT_FAILURE_GENERIC;
	if (!(cnt.n = calloc((size_t)s->model->view.hp.n_vocab, sizeof *cnt.n)))
		goto done;
	cnt.ngrams = va.ngrams ? &ngrams : NULL;
	if ((rc = outputs_open(&out, &va)))
		goto done;
	cli_install_signals();
	if ((rc = count_corpus(s, &va, text, prompts, n_prompts, &cnt, &n_used)))
		goto done;
	if (!cnt.total) {
		fprintf(stderr, "skipper vocab: %s: no tokens to count%s\n", va.data,
		        prompts && va.skip >= n_prompts ? " (--skip passes every prompt)" : "");
		rc = EXIT_USAGE;
		goto done;
	}
	if ((rc = write_ranking(out.rank, s, va.data, n_used, va.gen, &cnt)) ||
	    (va.ngrams && (rc = ngram_file_write(out.ngrams, &ngrams, s->model->view.name, va.data, n_used))) ||
	    (rc = outputs_close(&out, &va)))
		goto done;
	printf("%s\n", va.out);
	if (va.ngrams)
		printf("%s\n", va.ngrams);
done:
	outputs_abort(&out);
	ngram_corpus_free(&ngrams);
	free(cnt.n);
	free(text);
	if (prompts)
		bench_free_prompts(prompts, n_prompts);
	cli_common_free(&c);
	skipper_session_close(s);
	return rc;
}
