/* skipper generate: one prompt in, streamed text out. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/error.h"
#include "base/text.h"
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: skipper generate [-c FILE] [--set SECTION.KEY=VALUE]... [-m MODEL] [-n N]\n"
	        "                        [--policy NAME] [--profile FILE] [-t N] [--ctx N] [--kv-type T]\n"
	        "                        [--seed N] [--temperature T] [--template NAME] [--stats] [--json]\n"
	        "                        [-p PROMPT | -f FILE]\n"
	        "Without -p or -f the prompt is read from standard input.\n");
}

struct out_ctx {
	struct skipper_detok dt;
	int stream;       /* print as tokens arrive */
	char *text;       /* collected text (--json) */
	size_t len, cap;
	int n_eog;        /* end-of-generation tokens are not printed */
	const struct skipper_tokenizer *tok;
	int write_errno;  /* standard output failed: generation stops, the command fails */
};

static int collect(struct out_ctx *o, const char *buf, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		size_t cap = (o->len + n + 1) * 2;
		char *t = realloc(o->text, cap);
		if (!t)
			return -1;
		o->text = t;
		o->cap = cap;
	}
	memcpy(o->text + o->len, buf, n);
	o->len += n;
	o->text[o->len] = '\0';
	return 0;
}

static int on_token(void *user, int32_t tok)
{
	struct out_ctx *o = user;
	char buf[512];
	size_t n;

	if (skipper_tokenizer_is_eog(o->tok, tok))
		return cli_interrupted != 0;
	n = skipper_detok_push(&o->dt, tok, buf, sizeof buf);
	if (o->stream && (fwrite(buf, 1, n, stdout) != n || fflush(stdout) != 0)) {
		o->write_errno = errno ? errno : EIO;
		return 1; /* nobody reads what follows */
	}
	if (collect(o, buf, n))
		return 1;
	return cli_interrupted != 0;
}

void cli_print_stats(FILE *f, const struct skipper_run_stats *st)
{
	fprintf(f,
	        "\n--- stats ---\n"
	        "prompt tokens      %d\n"
	        "generated tokens   %d\n"
	        "wall time          %.3f s (prefill %.3f, draft %.3f, verify %.3f, policy %.3f)\n"
	        "decode speed       %.2f tokens/s\n"
	        "verify passes      %d\n"
	        "drafted/accepted   %d / %d (lookup %d / %d, of which corpus n-grams %d / %d, history %d / %d)\n"
	        "acceptance alpha   %.3f\n"
	        "mean accepted M    %.2f\n"
	        "drafting paused    %d times (slower than plain steps)\n",
	        st->n_prompt, st->n_generated, st->t_total, st->t_prefill, st->t_draft, st->t_verify, st->t_policy,
	        st->tokens_per_s, st->rounds, st->drafted, st->accepted, st->lookup_drafted, st->lookup_accepted,
	        st->ngram_drafted, st->ngram_accepted, st->history_drafted, st->history_accepted, st->alpha,
	        st->mean_accepted, st->backoffs);
	if (st->n_reused)
		fprintf(f, "prompt reused      %d tokens (their K/V left by the previous request: [generate] prefix_cache)\n",
		        st->n_reused);
	if (st->draft_head)
		fprintf(f, "draft head         %d most frequent tokens ([generate] draft_vocab)\n", st->draft_head);
	else
		fprintf(f, "draft head         the whole vocabulary\n");
}

json_t *cli_stats_json(const struct skipper_run_stats *st)
{
	return json_pack("{s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, "
	                 "s:i, s:i, s:i}",
	                 "prompt_tokens", st->n_prompt, "generated_tokens", st->n_generated, "seconds", st->t_total,
	                 "prefill_seconds", st->t_prefill, "draft_seconds", st->t_draft, "verify_seconds", st->t_verify,
	                 "policy_seconds", st->t_policy, "tokens_per_s", st->tokens_per_s, "verify_passes", st->rounds,
	                 "drafted", st->drafted, "accepted", st->accepted, "lookup_drafted", st->lookup_drafted,
	                 "lookup_accepted", st->lookup_accepted, "ngram_drafted", st->ngram_drafted,
	                 "ngram_accepted", st->ngram_accepted, "history_drafted", st->history_drafted,
	                 "history_accepted", st->history_accepted, "alpha", st->alpha, "mean_accepted", st->mean_accepted,
	                 "drafting_paused", st->backoffs, "draft_head", st->draft_head, "prompt_reused", st->n_reused);
}

struct gen_opts {
	struct cli_common c;
	const char *prompt, *prompt_file;
	int stats, json, timing;
};

/* --timing: where the backend's time went, one-row passes (decode and
 * draft steps) beside multi-row ones (verification, prefill), per pass. */
