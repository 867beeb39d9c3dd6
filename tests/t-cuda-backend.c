/* The CUDA backend against the CPU backend, and its own batch invariance.
 * Prints `1..0 # SKIP no CUDA device` where no CUDA backend can be created
 * (testbackend.h); needs no GPU to pass.
 *
 * On tiny in-memory models (every dtype, GQA, tied and untied heads, both
 * RoPE layouts and scalings, llama, qwen2's Q/K/V biases and qwen3's
 * per-head Q/K norms; t-backend-model.h):
 *  - bitwise, on the GPU alone: batches of 1..64 rows == one token at a time,
 *    with random skip masks; tree batches (16 and 64 rows) == each node's
 *    ancestor chain alone; a 16-row batch's KV == the sequential KV; kv_write=0
 *    leaves the cache unchanged; kv_move of an accepted tree path == the path
 *    computed directly. This is what lossless greedy SSD rests on.
 *  - within tolerance of the CPU: logits and top-1, KV, a tree batch, layer
 *    and sub-layer captures, sublayer() steps, head_argmax, a 75-row
 *    (chunked, prefill) batch; top-k consistent with the GPU's own logits;
 *    time_sublayer > 0; bad tokens and context overflow refused;
 *  - the draft head over a vocabulary subset: bitwise the full head's
 *    logits at those ids, top-k mapped back to vocabulary ids.
 * On SmolLM2-135M when it is cached (skipped otherwise): logits and top-1 at
 * every position of several prompts, and a greedy continuation.
 * SKIPPER_TEST_KV=q8_0 (t-cudaemu-kv-q8.sh) runs the models whose heads a
 * q8_0 cache takes (multiples of 32) with one on both backends.
 *
 * Tolerance. The CUDA backend computes with BF16 weights by design
 * (F16/F32 rounded, the block types dequantized to BF16 on upload), so on the tiny
 * models the CPU runs the model's BF16 twin (tm_bf16_twin: the very weights
 * the GPU holds) and the two differ only in arithmetic order and in rare
 * one-ulp flips of the F16 K/V cache, which the deliberately peaky attention
 * of these random models amplifies. Measured on the emulated module
 * (tests/cudaemu): at most 0.6 % of the scale on batches of up to 64 rows,
 * 10 % on the 75-row prefill, whose cuBLAS path also rounds activations to
 * BF16. Hence max |cuda - cpu| <= TOL * max |cpu| over the compared tensor
 * (logits of all rows, one capture boundary, the KV of all layers) with
 * TWIN_TOL = 0.03 and PREFILL_TOL = 0.2: several times the noise, far below
 * what a real bug gives (a wrong RoPE, mask, norm, skip or parent moves
 * values by the order of the scale itself). Against the model's own dtype
 * the BF16 rounding of weights adds up to ~10 % on these chaotic models,
 * which says nothing about the code, so that is not compared. A top-1
 * choice must match unless the CPU's own logits put the two choices within
 * the tolerance of each other (a near tie, which rounding may legitimately
 * flip). SmolLM2 is compared with its real Q4_1 weights at REL_TOL = 0.05
 * with an absolute floor of 1.5 (t-parity's measured noise between two
 * 8-bit implementations of this model, whose residual stream has |h| ~ 2600
 * outliers); it passes on the emulated module with no flip outside ties. */
#include "build-config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/error.h"
#include "model/model.h"
#include "tap.h"
#include "t-backend-model.h"
#include "t-backend-util.h"
#include "testbackend.h"
#include "testmodel.h"
#include "tokenizer/tokenizer.h"

#define NCTX 256
#define P 5     /* committed prompt */
#define NB 16   /* the usual verify batch */
#define NMAX 64 /* largest verify batch the engine sends */
#define NCHUNK 75
#define TWIN_TOL 0.03
#define PREFILL_TOL 0.2
#define REL_TOL 0.05
#define SMOL_ABS_TOL 1.5

static struct skipper_backend *cuda(const struct skipper_model_view *m)
{
	return test_backend_open(m, SKIPPER_BACKEND_CUDA, NCTX, 0);
}

static struct skipper_backend *cpu(const struct skipper_model_view *m)
{
	return test_backend_open(m, SKIPPER_BACKEND_CPU, NCTX, 0);
}

static double max_abs(const float *x, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s = fmax(s, fabs(x[i]));
	return s;
}

