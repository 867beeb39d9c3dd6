/* Decode speed and verify-pass latency of one backend: a command for
 * kernels/bench/run.sh, not a test.
 *   bench-verify MODEL [--backend cpu|cuda|auto] [--prompt 128] [--tokens 128]
 *                [--sizes 1,2,4,8,16,32] [--reps 20] [--threads 0]
 * Prefills --prompt seeded random ids, decodes --tokens greedily one token
 * at a time as the engine's autoregressive loop does (KV written, top-1 of
 * the row), then times verify passes as the engine sends them: a chain of n
 * rows after the committed context, KV written, every row's top-1; the
 * median of --reps passes per size. Prints key=value lines. */
#include "build-config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "error.h"
#include "model/model.h"

#define MAXN 64

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Forward n rows (KV written) with the top-1 of every row (all = 1, n <=
 * MAXN: a verify pass) or of the last row only (a prefill). */
static int step(struct skipper_backend *be, const int32_t *tok, int n, int n_past, int all, int32_t *ids)
{
	int32_t rows[MAXN];
	float probs[MAXN];
	struct skipper_error err = { 0 };
	for (int i = 0; i < (all ? n : 1); i++)
		rows[i] = all ? i : n - 1;
	struct skipper_forward fw = { .n = n, .tokens = tok, .n_past = n_past, .kv_write = 1, .n_out = all ? n : 1,
	                              .out_rows = rows, .top_k = 1, .top_ids = ids, .top_probs = probs };
	if (be->ops->forward(be, &fw, &err)) {
		fprintf(stderr, "bench-verify: forward of %d rows: %s\n", n, err.msg);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "backend", 1, 0, 'b' }, { "prompt", 1, 0, 'p' }, { "tokens", 1, 0, 't' },
		{ "sizes", 1, 0, 's' },   { "reps", 1, 0, 'r' },   { "threads", 1, 0, 'j' }, { 0, 0, 0, 0 },
	};
	const char *backend = "cuda", *sizes = "1,2,4,8,16,32";
	int np = 128, ntok = 128, reps = 20, threads = 0, c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'b': backend = optarg; break;
		case 'p': np = atoi(optarg); break;
		case 't': ntok = atoi(optarg); break;
		case 's': sizes = optarg; break;
		case 'r': reps = atoi(optarg); break;
		case 'j': threads = atoi(optarg); break;
		default: return 2;
		}
	}
	if (optind + 1 != argc || np < 1 || ntok < 1 || reps < 1) {
		fprintf(stderr, "usage: bench-verify MODEL [--backend cpu|cuda|auto] [--prompt N] [--tokens N] "
		                "[--sizes 1,2,4,...] [--reps N] [--threads N]\n");
		return 2;
	}

	struct skipper_error err = { 0 };
	struct skipper_model *m;
	struct skipper_backend *be;
	if (skipper_model_load(argv[optind], &m, &err)) {
		fprintf(stderr, "bench-verify: %s\n", err.msg);
		return 1;
	}
	struct skipper_backend_opts o = {
		.n_ctx = np + ntok + MAXN + 8, .n_threads = threads,
		.kind = !strcmp(backend, "cuda") ? SKIPPER_BACKEND_CUDA
		        : !strcmp(backend, "cpu") ? SKIPPER_BACKEND_CPU : SKIPPER_BACKEND_AUTO,
	};
	if (skipper_backend_create(m, &o, &be, &err)) {
		fprintf(stderr, "bench-verify: %s\n", err.msg);
		return 1;
	}
	printf("backend=%s\n", be->ops->name);

	int32_t *tok = malloc(sizeof(int32_t) * (np + ntok + MAXN)), ids[MAXN];
	uint64_t s = 12345;
	for (int i = 0; i < np + MAXN; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		tok[i] = (int32_t)((s >> 33) % (uint64_t)m->hp.n_vocab);
	}
	double t0 = now();
	if (step(be, tok, np, 0, 0, ids))
		return 1;
	double t1 = now();
	printf("prefill_tokens=%d prefill_s=%.6f\n", np, t1 - t0);

	/* the first steps are not timed: lazy setup (graphs, clocks) is not decode speed */
	int32_t next = ids[0];
	int n_past = np, warm = ntok > 8 ? 4 : 0;
	double d0 = now();
	for (int i = 0; i < ntok; i++) {
		if (i == warm)
			d0 = now();
		tok[n_past] = next;
		if (step(be, &tok[n_past], 1, n_past, 1, ids))
			return 1;
		next = ids[0];
		n_past++;
	}
	double d1 = now();
	printf("decode_tokens=%d decode_tok_per_s=%.3f\n", ntok - warm, (ntok - warm) / (d1 - d0));

	double *t = malloc(sizeof(double) * reps), base = 0;
	const char *p = sizes;
	while (*p) {
		char *end;
		long n = strtol(p, &end, 10);
		if (end == p || n < 1 || n > MAXN) {
			fprintf(stderr, "bench-verify: --sizes: bad size at '%s' (1..%d)\n", p, MAXN);
			return 2;
		}
		for (int r = -2; r < reps; r++) { /* two untimed passes per size */
			double a = now();
			if (step(be, tok + np, (int)n, n_past, 1, ids))
				return 1;
			if (r >= 0)
				t[r] = now() - a;
		}
		qsort(t, (size_t)reps, sizeof *t, cmp_double);
		double med = t[reps / 2];
		if (n == 1 || base == 0)
			base = med;
		printf("verify_n=%ld verify_ms=%.4f verify_ratio=%.3f\n", n, med * 1e3, med / base);
		p = *end ? end + 1 : end;
	}
	free(t);
	free(tok);
	be->ops->destroy(be);
	skipper_model_free(m);
	return 0;
}