static void print_timing(FILE *f, const struct skipper_backend_timing *p, const struct skipper_run_stats *st)
{
	static const char *const what[SKIPPER_PROF_N] = {
		[SKIPPER_PROF_QKV] = "Q/K/V projections", [SKIPPER_PROF_ATTN_OUT] = "attention output projection",
		[SKIPPER_PROF_GATE_UP] = "MLP gate + up projections", [SKIPPER_PROF_DOWN] = "MLP down projection",
		[SKIPPER_PROF_HEAD] = "final norm + LM head", [SKIPPER_PROF_ATTENTION] = "attention over the cache",
		[SKIPPER_PROF_QUANT] = "activation quantisation", [SKIPPER_PROF_ROWWISE] = "norms, RoPE, adds, K/V stores",
		[SKIPPER_PROF_TOPK] = "softmax / top-k",
	};
	double tot[2] = { 0, 0 };
	for (int m = 0; m < 2; m++)
		for (int k = 0; k < SKIPPER_PROF_N; k++)
			tot[m] += p->seconds[m][k];
	fprintf(f, "\n--- timing: ms per pass (share) ---\n");
	fprintf(f, "%-32s %22s %26s\n", "", "1-row passes", "multi-row passes");
	fprintf(f, "%-32s %22lld %17lld (%5.1f rows)\n", "passes", p->passes[0], p->passes[1],
	        p->passes[1] ? (double)p->rows[1] / p->passes[1] : 0.0);
	for (int k = 0; k < SKIPPER_PROF_N; k++) {
		fprintf(f, "%-32s", what[k]);
		for (int m = 0; m < 2; m++)
			fprintf(f, m ? "   %10.3f ms (%5.1f%%)" : " %12.3f ms (%5.1f%%)",
			        p->passes[m] ? 1e3 * p->seconds[m][k] / p->passes[m] : 0.0,
			        tot[m] > 0 ? 100.0 * p->seconds[m][k] / tot[m] : 0.0);
		fputc('\n', f);
	}
	fprintf(f, "%-32s", "total");
	for (int m = 0; m < 2; m++)
		fprintf(f, m ? "   %10.3f ms         " : " %12.3f ms         ", p->passes[m] ? 1e3 * tot[m] / p->passes[m] : 0.0);
	fprintf(f, "\n%-32s", "  of which waiting for threads");
	for (int m = 0; m < 2; m++)
		fprintf(f, m ? "   %10.3f ms (%5.1f%%)" : " %12.3f ms (%5.1f%%)", p->passes[m] ? 1e3 * p->wait[m] / p->passes[m] : 0.0,
		        tot[m] > 0 ? 100.0 * p->wait[m] / tot[m] : 0.0);
	fprintf(f, "\nengine outside the backend: sampling and acceptance %.3f s, policy hooks %.3f s\n", st->t_sample,
	        st->t_policy);
}

