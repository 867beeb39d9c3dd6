/* Decode speed and verify-pass latency of one backend: a command for
 * kernels/bench/run.sh, not a test.
 *   bench-verify MODEL [--backend cpu|cuda|auto] [--prompt 128] [--tokens 128]
 *                [--sizes 1,2,4,8,16,32] [--reps 20] [--threads 0] [--draft-vocab N] [--profile]
 *                [--kv f16|q8_0] [--fill N]
 * Prefills --prompt seeded random ids (with --fill N, only the first N, whose
 * K/V slots are then copied over the rest: a long context's passes timed
 * after seconds of set-up instead of minutes of prefill; what attention
 * costs does not depend on what the slots hold, once they are written),
 * decodes --tokens greedily one token at a time as the engine's
 * autoregressive loop does (KV written, top-1 of the row), then times
 * verify passes as the engine sends them: a chain of n rows after the
 * committed context, KV written, every row's top-1; the median of --reps
 * passes per size. Then a draft step's cost as a fraction
 * of a full one-token step: one row with every other layer skipped (half of
 * the layers' weight bytes), with the full LM head and, with --draft-vocab
 * N, with the head over N ids (which N ids does not change the cost).
 * --profile adds, per size, where a pass's time went (the backend's
 * --profile kinds, ms per pass). --kv: the K/V cache's type ([model]
 * kv_type). Prints key=value lines. */
#include "build-config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "base/error.h"
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
 * MAXN: a verify pass) or of the last row only (a prefill), ids alone as
 * the engine asks for them; skip masks, the subset head and the top-1's
 * probability as a draft step asks for them (NULL, 0: none, a plain pass). */
static int forward(struct skipper_backend *be, const int32_t *tok, int n, int n_past, int all, int32_t *ids,
                   const uint8_t *skip, int subset)
{
	int32_t rows[MAXN];
	float probs[MAXN];
	struct skipper_error err = { 0 };
	for (int i = 0; i < (all ? n : 1); i++)
		rows[i] = all ? i : n - 1;
	struct skipper_forward fw = { .n = n, .tokens = tok, .n_past = n_past, .kv_write = 1, .n_out = all ? n : 1,
	                              .out_rows = rows, .top_k = 1, .top_ids = ids,
	                              .top_probs = skip || subset ? probs : NULL, .skip_attn = skip, .skip_mlp = skip,
	                              .head_subset = subset };
	if (skipper_backend_forward(be, &fw, &err)) {
		fprintf(stderr, "bench-verify: forward of %d rows: %s\n", n, err.msg);
		return -1;
	}
	return 0;
}

static int step(struct skipper_backend *be, const int32_t *tok, int n, int n_past, int all, int32_t *ids)
{
	return forward(be, tok, n, n_past, all, ids, NULL, 0);
}

/* Median seconds of reps one-row draft passes at n_past. */
static double draft_median(struct skipper_backend *be, const int32_t *tok, int n_past, const uint8_t *skip,
                           int subset, double *t, int reps)
{
	int32_t id;
	for (int r = -2; r < reps; r++) {
		double a = now();
		if (forward(be, tok, 1, n_past, 1, &id, skip, subset))
			return -1;
		if (r >= 0)
			t[r] = now() - a;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp_double);
	return t[reps / 2];
}

/* One line of ms per pass by kind of work, for the passes just timed. */
static void print_timing(struct skipper_backend *be, long n)
{
	static const char *const key[SKIPPER_PROF_N] = {
		[SKIPPER_PROF_QKV] = "qkv", [SKIPPER_PROF_ATTN_OUT] = "attn_out", [SKIPPER_PROF_GATE_UP] = "gate_up",
		[SKIPPER_PROF_DOWN] = "down", [SKIPPER_PROF_HEAD] = "head", [SKIPPER_PROF_ATTENTION] = "attention",
		[SKIPPER_PROF_QUANT] = "quant", [SKIPPER_PROF_ROWWISE] = "rowwise", [SKIPPER_PROF_TOPK] = "topk",
	};
	struct skipper_backend_timing p;
	be->ops->timing(be, 0, &p);
	int m = n > 1;
	double per = p.passes[m] ? 1e3 / (double)p.passes[m] : 0;
	printf("profile_n=%ld", n);
	for (int k = 0; k < SKIPPER_PROF_N; k++)
		printf(" %s_ms=%.3f", key[k], p.seconds[m][k] * per);
	printf(" wait_ms=%.3f\n", p.wait[m] * per);
}

/* Whether --fill wrote slot `slot`: its K/V in the last layer, read back,
 * are those of the slot it copies. */
