/* CPU backend: batch invariance (chains, skip masks, trees, chunking, thread
 * counts), KV write/read-only/compaction, captures, sublayer + head_argmax,
 * top-k. Run twice by `make check`: native ISA and SKIPPER_CPU_ISA=generic. */
#include "build-config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/error.h"
#include "tap.h"
#include "testbackend.h"
#include "t-backend-model.h"
#include "t-backend-util.h"

#define NCTX 192
#define P 5   /* committed prompt */
#define NB 16 /* batch */

#include "backend/cpu/cpu_backend.h"


static struct skipper_backend *mk(const struct skipper_model_view *m, int threads)
{
	/* SKIPPER_TEST_KV=q8_0: every check on a q8_0 K/V cache (t-backend-kv-q8.sh) */
	struct skipper_backend_opts o = { .n_ctx = NCTX, .n_threads = threads, .kv_type = test_kv_type() };
	struct skipper_backend *be = NULL;
	struct skipper_error err = { 0 };
	if (skipper_backend_cpu_create(m, &o, &be, &err)) {
		printf("# create: %s\n", err.msg);
		exit(1);
	}
	return be;
}

static void test_model(const char *label, const struct tm_opts *o)
{
	struct tm_model *tm = tm_build(o);
	const struct skipper_model_view *m = &tm->m;
	int V = m->hp.n_vocab, L = m->hp.n_layer, E = m->hp.n_embd;
	struct tm_rng r = { o->seed + 77 };
	int32_t tok[P + 80];
	float *ref = malloc(sizeof(float) * V * 80), *got = malloc(sizeof(float) * V * 80);
	struct skipper_backend *a = mk(m, 1), *b = mk(m, 2), *c = mk(m, 2);
	uint8_t sa[8], sm[8];

	rand_tokens(&r, tok, P + 80, V);

	/* 1. 16-row batch == one at a time (also 2 threads vs 1) and caches equal */
	seq(a, tok, P + NB, 0, NULL, NULL, ref, V);
	fwd(b, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
	fwd(b, tok + P, NB, P, NULL, NULL, 1, NULL, NULL, got);
	ok(memcmp(ref + (size_t)P * V, got, sizeof(float) * V * NB) == 0,
	   "%s: 16-row batch logits == one token at a time", label);
	ok(cache_eq(a, b, P + NB), "%s: batch KV cache == sequential KV cache", label);
	{
		int finite = 1;
		for (int i = 0; i < V * NB; i++)
			finite &= isfinite(got[i]) && fabsf(got[i]) < 1e4f;
		float spread = 0;
		for (int i = 0; i < V; i++)
			spread = fmaxf(spread, fabsf(got[i] - got[0]));
		ok(finite && spread > 1e-3f, "%s: logits finite and not constant", label);
	}

	/* 2. random skip masks */
	for (int t = 0; t < 3; t++) {
		for (int l = 0; l < L; l++) {
			sa[l] = tm_unif(&r) < 0.4;
			sm[l] = tm_unif(&r) < 0.4;
		}
		if (t == 2)
			for (int l = 0; l < L; l++)
				sa[l] = sm[l] = 1; /* everything skipped: head on embeddings */
		seq(a, tok + P, NB, P, sa, sm, ref, V);
		fwd(c, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
		fwd(c, tok + P, NB, P, NULL, NULL, 1, sa, sm, got);
		ok(memcmp(ref, got, sizeof(float) * V * NB) == 0,
		   "%s: skip mask %d: batch == one at a time", label, t);
	}

	/* 3. tree: each node == its ancestor chain computed alone (read-only) */
	{
		int32_t par[NB], pos[NB], path[NB], ptok[NB], depth[NB];
		int bad = 0;
		for (int i = 0; i < NB; i++) {
			par[i] = i == 0 ? -1 : (int32_t)(tm_unif(&r) * (i + 1)) - 1;
			depth[i] = par[i] < 0 ? 0 : depth[par[i]] + 1;
			pos[i] = P + depth[i];
		}
		fwd(b, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
		for (int kvw = 0; kvw < 2; kvw++) {
			bad = 0;
			fwd(b, tok + P, NB, P, par, pos, kvw, NULL, NULL, got);
			for (int i = 0; i < NB; i++) {
				int np = 0;
				for (int x = i; x >= 0; x = par[x])
					path[np++] = x;
				for (int k = 0; k < np; k++)
					ptok[k] = tok[P + path[np - 1 - k]];
				fwd(a, ptok, np, P, NULL, NULL, 0, NULL, NULL, ref);
				bad += memcmp(ref + (size_t)(np - 1) * V, got + (size_t)i * V,
				              sizeof(float) * V) != 0;
			}
			ok(bad == 0, "%s: tree (kv_write=%d): every node == its chain alone (%d differ)",
			   label, kvw, bad);
		}

		/* 4. kv_move: compact an accepted path, compare with computing it directly */
		int leaf = NB - 1, np = 0;
		int32_t src[NB], dst[NB];
		for (int x = leaf; x >= 0; x = par[x])
			path[np++] = x;
		for (int k = 0; k < np; k++) {
			src[k] = P + path[np - 1 - k];
			dst[k] = P + k;
			ptok[k] = tok[P + path[np - 1 - k]];
		}
		struct skipper_error err = { 0 };
		ok(skipper_backend_kv_move(b, 0, src, dst, np, &err) == 0, "%s: kv_move", label);
		fwd(a, ptok, np, P, NULL, NULL, 1, NULL, NULL, NULL);
		ok(cache_eq(a, b, P + np), "%s: kv_move(path of %d) == cache of the path computed directly",
		   label, np);
	}

	/* 5. kv_write=0 leaves the cache alone */
	{
		float *before, *after;
		size_t nbytes = cache_bytes(b, &before);
		fwd(b, tok + 2, NB, P, NULL, NULL, 0, NULL, NULL, got);
		cache_bytes(b, &after);
		ok(memcmp(before, after, nbytes) == 0, "%s: kv_write=0 leaves the cache unchanged", label);
		free(before);
		free(after);
	}

	/* 6. threads: 1 vs 2, tree batch */
	{
		fwd(a, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
		fwd(a, tok + P, NB, P, NULL, NULL, 0, NULL, NULL, ref);
		fwd(c, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
		fwd(c, tok + P, NB, P, NULL, NULL, 0, NULL, NULL, got);
		ok(memcmp(ref, got, sizeof(float) * V * NB) == 0, "%s: 1 thread == 2 threads", label);
	}

	/* 7. captures, sublayer chain and head_argmax */
	{
		int nl = L + 1, n = 6;
		int32_t cl[9], cr[6], rows[6], ids[6], top[6], hid[6];
		float tp[6];
		float *cap = malloc(sizeof(float) * n * nl * E), *st = malloc(sizeof(float) * n * E);
		struct skipper_error err = { 0 };
		for (int i = 0; i < nl; i++)
			cl[i] = i - 1;
		for (int i = 0; i < n; i++)
			cr[i] = rows[i] = i;
		struct skipper_forward fw = {
			.n = n, .tokens = tok + P, .n_past = P, .kv_write = 0, .n_out = n,
			.out_rows = rows, .top_k = 1, .top_ids = top, .top_probs = tp,
			.n_cap_layers = nl, .cap_layers = cl, .n_cap_rows = n, .cap_rows = cr,
			.captures = cap,
		};
		fwd(b, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
		ok(skipper_backend_forward(b, &fw, &err) == 0, "%s: forward with captures", label);
		for (int i = 0; i < n; i++)
			memcpy(st + i * E, cap + (size_t)i * nl * E, sizeof(float) * E);
		int same = 1;
		for (int l = 0; l < L; l++) {
			skipper_backend_sublayer(b, 0, SKIPPER_ATTN, l, n, st, NULL, P, &err);
			skipper_backend_sublayer(b, 0, SKIPPER_MLP, l, n, st, NULL, P, &err);
			for (int i = 0; i < n; i++)
				same &= memcmp(st + i * E, cap + ((size_t)i * nl + l + 1) * E,
				               sizeof(float) * E) == 0;
		}
		ok(same, "%s: sublayer() layer by layer == captures after each block", label);
		skipper_backend_head_argmax(b, n, st, hid, &err);
		fwd(b, tok + P, n, P, NULL, NULL, 0, NULL, NULL, got);
		int agree = 1;
		for (int i = 0; i < n; i++) {
			int32_t best = 0;
			for (int v = 1; v < V; v++)
				if (got[(size_t)i * V + v] > got[(size_t)i * V + best])
					best = v;
			ids[i] = best;
			agree &= ids[i] == hid[i] && ids[i] == top[i];
		}
		ok(agree, "%s: head_argmax(sublayer states) == forward argmax == top-1", label);
		/* embeddings capture (l = -1) is the token's embedding row */
		float *emb = malloc(sizeof(float) * E);
		skipper_dequant_row(m->tok_embd.type,
		               (const char *)m->tok_embd.data + (size_t)tok[P] * m->tok_embd.row_bytes,
		               emb, E);
		ok(memcmp(emb, cap, sizeof(float) * E) == 0, "%s: capture at l=-1 == embedding", label);
		free(emb);
		free(cap);
		free(st);
	}

	/* 7b. sub-layer boundary captures (cap_sublayers): every boundary equals
	 * the sublayer() steps, 2l + 1 equals the layer capture l, ranges checked */
	{
		int np = 2 * L + 1, n = 4;
		int32_t *cl = malloc(sizeof(int32_t) * np), cr[4], lcl[1] = { L - 1 }, bad;
		float *cap = malloc(sizeof(float) * n * np * E), *st = malloc(sizeof(float) * n * E);
		float *lcap = malloc(sizeof(float) * n * E);
		struct skipper_error err = { 0 };
		for (int i = 0; i < np; i++)
			cl[i] = i - 1;
		for (int i = 0; i < n; i++)
			cr[i] = i;
		struct skipper_forward fw = {
			.n = n, .tokens = tok + P, .n_past = P, .kv_write = 0,
			.n_cap_layers = np, .cap_layers = cl, .cap_sublayers = 1, .n_cap_rows = n,
			.cap_rows = cr, .captures = cap,
		};
		fwd(b, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
		ok(skipper_backend_forward(b, &fw, &err) == 0, "%s: forward with sub-layer captures", label);
		for (int i = 0; i < n; i++)
			memcpy(st + i * E, cap + (size_t)i * np * E, sizeof(float) * E);
		int same = 1;
		for (int l = 0; l < L; l++)
			for (int k = 0; k < 2; k++) {
				skipper_backend_sublayer(b, 0, k ? SKIPPER_MLP : SKIPPER_ATTN, l, n, st, NULL, P, &err);
				for (int i = 0; i < n; i++)
					same &= memcmp(st + i * E, cap + ((size_t)i * np + 2 * l + k + 1) * E,
					               sizeof(float) * E) == 0;
			}
		ok(same, "%s: sub-layer captures == sublayer() step by step", label);
		/* boundary 2(L-1) + 1 is the layer capture L - 1 */
		struct skipper_forward lf = fw;
		lf.n_cap_layers = 1, lf.cap_layers = lcl, lf.cap_sublayers = 0, lf.captures = lcap;
		ok(skipper_backend_forward(b, &lf, &err) == 0, "%s: forward with a layer capture", label);
		same = 1;
		for (int i = 0; i < n; i++)
			same &= memcmp(lcap + (size_t)i * E, cap + ((size_t)i * np + 2 * L) * E,
			               sizeof(float) * E) == 0;
		ok(same, "%s: sub-layer boundary 2l+1 == layer capture l", label);
		/* a skipped sub-layer leaves its boundary equal to the previous one */
		uint8_t skip0[16] = { 0 };
		skip0[0] = 1;
		fw.skip_attn = skip0;
		ok(skipper_backend_forward(b, &fw, &err) == 0 &&
		   memcmp(cap, cap + E, sizeof(float) * E) == 0,
		   "%s: skipped attention 0: boundary 0 == embeddings", label);
		fw.skip_attn = NULL;
		fw.n_cap_layers = 1, fw.cap_layers = &bad;
		bad = 2 * L;
		ok(skipper_backend_forward(b, &fw, &err) == SKIPPER_ERR_ARG, "%s: sub-layer boundary 2L refused",
		   label);
		bad = -2;
		ok(skipper_backend_forward(b, &fw, &err) == SKIPPER_ERR_ARG, "%s: sub-layer boundary -2 refused",
		   label);
		bad = 2 * L - 1;
		ok(skipper_backend_forward(b, &fw, &err) == 0, "%s: sub-layer boundary 2L-1 accepted", label);
		fw.cap_sublayers = 0;
		ok(skipper_backend_forward(b, &fw, &err) == SKIPPER_ERR_ARG, "%s: layer %d refused without "
		   "cap_sublayers", label, 2 * L - 1);
		free(cl);
		free(cap);
		free(st);
		free(lcap);
	}

	/* 8. longer than one chunk of rows */
	if (o->type == SKIPPER_Q4_1 || o->type == SKIPPER_F16) {
		int n = 75;
		seq(a, tok, n, 0, NULL, NULL, ref, V);
		fwd(c, tok, n, 0, NULL, NULL, 1, NULL, NULL, got);
		ok(memcmp(ref, got, sizeof(float) * V * n) == 0,
		   "%s: 75-row batch (chunked) == one at a time", label);
		fwd(c, tok, n, 0, NULL, NULL, 0, NULL, NULL, got);
		ok(memcmp(ref, got, sizeof(float) * V * n) == 0, "%s: 75-row read-only batch too", label);
	}

	/* 9. top-k from forward: ordered, consistent with the logits */
	{
		int32_t ids[2 * 10], rows[2] = { 3, 0 };
		float pr[2 * 10];
		struct skipper_error err = { 0 };
		struct skipper_forward fw = {
			.n = NB, .tokens = tok + P, .n_past = P, .n_out = 2, .out_rows = rows,
			.top_k = 10, .top_ids = ids, .top_probs = pr, .logits = got,
		};
		fwd(b, tok, P, 0, NULL, NULL, 1, NULL, NULL, NULL);
		int rc = skipper_backend_forward(b, &fw, &err);
		int good = rc == 0;
		for (int o2 = 0; o2 < 2 && good; o2++)
			good &= topk_consistent(got + (size_t)o2 * V, V, ids + o2 * 10, pr + o2 * 10, 10, 1e-5);
		ok(good, "%s: top-k descending, probabilities = softmax, nothing better left out", label);
		/* ids alone (greedy verification): the same ids, top-1 and top-10 */
		int32_t ids2[2 * 10], top1[2];
		float *got2 = malloc(sizeof(float) * V * 2);
		fw.top_probs = NULL;
		fw.top_ids = ids2;
		fw.logits = got2;
		rc = skipper_backend_forward(b, &fw, &err); /* kv_write 0: the cache is as it was */
		fw.top_k = 1;
		fw.top_ids = top1;
		rc = rc ? rc : skipper_backend_forward(b, &fw, &err);
		ok(rc == 0 && memcmp(ids, ids2, sizeof ids) == 0 && top1[0] == ids[0] && top1[1] == ids[10] &&
		   memcmp(got, got2, sizeof(float) * V * 2) == 0,
		   "%s: top-k without probabilities: the same ids and logits", label);
		free(got2);
	}

	/* 10. errors */
	{
		struct skipper_error err = { 0 };
		int32_t badtok = V;
		struct skipper_forward fw = { .n = 1, .tokens = &badtok, .n_past = 0, .kv_write = 1 };
		ok(skipper_backend_forward(b, &fw, &err) == SKIPPER_ERR_ARG && err.msg[0],
		   "%s: token out of range refused (%s)", label, err.msg);
		fw.tokens = tok;
		fw.n_past = NCTX;
		ok(skipper_backend_forward(b, &fw, &err) == SKIPPER_ERR_RANGE, "%s: context overflow refused",
		   label);
	}

	a->ops->destroy(a);
	b->ops->destroy(b);
	c->ops->destroy(c);
	free(ref);
	free(got);
	tm_free(tm);
}

/* Every instruction set's top-k: the order (ties by lower id) and the
 * softmax probabilities, which go through the table's vector exp. */
static void test_topk_ties(void)
{
	static const char *const isa[] = { "generic", "avx2", "avx512" };
	for (size_t t = 0; t < sizeof isa / sizeof *isa; t++) {
		const struct cpu_kernels *K = cpu_kernels_for(isa[t]);
		if (!K) {
			tap_skip(4, "top-k: this CPU lacks the instruction set");
			continue;
		}
		/* 40 logits so the vector paths see full vectors and a tail */
		float l[40] = { 1, 5, 3, 5, 2, 5, 0, 3, -1, 4, 5, 3 };
		double z = 0;
		for (int i = 12; i < 40; i++)
			l[i] = -2.0f - 0.25f * (float)i;
		for (int i = 0; i < 40; i++)
			z += exp((double)l[i] - 5.0);
		int32_t ids[6];
		float p[6];
		cpu_topk(K, l, 40, 6, ids, p);
		int32_t want[6] = { 1, 3, 5, 10, 9, 2 };
		ok(memcmp(ids, want, sizeof want) == 0, "top-k %s: ties broken by lower id (%d %d %d %d %d %d)", isa[t],
		   ids[0], ids[1], ids[2], ids[3], ids[4], ids[5]);
		ok(p[0] == p[3] && p[0] > p[4] && p[4] > p[5], "top-k %s: equal logits give equal probabilities", isa[t]);
		ok(fabs(p[0] - 1.0 / z) < 1e-6 / z && fabs(p[4] - exp(-1.0) / z) < 1e-6 / z,
		   "top-k %s: probabilities are the softmax (%.9g, want %.9g)", isa[t], p[0], 1.0 / z);
		/* without probabilities: the same ids, the logits left as they were */
		float l2[40] = { 1, 5, 3, 5, 2, 5, 0, 3, -1, 4, 5, 3 }, keep[40];
		int32_t ids2[6], one;
		for (int i = 12; i < 40; i++)
			l2[i] = -2.0f - 0.25f * (float)i;
		memcpy(keep, l2, sizeof keep);
		cpu_topk(K, l2, 40, 6, ids2, NULL);
		cpu_topk(K, l2, 40, 1, &one, NULL);
		ok(memcmp(ids2, want, sizeof want) == 0 && one == 1 && memcmp(l2, keep, sizeof keep) == 0,
		   "top-k %s: ids alone, logits untouched (top-1 %d)", isa[t], one);
	}
}

/* cpu_argmax (two vector passes) against the scan it replaces, which keeps
 * l[best] unless a later logit is greater: ties, NaNs, -inf, every length
 * around the 8- and 64-wide blocks. */
static void test_argmax(void)
{
	float l[300];
	uint32_t s = 12345;
	int bad = 0, tries = 0;
	for (int it = 0; it < 20000; it++) {
		int n = 1 + it % 300;
		for (int i = 0; i < n; i++) {
			s = s * 1103515245u + 12345u;
			l[i] = (float)((int)(s >> 16) % 7 - 3);
		}
		if (it % 5 == 0)
			l[(s >> 8) % (uint32_t)n] = NAN;
		if (it % 11 == 0)
			l[0] = NAN;
		if (it % 13 == 0)
			for (int i = 0; i < n; i++)
				l[i] = -INFINITY;
		int32_t best = 0;
		for (int i = 1; i < n; i++)
			if (l[i] > l[best])
				best = i;
		bad += cpu_argmax(l, n) != best;
		tries++;
	}
	ok(bad == 0, "cpu_argmax == the scan on %d arrays with ties, NaNs and -inf (%d differ)", tries, bad);
}

/* The flags of the mapping that holds p, from /proc/self/smaps ("" when
 * not found): "hg" is MADV_HUGEPAGE. */
static void vma_flags(const void *p, char *flags, size_t n)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0;
	*flags = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(flags, n, "%.255s", line + 8);
			break;
		}
	}
	if (f)
		fclose(f);
}

/* A release hook as the loader sets one: counts the weights a backend
 * hands back, each of which must be one of the model's own. */
static int n_released, released_foreign;

static void count_release(const struct skipper_model_view *m, const void *data, uint64_t bytes)
{
	int mine = data == m->output.data && bytes == m->output.row_bytes * (uint64_t)m->output.ne1;
	for (int l = 0; l < m->hp.n_layer && !mine; l++) {
		const struct skipper_layer *L = &m->layers[l];
		const struct skipper_weight *w[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down };
		for (size_t i = 0; i < sizeof w / sizeof *w; i++)
			mine |= data == w[i]->data && bytes == w[i]->row_bytes * (uint64_t)w[i]->ne1;
	}
	n_released++;
	released_foreign += !mine;
}

/* The weight copies lie in one block that starts on a 2 MiB boundary and
 * asks for transparent huge pages, the copies of under 2 MiB included;
 * SKIPPER_CPU_HUGEPAGES=0 leaves them on small pages; the logits are the
 * same either way. Each copied weight's pages go back to the loader. */
static void test_huge_pages(void)
{
	/* gate: 2304 x 1024 Q8_0, 2.5 MB; wq: 1024 x 1024, 1.1 MB */
	struct tm_opts o = { .type = SKIPPER_Q8_0, .n_layer = 1, .seed = 5, .rope_style = SKIPPER_ROPE_PAIRS,
	                     .n_embd = 1024, .n_ff = 2304, .n_head = 16, .n_head_kv = 4, .head_dim = 64 };
	struct tm_model *tm = tm_build(&o);
	int V = tm->m.hp.n_vocab;
	struct skipper_backend *be[2] = { NULL, NULL };
	float *lg[2] = { malloc(sizeof(float) * V), malloc(sizeof(float) * V) };
	char flags[2][260], wq_flags[260];
	int32_t tok = 7;
	int thp = access("/sys/kernel/mm/transparent_hugepage", F_OK) == 0, released = 0;

	tm->m.release = count_release;
	for (int i = 0; i < 2; i++) {
		if (i)
			setenv("SKIPPER_CPU_HUGEPAGES", "0", 1);
		be[i] = mk(&tm->m, 1);
		if (!i)
			released = n_released;
		vma_flags(((struct cpu_backend *)be[i])->lw[0].gate.data, flags[i], sizeof flags[i]);
		if (!i)
			vma_flags(((struct cpu_backend *)be[i])->lw[0].wq.data, wq_flags, sizeof wq_flags);
		fwd(be[i], &tok, 1, 0, NULL, NULL, 1, NULL, NULL, lg[i]);
	}
	unsetenv("SKIPPER_CPU_HUGEPAGES");
	ok(released == 8 && !released_foreign,
	   "huge pages: every weight copied, its pages handed back to the loader (%d of 8, %d not a weight)", released,
	   released_foreign);
	const struct cpu_backend *cb = (const struct cpu_backend *)be[0];
	if (!cb->weights) {
		tap_skip(5, "no weight copies were made");
	} else {
		const char *w0 = cb->weights, *wq = cb->lw[0].wq.data, *gate = cb->lw[0].gate.data;
		ok(((uintptr_t)w0 & (((uintptr_t)2 << 20) - 1)) == 0, "huge pages: the weight copies start on a 2 MiB boundary");
		ok(wq == w0 && gate > wq && !cb->lw[0].gate.own && cb->head.data > gate,
		   "huge pages: the copies in one block, in the order a step reads them");
		if (thp) {
			ok(strstr(flags[0], " hg") != NULL, "huge pages: asked for (VmFlags:%s)", flags[0]);
			ok(strstr(wq_flags, " hg") != NULL, "huge pages: for a copy of 1.1 MB too (VmFlags:%s)", wq_flags);
			ok(strstr(flags[1], " hg") == NULL, "huge pages: not with SKIPPER_CPU_HUGEPAGES=0");
		} else {
			tap_skip(3, "no transparent huge pages in this kernel");
		}
	}
	ok(memcmp(lg[0], lg[1], sizeof(float) * V) == 0, "huge pages: the same logits without them");
	for (int i = 0; i < 2; i++) {
		be[i]->ops->destroy(be[i]);
		free(lg[i]);
	}
	tm_free(tm);
}

/* SKIPPER_CPU_PREFETCH=0 turns the packed kernels' prefetches off; they
 * are hints, so a pass of 1, 3, 4 or 8 rows (prefetched all at once per
 * block, or a slice before each sub-block from 4 rows on) gives the same
 * logits without them. */
static void test_prefetch(void)
{
	static const struct { const char *name; int type; } types[] = {
		{ "q4_k", SKIPPER_Q4_K }, { "q6_k", SKIPPER_Q6_K }, { "q8_0", SKIPPER_Q8_0 } };
	static const int sizes[] = { 1, 3, 4, 8 };
	int32_t tok[8] = { 3, 9, 27, 81, 15, 45, 7, 21 };

	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
		struct tm_opts o = { .type = types[t].type, .arch = SKIPPER_ARCH_QWEN2, .n_layer = 2, .seed = 41 + (int)t,
		                     .rope_style = SKIPPER_ROPE_HALVES, .n_embd = 256, .n_ff = 512, .head_dim = 64 };
		struct tm_model *tm = tm_build(&o);
		int V = tm->m.hp.n_vocab, same = 1, flag[2];
		float *lg[2] = { malloc(sizeof(float) * V * 8), malloc(sizeof(float) * V * 8) };
		for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
			for (int i = 0; i < 2; i++) {
				if (i)
					setenv("SKIPPER_CPU_PREFETCH", "0", 1);
				struct skipper_backend *be = mk(&tm->m, 2);
				flag[i] = cpu_pk_prefetch;
				fwd(be, tok, sizes[k], 0, NULL, NULL, 1, NULL, NULL, lg[i]);
				be->ops->destroy(be);
				unsetenv("SKIPPER_CPU_PREFETCH");
			}
			same &= memcmp(lg[0], lg[1], sizeof(float) * V * (size_t)sizes[k]) == 0;
		}
		ok(flag[0] == 1 && flag[1] == 0, "prefetch %s: on by default, off with SKIPPER_CPU_PREFETCH=0", types[t].name);
		ok(same, "prefetch %s: passes of 1, 3, 4 and 8 rows give the same logits without it", types[t].name);
		free(lg[0]);
		free(lg[1]);
		tm_free(tm);
	}
}

/* NaN logits (a corrupt file's overflow) fail the pass instead of
 * reading as token 0. */
static void test_nonfinite(void)
{
	struct tm_opts o = { .type = SKIPPER_F32, .n_layer = 1, .seed = 3, .rope_style = SKIPPER_ROPE_PAIRS };
	struct tm_model *tm = tm_build(&o);
	struct skipper_backend *be = mk(&tm->m, 1);
	struct skipper_error e = { 0 };
	int32_t tok[2] = { 5, 6 }, top = -1, row = 0;
	struct skipper_forward fw = { .n = 1, .tokens = tok, .kv_write = 1, .n_out = 1, .out_rows = &row,
	                              .top_k = 1, .top_ids = &top };
	int rc0 = skipper_backend_forward(be, &fw, &e);
	((struct cpu_backend *)be)->norm_out[0] = NAN;
	fw.tokens = tok + 1;
	fw.n_past = 1;
	int rc1 = skipper_backend_forward(be, &fw, &e);
	ok(rc0 == 0 && rc1 == SKIPPER_ERR_BACKEND && strstr(e.msg, "logits are not finite"),
	   "non-finite logits fail the pass: %s", e.msg);
	float *state = calloc((size_t)tm->m.hp.n_embd, sizeof *state);
	int32_t id = 7;
	state[1] = 1.0f;
	struct skipper_error e2 = { 0 };
	int rc2 = skipper_backend_head_argmax(be, 1, state, &id, &e2);
	ok(rc2 == SKIPPER_ERR_BACKEND && strstr(e2.msg, "logits are not finite") && id == 7, "and the head service: %s",
	   e2.msg);
	free(state);
	be->ops->destroy(be);
	tm_free(tm);
}

int main(void)
{
	static const struct {
		const char *name;
		int type, arch, wide; /* wide: 256-wide model, as the K-quants need */
	} types[] = {
		{ "f32", SKIPPER_F32 },   { "f16", SKIPPER_F16 },   { "bf16", SKIPPER_BF16 },
		{ "q8_0", SKIPPER_Q8_0 }, { "q4_0", SKIPPER_Q4_0 }, { "q4_1", SKIPPER_Q4_1 },
		{ "q5_0 qwen2", SKIPPER_Q5_0, SKIPPER_ARCH_QWEN2 }, { "q5_1 qwen3", SKIPPER_Q5_1, SKIPPER_ARCH_QWEN3 },
		{ "q4_k qwen2", SKIPPER_Q4_K, SKIPPER_ARCH_QWEN2, 1 }, { "q5_k", SKIPPER_Q5_K, SKIPPER_ARCH_LLAMA, 1 },
		{ "q6_k qwen3", SKIPPER_Q6_K, SKIPPER_ARCH_QWEN3, 1 },
	};
	const char *isa = getenv("SKIPPER_CPU_ISA");
	diag("kernels: %s, K/V cache %s", isa && *isa ? isa : "native", skipper_kv_type_name(test_kv_type()));
	if (test_kv_type() == SKIPPER_KV_F16) { /* what does not depend on the cache, once */
		test_topk_ties();
		test_argmax();
		test_nonfinite();
		test_huge_pages();
		test_prefetch();
	}
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		struct tm_opts o = { .type = types[i].type, .arch = types[i].arch, .tied = (int)(i % 2), .n_layer = 3,
		                     .seed = 11 + i, .rope_style = SKIPPER_ROPE_PAIRS };
		if (i == 2 || i == 4) {
			o.rope_style = SKIPPER_ROPE_HALVES;
			o.rope_scaling = i == 2 ? SKIPPER_ROPE_SCALING_LINEAR : SKIPPER_ROPE_SCALING_LLAMA3;
		}
		if (o.arch != SKIPPER_ARCH_LLAMA)
			o.rope_style = SKIPPER_ROPE_HALVES;
		if (types[i].wide) {
			o.n_embd = 256;
			o.n_ff = 512;
			o.head_dim = 64;
		}
		if (test_kv_type() == SKIPPER_KV_Q8_0 && !o.head_dim)
			o.head_dim = 32; /* q8_0 rows are whole blocks of 32 */
		test_model(types[i].name, &o);
	}
	return tap_done();
}