/* Command line into o; returns -1 to go on, else the exit code. */
static int parse_args(struct gen_opts *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(&o->c, argc, argv, &i);
		if (r < 0)
			return EXIT_USAGE;
		if (r)
			continue;
		if ((strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--prompt") == 0) && i + 1 < argc) {
			o->prompt = argv[++i];
		} else if ((strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--file") == 0) && i + 1 < argc) {
			o->prompt_file = argv[++i];
		} else if (strcmp(argv[i], "--stats") == 0) {
			o->stats = 1;
		} else if (strcmp(argv[i], "--json") == 0) {
			o->json = 1;
		} else if (strcmp(argv[i], "--timing") == 0) {
			o->timing = 1;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return EXIT_OK;
		} else {
			fprintf(stderr, "skipper generate: unknown or incomplete option '%s'\n", argv[i]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	return -1;
}

/* a prompt file longer than any context: text of a million tokens is ~4 MiB */
#define PROMPT_MAX ((size_t)64 << 20)

/* The prompt from -p, -f FILE or standard input; *owned is what to free. */
static int read_prompt(const struct gen_opts *o, const char **prompt, char **owned)
{
	*prompt = o->prompt;
	*owned = NULL;
	char why[256];
	if (o->prompt_file) {
		FILE *f = fopen(o->prompt_file, "r");
		if (!f) {
			fprintf(stderr, "skipper generate: %s: cannot open prompt file: %s\n", o->prompt_file,
			        strerror(errno));
			return EXIT_USAGE;
		}
		*prompt = *owned = skipper_read_all(f, PROMPT_MAX, why, sizeof why);
		fclose(f);
	} else if (!*prompt) {
		if (isatty(STDIN_FILENO))
			fprintf(stderr, "skipper generate: reading the prompt from standard input (end with Ctrl-D)\n");
		*prompt = *owned = skipper_read_all(stdin, PROMPT_MAX, why, sizeof why);
	}
	if (!*prompt) {
		fprintf(stderr, "skipper generate: %s: %s\n", o->prompt_file ? o->prompt_file : "standard input", why);
		return EXIT_USAGE;
	}
	if (!**prompt) {
		fprintf(stderr, "skipper generate: empty prompt\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* --json: the text and the stats as one object; --stats: the stats on stderr. */
static void report(const struct gen_opts *opt, struct skipper_session *s, const struct out_ctx *o,
                   const struct skipper_run_stats *st)
{
	if (opt->json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:o}", "text", o->text ? o->text : "", "policy",
		                      skipper_config_get(s->cfg, "policy", "name"), "backend", s->be->ops->name, "stats",
		                      cli_stats_json(st));
		json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
		fputc('\n', stdout);
		json_decref(j);
	} else if (opt->stats) {
		cli_print_stats(stderr, st);
		fprintf(stderr, "backend            %s%s%s%s\n", s->be->ops->name, s->be->device ? " (" : "",
		        s->be->device ? s->be->device : "", s->be->device ? ")" : "");
		fprintf(stderr, "K/V cache          %d tokens, %s, %.1f MiB\n", s->be->n_ctx, skipper_kv_type_name(s->be->kv_type),
		        skipper_backend_kv_bytes(&s->be->model->hp, s->be->n_ctx, s->be->kv_type) / 1048576.0);
		struct rusage ru;
		if (getrusage(RUSAGE_SELF, &ru) == 0) /* kilobytes on Linux */
			fprintf(stderr, "peak memory        %.1f MiB\n", ru.ru_maxrss / 1024.0);
	}
}

int cmd_generate(int argc, char **argv)
{
	struct gen_opts opt = { 0 };
	struct skipper_config *cfg = NULL;
	struct skipper_session *s = NULL;
	struct skipper_session_opts so = { 0 };
	struct skipper_error err = { 0 };
	struct skipper_run_stats st;
	struct out_ctx o = { 0 };
	const char *prompt;
	char *owned = NULL, buf[64];
	int32_t *ids = NULL;
	size_t n_ids = 0;
	int rc;

	int parsed = parse_args(&opt, argc, argv);
	rc = parsed < 0 ? cli_load_config(&opt.c, &cfg) : parsed;
	cli_common_free(&opt.c);
	if (parsed >= 0 || rc)
		return rc;
	if ((rc = read_prompt(&opt, &prompt, &owned))) {
		skipper_config_free(cfg);
		goto out;
	}
	/* --stats: the policy's own statistics line (INFO) too */
	if (opt.stats && !getenv("SKIPPER_DEBUG"))
		so.log_level = SKIPPER_LOG_INFO;
	rc = cli_session_open(cfg, &so, &s);
	skipper_config_free(cfg);
	if (rc)
		goto out;
	if ((rc = skipper_session_prompt_tokens(s, prompt, &ids, &n_ids, &err))) {
		rc = cli_fail(&err, rc);
		goto out;
	}

	cli_install_signals();
	skipper_detok_init(&o.dt, s->tok, 0);
	o.tok = s->tok;
	o.stream = !opt.json;
	if (opt.timing && !s->be->ops->timing) {
		fprintf(stderr, "skipper generate: --timing: the %s backend does not time its work\n", s->be->ops->name);
		rc = EXIT_USAGE;
		goto out;
	}
	if (opt.timing)
		s->be->ops->timing(s->be, 1, NULL);
	skipper_engine_set_progress(s->engine, cli_prompt_progress, NULL);
	rc = skipper_engine_generate(s->engine, ids, (int)n_ids, &s->gen, on_token, &o, &st, &err);
	size_t n = skipper_detok_flush(&o.dt, buf, sizeof buf);
	if (o.stream)
		fwrite(buf, 1, n, stdout);
	collect(&o, buf, n);
	if (o.stream && (o.len || !rc)) /* a failure before any text prints nothing */
		fputc('\n', stdout);
	if (rc) {
		rc = cli_fail(&err, rc);
		goto out;
	}
	report(&opt, s, &o, &st);
	if ((rc = cli_stdout_check(o.write_errno)))
		goto out;
	if (opt.timing) {
		struct skipper_backend_timing prof;
		s->be->ops->timing(s->be, 0, &prof);
		print_timing(stderr, &prof, &st);
	}
	rc = cli_interrupted ? EXIT_INTERRUPTED : EXIT_OK;
out:
	free(ids);
	free(o.text);
	free(owned);
	skipper_session_close(s);
	return rc;
}