static int fill_check(struct skipper_backend *be, const struct skipper_model *m, int fill, int slot)
{
	size_t n = (size_t)m->view.hp.n_head_kv * (size_t)m->view.hp.head_dim;
	float *a = calloc(4 * n, sizeof *a);
	struct skipper_error err = { 0 };
	int layer = m->view.hp.n_layer - 1, rc = -1;
	if (a && !skipper_backend_kv_read(be, 0, layer, slot % fill, a, a + n, &err) &&
	    !skipper_backend_kv_read(be, 0, layer, slot, a + 2 * n, a + 3 * n, &err))
		rc = memcmp(a, a + 2 * n, 2 * n * sizeof *a) ? -1 : 0;
	if (rc)
		fprintf(stderr, "bench-verify: --fill: slot %d does not hold slot %d's K/V%s%s\n", slot, slot % fill,
		        err.msg[0] ? ": " : "", err.msg);
	free(a);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "backend", 1, 0, 'b' }, { "prompt", 1, 0, 'p' }, { "tokens", 1, 0, 't' },
		{ "sizes", 1, 0, 's' },   { "reps", 1, 0, 'r' },   { "threads", 1, 0, 'j' }, { "draft-vocab", 1, 0, 'v' },
		{ "profile", 0, 0, 'P' }, { "kv", 1, 0, 'k' }, { "fill", 1, 0, 'f' }, { 0, 0, 0, 0 },
	};
	const char *backend = "cuda", *sizes = "1,2,4,8,16,32";
	int np = 128, ntok = 128, reps = 20, threads = 0, draft_vocab = 0, profile = 0, kv = SKIPPER_KV_F16, fill = 0, c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'b': backend = optarg; break;
		case 'p': np = atoi(optarg); break;
		case 't': ntok = atoi(optarg); break;
		case 's': sizes = optarg; break;
		case 'r': reps = atoi(optarg); break;
		case 'j': threads = atoi(optarg); break;
		case 'v': draft_vocab = atoi(optarg); break;
		case 'P': profile = 1; break;
		case 'f': fill = atoi(optarg); break;
		case 'k':
			kv = !strcmp(optarg, "q8_0") ? SKIPPER_KV_Q8_0 : !strcmp(optarg, "f16") ? SKIPPER_KV_F16 : -1;
			break;
		default: return 2;
		}
	}
	if (optind + 1 != argc || np < 1 || ntok < 1 || reps < 1 || draft_vocab < 0 || kv < 0 || fill < 0 ||
	    fill > np) {
		fprintf(stderr, "usage: bench-verify MODEL [--backend cpu|cuda|auto] [--prompt N] [--tokens N] "
		                "[--sizes 1,2,4,...] [--reps N] [--threads N] [--draft-vocab N] [--profile] "
		                "[--kv f16|q8_0] [--fill N <= --prompt]\n");
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
		.n_ctx = np + ntok + MAXN + 8, .n_threads = threads, .kv_type = kv,
		.kind = !strcmp(backend, "cuda") ? SKIPPER_BACKEND_CUDA
		        : !strcmp(backend, "cpu") ? SKIPPER_BACKEND_CPU : SKIPPER_BACKEND_AUTO,
	};
	if (skipper_backend_create(&m->view, &o, &be, &err)) {
		fprintf(stderr, "bench-verify: %s\n", err.msg);
		return 1;
	}
	printf("backend=%s kv=%s\n", be->ops->name, skipper_kv_type_name(kv));
	if (profile && !be->ops->timing) {
		fprintf(stderr, "bench-verify: backend %s has no --profile\n", be->ops->name);
		return 1;
	}

	int32_t *tok = malloc(sizeof(int32_t) * (np + ntok + MAXN)), ids[MAXN];
	uint64_t s = 12345;
	for (int i = 0; i < np + MAXN; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		tok[i] = (int32_t)((s >> 33) % (uint64_t)m->view.hp.n_vocab);
	}
	double t0 = now();
	int pre = fill ? fill : np;
	if (step(be, tok, pre, 0, 0, ids))
		return 1;
	double t1 = now();
	printf("prefill_tokens=%d prefill_s=%.6f\n", pre, t1 - t0);
	for (int at = pre; at < np; at += MAXN) {
		int32_t src[MAXN], dst[MAXN], n = np - at < MAXN ? np - at : MAXN;
		for (int i = 0; i < n; i++) {
			src[i] = (at + i) % fill;
			dst[i] = at + i;
		}
		if (skipper_backend_kv_move(be, 0, src, dst, n, &err)) {
			fprintf(stderr, "bench-verify: --fill: %s\n", err.msg);
			return 1;
		}
	}
	if (pre < np) {
		if (fill_check(be, m, fill, np - 1))
			return 1;
		printf("filled_tokens=%d\n", np - fill);
	}

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
			if (profile && r == 0)
				be->ops->timing(be, 1, NULL);
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
		if (profile)
			print_timing(be, n);
		p = *end ? end + 1 : end;
	}

	/* draft steps: every other layer skipped, full head, then the subset head */
	uint8_t *skip = calloc((size_t)m->view.hp.n_layer, 1);
	int32_t *sub = NULL;
	if (!skip)
		return 1;
	for (int l = 1; l < m->view.hp.n_layer; l += 2)
		skip[l] = 1;
	double full = draft_median(be, tok + np, n_past, NULL, 0, t, reps);
	double half = draft_median(be, tok + np, n_past, skip, 0, t, reps);
	if (full <= 0 || half < 0)
		return 1;
	printf("draft_full_ms=%.4f draft_half_ms=%.4f draft_half_ratio=%.3f\n", full * 1e3, half * 1e3, half / full);
	if (draft_vocab > 0 && draft_vocab < m->view.hp.n_vocab) {
		if (!be->ops->set_head_subset) {
			fprintf(stderr, "bench-verify: backend %s has no subset head\n", be->ops->name);
			return 1;
		}
		if (!(sub = malloc(sizeof *sub * (size_t)draft_vocab)))
			return 1;
		for (int i = 0; i < draft_vocab; i++)
			sub[i] = i;
		if (skipper_backend_set_head_subset(be, sub, draft_vocab, &err)) {
			fprintf(stderr, "bench-verify: %s\n", err.msg);
			return 1;
		}
		double hs = draft_median(be, tok + np, n_past, skip, 1, t, reps);
		if (hs < 0)
			return 1;
		printf("draft_vocab=%d draft_half_subset_ms=%.4f draft_half_subset_ratio=%.3f\n", draft_vocab, hs * 1e3,
		       hs / full);
		free(sub);
	}
	free(skip);
	free(t);
	free(tok);
	be->ops->destroy(be);
	skipper_model_free(m);
	return 0;
}