/* max |got - ref| <= max(rel * max |ref|, floor); NaN/inf in got fails. */
static int near(const char *label, const char *what, const float *got, const float *ref, size_t n, double rel,
                double floor_abs)
{
	double d = 0, s = max_abs(ref, n);
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		double e = isfinite(got[i]) ? fabs((double)got[i] - ref[i]) : INFINITY;
		if (e > d) {
			d = e;
			at = i;
		}
	}
	double tol = fmax(rel * s, floor_abs);
	return ok(d <= tol, "%s: %s: max |cuda - cpu| %.3g <= %.3g (scale %.3g, worst at %zu)", label, what, d, tol, s,
	          at);
}

static int argmax(const float *x, int n)
{
	int b = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

/* Rows whose argmax differs although the CPU's logits separate the two
 * choices by at least tie; *ties counts the flips inside a near tie. */
static int top1_disagree(const int32_t *got_ids, const float *cpu_lg, int rows, int V, double tie, int *ties)
{
	int bad = 0;
	*ties = 0;
	for (int i = 0; i < rows; i++) {
		const float *c = cpu_lg + (size_t)i * V;
		int want = argmax(c, V), g = got_ids[i];
		if (g == want)
			continue;
		if (g >= 0 && g < V && c[want] - c[g] < tie)
			(*ties)++;
		else
			bad++;
	}
	return bad;
}

static void argmax_rows(const float *lg, int rows, int V, int32_t *ids)
{
	for (int i = 0; i < rows; i++)
		ids[i] = argmax(lg + (size_t)i * V, V);
}

static int logits_match(const char *label, const char *what, const float *got, const float *cpu_lg, int rows,
                        int V, double rel, double floor_abs)
{
	int32_t ids[NCTX];
	int ties, bad;
	int good = near(label, what, got, cpu_lg, (size_t)rows * V, rel, floor_abs);
	argmax_rows(got, rows, V, ids);
	bad = top1_disagree(ids, cpu_lg, rows, V, fmax(rel * max_abs(cpu_lg, (size_t)rows * V), floor_abs), &ties);
	good &= ok(bad == 0, "%s: %s: top-1 identical on %d rows (%d flips inside near ties, %d outside)", label,
	           what, rows, ties, bad);
	return good;
}

/* KV of slots [0, upto) of every layer: cuda within tolerance of cpu. */
static void kv_near(const char *label, const char *what, struct skipper_backend *cu, struct skipper_backend *cp,
                    int upto, double rel)
{
	const struct skipper_hparams *hp = &cp->model->hp;
	size_t kvd = (size_t)hp->n_head_kv * hp->head_dim, n = (size_t)hp->n_layer * upto * kvd * 2;
	float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
	for (int l = 0; l < hp->n_layer; l++)
		for (int s = 0; s < upto; s++) {
			size_t o = ((size_t)l * upto + s) * kvd * 2;
			skipper_backend_kv_read(cu, 0, l, s, a + o, a + o + kvd, NULL);
			skipper_backend_kv_read(cp, 0, l, s, b + o, b + o + kvd, NULL);
		}
	near(label, what, a, b, n, rel, 0);
	free(a);
	free(b);
}

static void random_mask(struct tm_rng *r, uint8_t *sa, uint8_t *sm, int L, int all)
{
	for (int l = 0; l < L; l++) {
		sa[l] = all || tm_unif(r) < 0.4;
		sm[l] = all || tm_unif(r) < 0.4;
	}
}

/* Random tree over n rows after a prefix of p: parents, RoPE positions. */
static void random_tree(struct tm_rng *r, int n, int p, int32_t *par, int32_t *pos)
{
	int32_t depth[NMAX];
	for (int i = 0; i < n; i++) {
		par[i] = i == 0 ? -1 : (int32_t)(tm_unif(r) * (i + 1)) - 1;
		depth[i] = par[i] < 0 ? 0 : depth[par[i]] + 1;
		pos[i] = p + depth[i];
	}
}

/* Root-to-node chain of batch row i: rows path[0..np). */
static int tree_path(const int32_t *par, int i, int32_t *path)
{
	int np = 0;
	for (int x = i; x >= 0; x = par[x])
		path[np++] = x;
	for (int k = 0; k < np / 2; k++) {
		int32_t t = path[k];
		path[k] = path[np - 1 - k];
		path[np - 1 - k] = t;
	}
	return np;
}

/* 1. bitwise batch invariance on the GPU: a (sequential reference) and b */
static void invariance(const char *label, struct skipper_backend *a, struct skipper_backend *b, const int32_t *tok,
                       struct tm_rng *r, float *ref, float *got)
{
	static const int sizes[] = { 1, 2, 5, NB, 33, NMAX };
	int V = a->model->hp.n_vocab, L = a->model->hp.n_layer;
	uint8_t sa[64], sm[64];
	fwd(a, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
	fwd(b, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
	for (int t = 0; t < 4; t++) {
		int none = t == 0, bad = 0;
		random_mask(r, sa, sm, L, t == 3);
		seq(a, tok + P, NMAX, P, none ? NULL : sa, none ? NULL : sm, ref, V);
		for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
			int n = sizes[k];
			fwd(b, tok + P, n, P, NULL, NULL, 0, none ? NULL : sa, none ? NULL : sm, got);
			bad += memcmp(ref, got, sizeof(float) * V * n) != 0;
		}
		ok(bad == 0, "%s: mask %d%s: batches of 1..%d rows == one token at a time, bitwise (%d sizes differ)",
		   label, t, t == 3 ? " (all skipped)" : none ? " (none)" : "", NMAX, bad);
	}
	/* the KV a batch writes == what one token at a time writes */
	seq(a, tok + P, NB, P, NULL, NULL, NULL, V);
	fwd(b, tok + P, NB, P, NULL, NULL, 1, NULL, NULL, got);
	ok(cache_eq(a, b, P + NB), "%s: %d-row batch KV == sequential KV, bitwise", label, NB);
}

/* 2. trees: every node == its chain alone (bitwise), CPU parity, kv_write=0
 * leaves the cache alone, kv_move compaction */
static void trees(const char *label, struct skipper_backend *a, struct skipper_backend *b,
                  struct skipper_backend *c, const int32_t *tok, struct tm_rng *r, float *ref, float *got,
                  float *cref)
{
	int V = a->model->hp.n_vocab;
	int32_t par[NMAX], pos[NMAX], path[NMAX], ptok[NMAX], src[NMAX], dst[NMAX];
	for (int n = NB; n <= NMAX; n *= 4) {
		random_tree(r, n, P, par, pos);
		fwd(b, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
		fwd(c, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
		float *before, *after;
		size_t nbytes = cache_bytes(b, &before);
		fwd(b, tok + P, n, P, par, pos, 0, NULL, NULL, got);
		cache_bytes(b, &after);
		ok(memcmp(before, after, nbytes) == 0, "%s: %d-row tree with kv_write=0 leaves the cache unchanged", label,
		   n);
		free(before);
		free(after);
		for (int kvw = 0; kvw < 2; kvw++) {
			int bad = 0;
			fwd(b, tok + P, n, P, par, pos, kvw, NULL, NULL, got);
			for (int i = 0; i < n; i++) {
				int np = tree_path(par, i, path);
				for (int k = 0; k < np; k++)
					ptok[k] = tok[P + path[k]];
				fwd(a, ptok, np, P, NULL, NULL, 0, NULL, NULL, ref);
				bad += memcmp(ref + (size_t)(np - 1) * V, got + (size_t)i * V, sizeof(float) * V) != 0;
			}
			ok(bad == 0, "%s: %d-row tree (kv_write=%d): every node == its chain alone, bitwise (%d differ)",
			   label, n, kvw, bad);
		}
		fwd(c, tok + P, n, P, par, pos, 1, NULL, NULL, cref);
		logits_match(label, n == NB ? "16-row tree vs cpu" : "64-row tree vs cpu", got, cref, n, V, TWIN_TOL, 0);

		/* compact the path to the last row, as the engine does after acceptance */
		int np = tree_path(par, n - 1, path);
		for (int k = 0; k < np; k++) {
			src[k] = P + path[k];
			dst[k] = P + k;
			ptok[k] = tok[P + path[k]];
		}
		struct skipper_error err = { 0 };
		ok(skipper_backend_kv_move(b, 0, src, dst, np, &err) == 0 && skipper_backend_kv_move(c, 0, src, dst, np, &err) == 0,
		   "%s: kv_move on both backends", label);
		fwd(a, ptok, np, P, NULL, NULL, 1, NULL, NULL, NULL);
		ok(cache_eq(a, b, P + np), "%s: kv_move(path of %d) == the path computed directly, bitwise", label, np);
		kv_near(label, "KV after kv_move vs cpu", b, c, P + np, TWIN_TOL);
	}
}

/* Rows [n][E] of capture boundary k out of captures [n][nc][E]. */
static void boundary(const float *cap, int n, int nc, int k, int E, float *out)
{
	for (int i = 0; i < n; i++)
		memcpy(out + (size_t)i * E, cap + ((size_t)i * nc + k) * E, sizeof(float) * E);
}

/* cuda states within TWIN_TOL of the cpu's scale; else a diagnostic */
static int states_near(const char *what, int k, const float *g, const float *c, size_t n)
{
	double d = 0, s = max_abs(c, n);
	for (size_t i = 0; i < n; i++)
		d = fmax(d, isfinite(g[i]) ? fabs((double)g[i] - c[i]) : INFINITY);
	if (d <= TWIN_TOL * s)
		return 1;
	diag("%s %d: max |cuda - cpu| %.3g, scale %.3g", what, k, d, s);
	return 0;
}

/* 3. captures (layers and sub-layer boundaries), sublayer(), head_argmax */
static void states(const char *label, struct skipper_backend *b, struct skipper_backend *c, const int32_t *tok)
{
	const struct skipper_hparams *hp = &b->model->hp;
	int L = hp->n_layer, E = hp->n_embd, V = hp->n_vocab, n = 6, nb = 2 * L + 1;
	int32_t cl[2 * 64 + 1], rows[6], hc[6], hg[6];
	float *capg = malloc(sizeof(float) * n * nb * E), *capc = malloc(sizeof(float) * n * nb * E);
	float *layc = malloc(sizeof(float) * n * (L + 1) * E);
	float *sg = malloc(sizeof(float) * n * E), *sc = malloc(sizeof(float) * n * E);
	float *lg = malloc(sizeof(float) * n * V);
	struct skipper_error err = { 0 };

	for (int i = 0; i < nb; i++)
		cl[i] = i - 1;
	for (int i = 0; i < n; i++)
		rows[i] = i;
	fwd(b, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
	fwd(c, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
	for (int sub = 0; sub < 2; sub++) {
		int nc = sub ? nb : L + 1, bad = 0;
		struct skipper_forward fw = {
			.n = n, .tokens = tok + P, .n_past = P, .kv_write = 0, .n_out = n, .out_rows = rows,
			.logits = lg, .n_cap_layers = nc, .cap_layers = cl, .cap_sublayers = sub, .n_cap_rows = n,
			.cap_rows = rows, .captures = sub ? capc : layc,
		};
		if (skipper_backend_forward(c, &fw, &err)) {
			/* the reference lacks them (a CPU backend older than cap_sublayers) */
			diag("cpu %s captures: %s", sub ? "sub-layer" : "layer", err.msg);
			tap_skip(1, "no reference captures from the cpu backend");
			continue;
		}
		if (sub == 0)
			memcpy(capc, layc, sizeof(float) * n * nc * E);
		fw.captures = capg;
		if (!ok(skipper_backend_forward(b, &fw, &err) == 0, "%s: forward with %s captures", label,
		        sub ? "sub-layer" : "layer"))
			continue;
		/* one boundary at a time: each has its own scale */
		for (int k = 0; k < nc; k++) {
			boundary(capg, n, nc, k, E, sg);
			boundary(capc, n, nc, k, E, sc);
			bad += !states_near(sub ? "sub-layer boundary" : "layer", k - 1, sg, sc, (size_t)n * E);
		}
		ok(bad == 0, "%s: %d %s captures within %.2f of their scale (%d outside)", label, nc,
		   sub ? "sub-layer" : "layer", TWIN_TOL, bad);
	}

	/* sublayer(): the same input states (the CPU's) through one sub-layer on
	 * each backend, every sub-layer, so errors do not compound: attention
	 * gets the CPU's state after block l - 1, the MLP the CPU's state after
	 * that attention */
	{
		int bad = 0;
		for (int l = 0; l < L; l++) {
			boundary(layc, n, L + 1, l, E, sc);
			for (int k = 0; k < 2; k++) {
				memcpy(sg, sc, sizeof(float) * n * E);
				int rc = skipper_backend_sublayer(b, 0, k ? SKIPPER_MLP : SKIPPER_ATTN, l, n, sg, NULL, P, &err);
				rc |= skipper_backend_sublayer(c, 0, k ? SKIPPER_MLP : SKIPPER_ATTN, l, n, sc, NULL, P, &err);
				if (rc)
					diag("sublayer %d of layer %d: %s", k, l, err.msg);
				bad += rc || !states_near(k ? "sublayer mlp" : "sublayer attn", l, sg, sc, (size_t)n * E);
			}
		}
		ok(bad == 0, "%s: sublayer() on the same states: cuda within tolerance of cpu (%d of %d outside)", label,
		   bad, 2 * L);
	}

	/* head_argmax on the CPU's final states; near ties judged by the CPU's
	 * logits of the same rows (final norm + head of exactly those states) */
	boundary(layc, n, L + 1, L, E, sc);
	{
		struct skipper_forward fw = { .n = n, .tokens = tok + P, .n_past = P, .kv_write = 0, .n_out = n,
		                              .out_rows = rows, .logits = lg };
		int rc = skipper_backend_forward(c, &fw, &err);
		rc |= skipper_backend_head_argmax(b, n, sc, hg, &err);
		rc |= skipper_backend_head_argmax(c, n, sc, hc, &err);
		int ties, bad = rc ? n : top1_disagree(hg, lg, n, V, TWIN_TOL * max_abs(lg, (size_t)n * V), &ties);
		ok(rc == 0 && bad == 0, "%s: head_argmax on the same states: cuda == cpu outside near ties (%d differ)",
		   label, bad);
		int32_t fa[6];
		argmax_rows(lg, n, V, fa);
		ok(memcmp(fa, hc, sizeof fa) == 0, "%s: cpu head_argmax == cpu forward argmax (the reference holds)",
		   label);
	}
	free(capg);
	free(capc);
	free(layc);
	free(sg);
	free(sc);
	free(lg);
}

static void test_model(const char *label, const struct tm_opts *o)
{
	struct tm_model *tm = tm_build(o);
	if (test_kv_type() == SKIPPER_KV_Q8_0 && tm->m.hp.head_dim % 32) {
		diag("%s: heads of %d: no q8_0 cache", label, tm->m.hp.head_dim);
		tm_free(tm);
		return;
	}
	const struct skipper_model_view *m = &tm->m;
	int V = m->hp.n_vocab;
	struct tm_rng r = { o->seed + 77 };
	int32_t tok[P + NCHUNK];
	float *ref = malloc(sizeof(float) * V * NCHUNK), *got = malloc(sizeof(float) * V * NCHUNK);
	float *cref = malloc(sizeof(float) * V * NCHUNK);
	/* the CPU runs the weights the GPU holds (see the tolerance note); so
	 * does a CPU standing in for the GPU */
	struct tm_model *twin = tm_bf16_twin(tm);
	const struct skipper_model_view *gm = test_cuda_standin() ? &twin->m : m;
	/* CUDA first: where there is none, nothing has been printed yet and the file skips */
	struct skipper_backend *a = cuda(gm), *b = cuda(gm), *c = cpu(&twin->m);
	struct skipper_error err = { 0 };

	rand_tokens(&r, tok, P + NCHUNK, V);

	/* parity: prompt and a 16-row batch, logits, top-1 and KV */
	fwd(b, tok, P + NB, 0, NULL, NULL, 1, NULL, NULL, got);
	fwd(c, tok, P + NB, 0, NULL, NULL, 1, NULL, NULL, cref);
	logits_match(label, "21-row batch vs cpu", got, cref, P + NB, V, TWIN_TOL, 0);
	kv_near(label, "KV vs cpu", b, c, P + NB, TWIN_TOL);

	invariance(label, a, b, tok, &r, ref, got);
	trees(label, a, b, c, tok, &r, ref, got, cref);
	states(label, b, c, tok);

	/* more rows than one verify batch: the prefill path */
	fwd(b, tok, NCHUNK, 0, NULL, NULL, 1, NULL, NULL, got);
	fwd(c, tok, NCHUNK, 0, NULL, NULL, 1, NULL, NULL, cref);
	logits_match(label, "75-row prefill vs cpu", got, cref, NCHUNK, V, PREFILL_TOL, 0);
	kv_near(label, "75-row prefill KV vs cpu", b, c, NCHUNK, PREFILL_TOL);
	seq(a, tok, NCHUNK, 0, NULL, NULL, ref, V);
	/* not required: the engine verifies at most 64 rows; prefill is shared by AR and SSD */
	diag("%s: 75-row prefill %s one token at a time bitwise", label,
	     memcmp(ref, got, sizeof(float) * V * NCHUNK) ? "differs from" : "equals");

	/* top-k computed on the device, against the device's own logits */
	{
		int32_t ids[2 * 10], rows[2] = { 3, 0 };
		float pr[2 * 10];
		struct skipper_forward fw = {
			.n = NB, .tokens = tok + P, .n_past = P, .n_out = 2, .out_rows = rows,
			.top_k = 10, .top_ids = ids, .top_probs = pr, .logits = got,
		};
		int good = skipper_backend_forward(b, &fw, &err) == 0;
		for (int k = 0; k < 2 && good; k++)
			good &= topk_consistent(got + (size_t)k * V, V, ids + k * 10, pr + k * 10, 10, 1e-4);
		ok(good, "%s: top-k descending, probabilities = softmax of the logits, nothing better left out", label);
		/* ids alone (greedy verification): the same ids */
		int32_t ids2[2 * 10];
		fw.top_probs = NULL;
		fw.top_ids = ids2;
		fw.logits = NULL;
		ok(skipper_backend_forward(b, &fw, &err) == 0 && memcmp(ids, ids2, sizeof ids) == 0,
		   "%s: top-k without probabilities: the same ids", label);
	}

	{
		double ta = 0, tm2 = 0;
		int rc = skipper_backend_time_sublayer(b, SKIPPER_ATTN, 0, 32, &ta, &err);
		rc |= skipper_backend_time_sublayer(b, SKIPPER_MLP, m->hp.n_layer - 1, 32, &tm2, &err);
		ok(rc == 0 && ta > 0 && tm2 > 0 && ta < 1 && tm2 < 1, "%s: time_sublayer attn %.3g s, mlp %.3g s", label,
		   ta, tm2);
	}

	{
		int32_t badtok = V;
		struct skipper_forward fw = { .n = 1, .tokens = &badtok, .n_past = 0, .kv_write = 1 };
		ok(skipper_backend_forward(b, &fw, &err) == SKIPPER_ERR_ARG && err.msg[0], "%s: token out of range refused (%s)",
		   label, err.msg);
		fw.tokens = tok;
		fw.n_past = NCTX;
		ok(skipper_backend_forward(b, &fw, &err) == SKIPPER_ERR_RANGE, "%s: context overflow refused", label);
	}

	a->ops->destroy(a);
	b->ops->destroy(b);
	c->ops->destroy(c);
	free(ref);
	free(got);
	free(cref);
	tm_free(twin);
	tm_free(tm);
}

/* SmolLM2-135M, when cached: every prompt position and a greedy continuation. */
static void test_smollm2(void)
{
	static const char *prompts[] = {
		"The capital of France is",
		"Write a short poem about the sea.",
		"def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
		"Question: What is 17 times 23? Answer:",
	};
	char buf[4096];
	const char *path = skipper_test_smollm2_path(buf, sizeof buf);
	struct skipper_model *m;
	struct skipper_tokenizer *tk;
	struct skipper_error err = { 0 };
	FILE *f = fopen(path, "rb");
	if (!f) {
		tap_skip(1, "SmolLM2 not cached (scripts/fetch-model.sh fetches it)");
		return;
	}
	fclose(f);
	if (skipper_model_load(path, &m, &err) || skipper_tokenizer_from_gguf(m->gguf, &tk, &err))
		BAIL(err.msg);
	struct skipper_backend *g = cuda(&m->view), *c = cpu(&m->view);
	int V = m->view.hp.n_vocab;
	for (size_t p = 0; p < sizeof prompts / sizeof prompts[0]; p++) {
		int32_t *ids;
		size_t n;
		char label[64];
		snprintf(label, sizeof label, "smollm2 prompt %zu", p);
		if (skipper_tokenize(tk, prompts[p], strlen(prompts[p]), 0, 0, &ids, &n, &err))
			BAIL(err.msg);
		float *lg = malloc(sizeof(float) * V * n), *lc = malloc(sizeof(float) * V * n);
		fwd(g, ids, (int)n, 0, NULL, NULL, 1, NULL, NULL, lg);
		fwd(c, ids, (int)n, 0, NULL, NULL, 1, NULL, NULL, lc);
		logits_match(label, "every position", lg, lc, (int)n, V, REL_TOL, SMOL_ABS_TOL);

		/* greedy continuation on each backend; compared up to the first step
		 * where the CPU itself sees a near tie (beyond it they may part) */
		int32_t tg = (int32_t)argmax(lg + (n - 1) * V, V), tc = (int32_t)argmax(lc + (n - 1) * V, V);
		int steps = 0, same = 1, tie_at = -1;
		for (int s = 0; s < 24 && same; s++) {
			const float *row = s == 0 ? lc + (n - 1) * V : lc;
			double tol = fmax(REL_TOL * max_abs(row, V), SMOL_ABS_TOL);
			if (tg != tc) {
				if (row[tc] - row[tg] < tol)
					tie_at = s;
				else
					same = 0;
				break;
			}
			steps++;
			int32_t x = tg;
			fwd(g, &x, 1, (int)n + s, NULL, NULL, 1, NULL, NULL, lg);
			fwd(c, &x, 1, (int)n + s, NULL, NULL, 1, NULL, NULL, lc);
			tg = (int32_t)argmax(lg, V);
			tc = (int32_t)argmax(lc, V);
		}
		ok(same, "%s: greedy continuation identical for %d tokens%s", label, steps,
		   tie_at >= 0 ? " (then a near tie)" : "");
		free(ids);
		free(lg);
		free(lc);
	}
	g->ops->destroy(g);
	c->ops->destroy(c);
	skipper_tokenizer_free(tk);
	skipper_model_free(m);
}

/* The draft head over a vocabulary subset: each subset logit has the bits
 * of the full head's logit for that id (the same GEMM over gathered rows;
 * within 1e-5 on a CPU stand-in),
 * top-k ids are vocabulary ids of the subset's best, in one-token passes
 * (CUDA graphs) and batches alike; n = 0 brings the full head back. */
static void test_head_subset(void)
{
	struct tm_opts o = { .type = SKIPPER_Q4_1, .n_layer = 2, .seed = 5, .rope_style = SKIPPER_ROPE_PAIRS };
	struct tm_model *tm = tm_build(&o);
	int V = tm->m.hp.n_vocab, n_sub = 0;
	struct skipper_backend *be = cuda(&tm->m);
	struct skipper_error err = { 0 };
	int32_t sub[160], tok[NB], rows[NB];
	float *full = malloc(sizeof(float) * V * NB), *part = malloc(sizeof(float) * V * NB);
	struct tm_rng r = { 9 };
	/* the CUDA head is one GEMM over gathered rows; the CPU's kernels tile
	 * the subset's rows differently, a last bit apart */
	int exact = !test_cuda_standin();

	/* every third id, in a shuffled order the mapping must undo */
	for (int i = V - 1; i >= 0; i -= 3)
		sub[n_sub++] = i;
	for (int i = n_sub - 1; i > 0; i--) {
		int j = (int)(tm_unif(&r) * (i + 1)), t = sub[i];
		sub[i] = sub[j];
		sub[j] = t;
	}
	rand_tokens(&r, tok, NB, V);
	for (int i = 0; i < NB; i++)
		rows[i] = i;
	ok(skipper_backend_set_head_subset(be, sub, n_sub, &err) == 0, "set_head_subset of %d ids%s%s", n_sub,
	   err.msg[0] ? ": " : "", err.msg);
	for (int n = 1; n <= NB; n += NB - 1) {
		for (int pass = 0; pass < 2; pass++) { /* a second one-token pass replays its graph */
			int32_t ids[NB * 4], want[4];
			struct skipper_forward fw = { .n = n, .tokens = tok, .n_past = 0, .n_out = n, .out_rows = rows,
			                              .logits = full };
			int good = skipper_backend_forward(be, &fw, &err) == 0;
			fw.head_subset = 1;
			fw.logits = part;
			fw.top_k = 4;
			fw.top_ids = ids;
			good &= skipper_backend_forward(be, &fw, &err) == 0;
			for (int j = 0; good && j < n; j++) {
				const float *pj = part + (size_t)j * n_sub, *fj = full + (size_t)j * V;
				for (int i = 0; i < n_sub; i++)
					good &= exact ? !memcmp(&pj[i], &fj[sub[i]], 4)
					              : fabs(pj[i] - fj[sub[i]]) <= 1e-5 * fmax(1.0, fabs(fj[sub[i]]));
				/* the pass's own best 4 subset logits, as vocabulary ids */
				for (int k = 0; k < 4; k++) {
					int best = -1;
					for (int i = 0; i < n_sub; i++) {
						int taken = 0;
						for (int q = 0; q < k; q++)
							taken |= want[q] == sub[i];
						if (!taken && (best < 0 || pj[i] > pj[best] || (pj[i] == pj[best] && sub[i] < sub[best])))
							best = i;
					}
					want[k] = sub[best];
				}
				good &= memcmp(ids + 4 * j, want, sizeof want) == 0;
			}
			ok(good, "%d-row pass %d: subset logits == the full head's at those ids%s; top-4 ids the subset's "
			   "best as vocabulary ids", n, pass + 1, exact ? ", bitwise" : " (within 1e-5: a CPU stand-in)");
		}
	}
	ok(skipper_backend_set_head_subset(be, NULL, 0, &err) == 0, "n = 0 drops the subset");
	{
		struct skipper_forward fw = { .n = 1, .tokens = tok, .n_past = 0, .n_out = 1, .out_rows = rows,
		                              .logits = part, .head_subset = 1 };
		fwd(be, tok, 1, 0, NULL, NULL, 0, NULL, NULL, full);
		ok(skipper_backend_forward(be, &fw, &err) == 0 && !memcmp(part, full, sizeof(float) * V),
		   "then a head_subset pass computes the full head");
	}
	free(full);
	free(part);
	be->ops->destroy(be);
	tm_free(tm);
}

/* NaN logits (a corrupt file's overflow) fail the pass and the head
 * service instead of reading as token 0, as on the CPU backend. */
static void test_nonfinite(void)
{
	struct tm_opts o = { .type = SKIPPER_F32, .n_layer = 1, .seed = 3, .rope_style = SKIPPER_ROPE_PAIRS };
	struct tm_model *tm = tm_build(&o);
	((float *)(uintptr_t)tm->m.out_norm.data)[0] = NAN; /* the test model's own buffer */
	struct skipper_backend *be = cuda(&tm->m);
	struct skipper_error e = { 0 }, e2 = { 0 };
	int32_t tok = 5, top = 7, row = 0, id = 7;
	float *state = calloc((size_t)tm->m.hp.n_embd, sizeof *state);
	struct skipper_forward fw = { .n = 1, .tokens = &tok, .kv_write = 1, .n_out = 1, .out_rows = &row,
	                              .top_k = 1, .top_ids = &top };
	int rc = skipper_backend_forward(be, &fw, &e);
	ok(rc == SKIPPER_ERR_BACKEND && strstr(e.msg, "logits are not finite"), "non-finite logits fail the pass: %s",
	   e.msg);
	state[1] = 1.0f;
	rc = skipper_backend_head_argmax(be, 1, state, &id, &e2);
	ok(rc == SKIPPER_ERR_BACKEND && strstr(e2.msg, "logits are not finite") && id == 7,
	   "and the head service: %s", e2.msg);
	free(state);
	be->ops->destroy(be);
	tm_free(tm);
}

int main(void)
{
	static const struct { const char *name; int type; } types[] = {
		{ "f32", SKIPPER_F32 }, { "f16", SKIPPER_F16 }, { "bf16", SKIPPER_BF16 },
		{ "q8_0", SKIPPER_Q8_0 }, { "q4_0", SKIPPER_Q4_0 }, { "q4_1", SKIPPER_Q4_1 },
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		/* 4 heads over 2 KV heads (GQA); tied head on every other dtype */
		struct tm_opts o = { .type = types[i].type, .tied = (int)(i % 2), .n_layer = 4, .seed = 31 + i,
		                     .rope_style = SKIPPER_ROPE_PAIRS };
		if (i == 2 || i == 4) {
			o.rope_style = SKIPPER_ROPE_HALVES;
			o.rope_scaling = i == 2 ? SKIPPER_ROPE_SCALING_LINEAR : SKIPPER_ROPE_SCALING_LLAMA3;
		}
		test_model(types[i].name, &o);
	}
	/* wider, one layer: K = 1824 runs the skinny GEMM's unrolled main loops
	 * (the tiny models' K of 64 and 96 reach only its tail loop), K > 256
	 * every level of its shuffle tree, head_dim 128 as Llama's */
	struct tm_opts w = { .type = SKIPPER_BF16, .n_layer = 1, .seed = 97, .rope_style = SKIPPER_ROPE_HALVES,
	                     .n_embd = 256, .n_ff = 1824, .n_head = 2, .n_head_kv = 1, .head_dim = 128 };
	test_model("wide bf16", &w);
	/* the rest on the tiny models' 16-wide heads or a real model: once */
	if (test_kv_type() == SKIPPER_KV_F16) {
		test_smollm2();
		test_nonfinite();
		test_head_subset();
	}
	/* qwen2 (Q/K/V biases) and qwen3 (per-head Q/K norms), NeoX RoPE, on
	 * the 32-element types the list above leaves out */
	{
		struct tm_opts q = { .type = SKIPPER_Q5_0, .arch = SKIPPER_ARCH_QWEN2, .n_layer = 2, .seed = 61,
		                     .rope_style = SKIPPER_ROPE_HALVES };
		test_model("qwen2 q5_0", &q);
		q.type = SKIPPER_Q5_1;
		q.arch = SKIPPER_ARCH_QWEN3;
		q.tied = 1;
		q.seed = 62;
		test_model("qwen3 q5_1", &q);
	}
	/* the K-quants: 256-element super-blocks, so every row 256 wide */
	{
		static const struct { const char *name; int type, arch; } kq[] = {
			{ "qwen2 q4_k", SKIPPER_Q4_K, SKIPPER_ARCH_QWEN2 },
			{ "qwen3 q5_k", SKIPPER_Q5_K, SKIPPER_ARCH_QWEN3 },
			{ "llama q6_k", SKIPPER_Q6_K, SKIPPER_ARCH_LLAMA },
		};
		for (size_t i = 0; i < sizeof kq / sizeof kq[0]; i++) {
			struct tm_opts q = { .type = kq[i].type, .arch = kq[i].arch, .n_layer = 1, .seed = 71 + i,
			                     .rope_style = kq[i].arch ? SKIPPER_ROPE_HALVES : SKIPPER_ROPE_PAIRS,
			                     .n_embd = 256, .n_ff = 256, .n_head = 4, .n_head_kv = 2, .head_dim = 64 };
			test_model(kq[i].name, &q);
		}
	}
	return tap_done();
}
