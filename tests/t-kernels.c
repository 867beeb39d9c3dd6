/* The CPU matmul kernels of every instruction set this machine runs
 * (generic, avx2, avxvnni, avx512), for every weight type, against the same
 * arithmetic done in double: y[r][c] = sum over blocks of (weight block
 * dequantised) . (activation block as the kernel's quantiser wrote it).
 * A wrong bit layout or scale is off by O(1); float accumulation only by
 * ~1e-6 of the magnitude. Then bitwise batch invariance: any number of
 * rows in a call, any split of the columns, gives each output the same
 * bits as computing it alone. The attention kernels likewise: scores,
 * exp and value sums against double, and the same bits whatever the
 * number of queries and however the keys are split into calls. Kinds a
 * table runs from its own packed layout are checked in it too, also with
 * every value at its largest magnitude (the packed AVX2 kernels sum in
 * int16 as far as that cannot saturate). */
#include "build-config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "model/quant.h"
#include "tap.h"

#define K 768 /* a multiple of 256 and 32 */
#define NC 37
#define NR 13

static uint64_t rng = 88172645463325252ull;

static float frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 11) * 0x1.0p-53) * 2.0f - 1.0f;
}

/* Activation element i of row r as the quantiser stored it, and the
 * per-block constant term (Q4_1/Q5_1's min times the block sum as the
 * kernel uses it: s, rounded to fp16). */
static double act(const struct cpu_kernels *kt, int a, const void *xq, int i)
{
	(void)kt;
	if (a == CPU_ACT_Q8) {
		const struct cpu_q8 *b = (const struct cpu_q8 *)xq + i / 32;
		return (double)b->d * b->qs[i % 32];
	}
	const struct cpu_q8k *b = (const struct cpu_q8k *)xq + i / 256;
	return (double)b->d * b->qs[i % 256];
}

static int type_has_min(int t) { return t == SKIPPER_Q4_1 || t == SKIPPER_Q5_1; }

static void test_type(const char *isa, const struct cpu_kernels *kt, int type)
{
	int kind = cpu_wkind(type), a = cpu_wact(kind);
	size_t wrb = skipper_dtype_row_bytes(type, K);
	uint8_t *w = malloc(wrb * NC);
	float *wf = malloc(sizeof(float) * K * NC), *x = malloc(sizeof(float) * K * NR);
	size_t xs = a == CPU_ACT_Q8 ? (K / 32) * sizeof(struct cpu_q8) : (K / 256) * sizeof(struct cpu_q8k);
	char *xq = aligned_alloc(64, (xs * NR + 63) / 64 * 64); /* C11: a multiple of the alignment */
	float *y = malloc(sizeof(float) * NC * NR), *y1 = malloc(sizeof(float) * NC * NR);
	const char *tn = skipper_dtype_name(type);

	for (int c = 0; c < NC; c++) {
		float row[K], scale = c % 5 == 0 ? 1e-3f : c % 5 == 1 ? 40.0f : 1.0f;
		for (int i = 0; i < K; i++)
			row[i] = frand() * scale + (c % 3 == 0 ? 0.3f * scale : 0.0f);
		skipper_quantize_row(type, row, w + wrb * c, K);
		skipper_dequant_row(type, w + wrb * c, wf + (size_t)K * c, K);
	}
	for (int r = 0; r < NR; r++) {
		float *xr = x + (size_t)K * r;
		for (int i = 0; i < K; i++)
			xr[i] = frand() * (r % 4 == 0 ? 8.0f : 1.0f);
		if (r == 3)
			memset(xr, 0, sizeof(float) * 256); /* an all-zero block */
		if (a == CPU_ACT_Q8)
			kt->quantize_q8(xr, (struct cpu_q8 *)(xq + xs * r), K);
		else
			kt->quantize_q8k(xr, (struct cpu_q8k *)(xq + xs * r), K);
	}
	kt->matmul[kind](K, w, wrb, NC, xq, xs, NR, y, NC);

	/* against the same arithmetic in double */
	double worst = 0;
	for (int r = 0; r < NR; r++)
		for (int c = 0; c < NC; c++) {
			double ref = 0, mag = 0;
			for (int i = 0; i < K; i++) {
				double wi = wf[(size_t)K * c + i], xi = act(kt, a, xq + xs * r, i);
				if (type_has_min(type)) {
					/* the kernel takes the min term through s = fp16(d * sum) */
					const uint8_t *blk = w + wrb * c + (i / 32) * skipper_dtype_block_bytes(type);
					uint16_t d16, m16;
					memcpy(&d16, blk, 2);
					memcpy(&m16, blk + 2, 2);
					double m = skipper_fp16_to_f32(m16);
					wi -= m;
					if (i % 32 == 0)
						ref += m * ((const struct cpu_q8 *)(xq + xs * r))[i / 32].s;
				}
				ref += wi * xi;
				mag += fabs(wi * xi);
			}
			double err = fabs(y[(size_t)r * NC + c] - ref) / (mag + 1e-30);
			if (err > worst)
				worst = err;
		}
	ok(worst < 2e-5, "%s %s: %d x %d outputs equal the double-precision sum (worst relative error %.2g)", isa, tn,
	   NR, NC, worst);

	/* batch invariance: every row count and column split */
	int same = 1;
	for (int nr = 1; nr <= NR && same; nr++)
		for (int r0 = 0; r0 + nr <= NR && same; r0 += nr) {
			kt->matmul[kind](K, w, wrb, NC, xq + xs * r0, xs, nr, y1, NC);
			same = memcmp(y1, y + (size_t)r0 * NC, sizeof(float) * NC * nr) == 0;
		}
	for (int c0 = 0; c0 < NC && same; c0 += 5) {
		int nc = NC - c0 < 5 ? NC - c0 : 5;
		kt->matmul[kind](K, w + wrb * c0, wrb, nc, xq, xs, NR, y1, NC);
		for (int r = 0; r < NR; r++)
			same &= memcmp(y1 + (size_t)r * NC, y + (size_t)r * NC + c0, sizeof(float) * nc) == 0;
	}
	ok(same, "%s %s: bit-identical outputs for 1..%d rows per call and any column split", isa, tn, NR);

	/* the table's own layout for this kind, if it has one: the same sums
	 * (to float rounding) and the same invariance, split at group bounds */
	int np = NC / CPU_PACK_ROWS * CPU_PACK_ROWS;
	size_t psz = kt->pack_size ? kt->pack_size(kind, K, np) : 0;
	if (psz) {
		char *pk = aligned_alloc(64, (psz + 63) / 64 * 64);
		size_t prb = psz / (size_t)np;
		kt->pack(kind, K, w, wrb, np, pk);
		kt->matmul_packed[kind](K, pk, prb, np, xq, xs, NR, y1, NC);
		double dev = 0;
		for (int r = 0; r < NR; r++)
			for (int c = 0; c < np; c++) {
				double mag = 0;
				for (int i = 0; i < K; i++)
					mag += fabs(wf[(size_t)K * c + i] * act(kt, a, xq + xs * r, i));
				dev = fmax(dev, fabs(y1[(size_t)r * NC + c] - y[(size_t)r * NC + c]) / (mag + 1e-30));
			}
		ok(dev < 2e-5, "%s %s packed: %d x %d outputs equal the GGUF layout's (worst relative difference %.2g)",
		   isa, tn, NR, np, dev);
		float *y2 = malloc(sizeof(float) * NC * NR);
		same = 1;
		for (int nr = 1; nr <= NR && same; nr++)
			for (int r0 = 0; r0 + nr <= NR && same; r0 += nr) {
				kt->matmul_packed[kind](K, pk, prb, np, xq + xs * r0, xs, nr, y2, NC);
				for (int r = 0; r < nr; r++)
					same &= memcmp(y2 + (size_t)r * NC, y1 + (size_t)(r0 + r) * NC, sizeof(float) * np) == 0;
			}
		kt->matmul_packed[kind](K, pk + prb * CPU_PACK_ROWS, prb, CPU_PACK_ROWS, xq, xs, NR, y2, NC);
		for (int r = 0; r < NR; r++)
			same &= memcmp(y2 + (size_t)r * NC, y1 + (size_t)r * NC + CPU_PACK_ROWS,
			               sizeof(float) * CPU_PACK_ROWS) == 0;
		ok(same, "%s %s packed: bit-identical outputs for 1..%d rows per call and any split into groups", isa, tn,
		   NR);
		/* a layout several tables run: the same arithmetic, so the same
		 * bits, but for the AVX2 table's K-quants, which scale their int16
		 * sums in integers (cpu_kernels_avx2.c) */
		static const char *const wider[] = { "avxvnni", "avx512" };
		int shared = kind != CPU_W_Q4_K && kind != CPU_W_Q6_K;
		for (size_t i = 0; i < 2 && shared && !strcmp(isa, "avx2"); i++) {
			const struct cpu_kernels *wide = cpu_kernels_for(wider[i]);
			if (!wide || wide->pack_size(kind, K, np) != psz)
				continue;
			wide->matmul_packed[kind](K, pk, prb, np, xq, xs, NR, y2, NC);
			same = 1;
			for (int r = 0; r < NR; r++)
				same &= memcmp(y2 + (size_t)r * NC, y1 + (size_t)r * NC, sizeof(float) * np) == 0;
			ok(same, "avx2 %s packed: the same bits as %s's over the same layout", tn, wider[i]);
		}
		free(pk);
		free(y2);
	}

	free(w);
	free(wf);
	free(x);
	free(xq);
	free(y);
	free(y1);
}

/* The packed kernels at the integer bounds their int16 sums are proven
 * for: every weight at its largest magnitude (all bits of the quants set;
 * Q8_0 127 in even rows, -128 in odd ones) against activations all +-127,
 * through every pass size (1..9 rows: the 8-row body, its tail, and the
 * one- and two-row ones). A sum that saturated would be off by thousands
 * in 30000; the plain C kernels, which sum in int32, are the reference. */
static void test_extremes(const char *isa, const struct cpu_kernels *kt)
{
	static const int types[] = { SKIPPER_Q4_K, SKIPPER_Q6_K, SKIPPER_Q8_0, SKIPPER_Q5_0, SKIPPER_Q4_1 };
	enum { ER = 9, EC = 16 };
	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
		int type = types[t], kind = cpu_wkind(type), a = cpu_wact(kind);
		size_t wrb = skipper_dtype_row_bytes(type, K), bb = skipper_dtype_block_bytes(type);
		size_t psz = kt->pack_size ? kt->pack_size(kind, K, EC) : 0;
		if (!psz)
			continue;
		uint8_t *w = malloc(wrb * EC);
		const uint16_t d16 = 0x1400; /* 2^-10 */
		for (int c = 0; c < EC; c++)
			for (size_t o = 0; o < wrb; o += bb) {
				uint8_t *blk = w + wrb * c + o;
				memset(blk, 0xFF, bb);
				if (type == SKIPPER_Q6_K) {
					struct skipper_block_q6_K *q = (struct skipper_block_q6_K *)blk;
					memset(q->scales, 127, sizeof q->scales);
					q->d = d16;
				} else if (type == SKIPPER_Q8_0) {
					struct skipper_block_q8_0 *q = (struct skipper_block_q8_0 *)blk;
					memset(q->qs, c % 2 ? 0x80 : 0x7F, sizeof q->qs);
					q->d = d16;
				} else {
					memcpy(blk, &d16, 2); /* d; Q4_K's dmin and Q4_1's m after it */
					if (type != SKIPPER_Q5_0)
						memcpy(blk + 2, &d16, 2);
				}
			}
		size_t xs = a == CPU_ACT_Q8 ? (K / 32) * sizeof(struct cpu_q8) : (K / 256) * sizeof(struct cpu_q8k);
		char *xq = aligned_alloc(64, (xs * ER + 63) / 64 * 64);
		for (int r = 0; r < ER; r++) {
			float xr[K];
			for (int i = 0; i < K; i++)
				xr[i] = r % 2 ? -1.0f : 1.0f;
			if (a == CPU_ACT_Q8)
				kt->quantize_q8(xr, (struct cpu_q8 *)(xq + xs * r), K);
			else
				kt->quantize_q8k(xr, (struct cpu_q8k *)(xq + xs * r), K);
		}
		float ref[ER * EC], got[ER * EC];
		cpu_kernels_generic.matmul[kind](K, w, wrb, EC, xq, xs, ER, ref, EC);
		char *pk = aligned_alloc(64, (psz + 63) / 64 * 64);
		kt->pack(kind, K, w, wrb, EC, pk);
		double worst = 0;
		for (int nr = 1; nr <= ER; nr++) {
			kt->matmul_packed[kind](K, pk, psz / EC, EC, xq, xs, nr, got, EC);
			for (int i = 0; i < nr * EC; i++)
				worst = fmax(worst, fabs(got[i] - ref[i]) / fabs(ref[i]));
		}
		ok(worst < 1e-5, "%s %s packed: weights and activations at their largest magnitudes, 1..%d rows, "
		   "the plain C kernel's sums (worst relative difference %.2g)", isa, skipper_dtype_name(type), ER, worst);
		free(pk);
		free(xq);
		free(w);
	}
}

/* The K-quant activation blocks: d and the 16-element sums as specified. */
static void test_q8k(const char *isa, const struct cpu_kernels *kt)
{
	float x[512];
	struct cpu_q8k q[2] __attribute__((aligned(64)));
	int good = 1;
	for (int i = 0; i < 512; i++)
		x[i] = frand() * (i < 256 ? 3.0f : 0.01f);
	x[100] = -5.0f; /* the element of largest magnitude, negative */
	x[290] = 0.02f, x[300] = -0.02f; /* two of them: the first one counts */
	kt->quantize_q8k(x, q, 512);
	struct cpu_q8k ref[2] __attribute__((aligned(64)));
	cpu_kernels_generic.quantize_q8k(x, ref, 512);
	for (int b = 0; b < 2; b++)
		good &= !memcmp(q[b].qs, ref[b].qs, 256) && !memcmp(q[b].bsums, ref[b].bsums, 32) &&
		        !memcmp(q[b].bsum32, ref[b].bsum32, 16) && q[b].d == ref[b].d;
	good &= q[1].qs[290 - 256] == -127;
	good &= q[0].qs[100] == -127 && fabsf(q[0].d - 5.0f / 127.0f) < 1e-7f;
	for (int b = 0; b < 2; b++)
		for (int j = 0; j < 16; j++) {
			int s = 0;
			for (int i = 0; i < 16; i++)
				s += q[b].qs[16 * j + i];
			good &= s == q[b].bsums[j];
			if (j % 2)
				good &= q[b].bsum32[j / 2] == q[b].bsums[j - 1] + q[b].bsums[j];
		}
	for (int i = 0; i < 512; i++)
		good &= fabsf(q[i / 256].d * q[i / 256].qs[i % 256] - x[i]) <= 0.5001f * fabsf(q[i / 256].d);
	ok(good, "%s: Q8_K activations: -127 at the first largest magnitude, values within half a step, sums per 16 and 32, "
	   "the generic kernel's bytes", isa);
}

static uint16_t f16(float x) { return cpu_f32_to_f16(x); }

/* Attention over NKEY keys for NQ queries of head size d in cache layout
 * ct (f16: 8 is a masked tail on AVX-512, 64 and 128 its register paths,
 * 72 both; q8_0: 32 and 96 through memory after the register path). */
#define NQ 13
#define NKEY 150
static void test_attn(const char *isa, const struct cpu_kernels *kt, int ct, int d)
{
	size_t ks = cpu_kv_row_bytes(ct, d) + 16; /* keys are rows of a wider cache */
	float *q = malloc(sizeof(float) * NQ * d), *s = malloc(sizeof(float) * NQ * NKEY);
	float *s1 = malloc(sizeof(float) * NQ * NKEY), *o = calloc((size_t)NQ * d, sizeof(float));
	float *o1 = calloc((size_t)NQ * d, sizeof(float)), *p = malloc(sizeof(float) * NQ * NKEY);
	uint8_t *k = malloc(NKEY * ks), *v = malloc(NKEY * ks);
	const char *cn = ct == CPU_KV_F16 ? "f16" : "q8_0";
	double err_s = 0, err_o = 0, err_e = 0;
	int same = 1;

	for (int i = 0; i < NQ * d; i++)
		q[i] = cpu_f16_to_f32(f16(frand()));
	for (size_t i = 0; i < NKEY * ks; i += 2) {
		uint16_t h[2] = { f16(frand()), f16(frand()) };
		memcpy(k + i, &h[0], 2);
		memcpy(v + i, &h[1], 2);
	}
	if (ct == CPU_KV_Q8_0) /* random values, scales of f16 values */
		for (int j = 0; j < NKEY; j++)
			for (int b = 0; b < d / 32; b++) {
				uint16_t h[2] = { f16(0.01f * frand()), f16(0.01f * frand()) };
				memcpy(k + j * ks + d + 2 * b, &h[0], 2);
				memcpy(v + j * ks + d + 2 * b, &h[1], 2);
			}
	kt->attn_scores[ct](q, NQ, k, NKEY, ks, d, 0.125f, s, NKEY);
	for (int i = 0; i < NQ; i++)
		for (int j = 0; j < NKEY; j++) {
			double ref = 0;
			for (int e = 0; e < d; e++)
				ref += (double)q[i * d + e] * cpu_kv_elem(k + j * ks, ct, d, e);
			err_s = fmax(err_s, fabs(s[i * NKEY + j] - ref * 0.125));
		}
	/* the first m queries alone (1, one group of 6 and 11: the kernels
	 * take queries in groups of up to 3 or 6) */
	for (int m = 1; m < NQ; m += 5) {
		kt->attn_scores[ct](q, m, k, NKEY, ks, d, 0.125f, s1, NKEY);
		same &= !memcmp(s, s1, sizeof(float) * (size_t)m * NKEY);
	}
	for (int i = 0; i < NQ; i++)
		for (int j = 0; j < NKEY; j++)
			kt->attn_scores[ct](q + i * d, 1, k + j * ks, 1, ks, d, 0.125f, s1 + i * NKEY + j, NKEY);
	same &= !memcmp(s, s1, sizeof(float) * NQ * NKEY);
	for (int i = 0; i < NQ * NKEY; i++)
		p[i] = s[i] - 1.0f;
	double sum = kt->exp_sum(p, NKEY, 1.5f), ref_sum = 0;
	for (int j = 0; j < NKEY; j++) {
		double e = exp((double)s[j] - 1.0 - 1.5);
		ref_sum += e;
		err_e = fmax(err_e, fabs(p[j] - e) / e);
	}
	err_e = fmax(err_e, fabs(sum - ref_sum) / ref_sum);
	for (int i = 0; i < NQ * NKEY; i++)
		p[i] = frand();
	kt->attn_values[ct](o, NQ, p, NKEY, v, NKEY, ks, d);
	for (int i = 0; i < NQ; i++) { /* one query at a time, keys split 1 + 37 + rest */
		int cut[] = { 0, 1, 38, NKEY };
		for (int c = 0; c < 3; c++)
			kt->attn_values[ct](o1 + i * d, 1, p + i * NKEY + cut[c], NKEY, v + cut[c] * ks, cut[c + 1] - cut[c],
			                    ks, d);
		for (int e = 0; e < d; e++) {
			double ref = 0;
			for (int j = 0; j < NKEY; j++)
				ref += (double)p[i * NKEY + j] * cpu_kv_elem(v + j * ks, ct, d, e);
			err_o = fmax(err_o, fabs(o[i * d + e] - ref));
		}
	}
	same &= !memcmp(o, o1, sizeof(float) * NQ * d);
	ok(err_s < 1e-4 && err_o < 1e-3 && err_e < 1e-6,
	   "%s: attention, %s cache, head size %d: scores, exp and value sums as in double (%.1e, %.1e, %.1e)", isa, cn,
	   d, err_s, err_e, err_o);
	ok(same, "%s: attention, %s cache, head size %d: the same bits for any number of queries and split of the keys",
	   isa, cn, d);
	free(q), free(s), free(s1), free(o), free(o1), free(p), free(k), free(v);
}

/* silu(g) * u against double, over a range that reaches both ends of
 * exp (|g| up to 120), lengths with and without a vector tail. */
static void test_silu(const char *isa, const struct cpu_kernels *kt)
{
	enum { N = 203 };
	float g[N], u[N], a[N];
	double err = 0;
	int finite = 1;
	for (int i = 0; i < N; i++) {
		g[i] = i < 8 ? (float[]){ 0, -0.0f, 88.5f, -88.5f, 100, -100, 120, -120 }[i] : 30 * frand();
		u[i] = 2 * frand();
	}
	for (int n = 1; n <= N; n += 101) {
		kt->silu_mul(g, u, a, n);
		for (int i = 0; i < n; i++) {
			double ref = (double)g[i] / (1 + exp(-(double)g[i])) * u[i];
			finite &= isfinite(a[i]);
			err = fmax(err, fabs(a[i] - ref) / (fabs(ref) + 1e-30 + 1e-6 * fabs(u[i])));
		}
	}
	ok(finite && err < 1e-5, "%s: silu(g) * u as in double, |g| up to 120 (relative error %.1e)", isa, err);
}

/* Attention's probabilities are normalised and rounded to f16 in one
 * call: each element must be the f16 nearest to the float product, the
 * product rounded first (what the scalar loop it replaced gave), on
 * lengths with and without a vector tail; a scale of 1 rounds alone. */
static void test_round_f16(const char *isa, const struct cpu_kernels *kt)
{
	enum { N = 77 };
	float x[N], y[N];
	int same = 1;
	for (int i = 0; i < N; i++)
		x[i] = i < 6 ? (float[]){ 0, -0.0f, 65504, 70000, 6e-8f, 1e-9f }[i] : 4 * frand();
	for (int n = 1; n <= N; n += 19)
		for (int k = 0; k < 3; k++) {
			float sc = (float[]){ 1.0f, 0.3f, 1.0f / 3 }[k];
			memcpy(y, x, sizeof x);
			kt->round_f16(y, n, sc);
			for (int i = 0; i < N; i++) {
				float want = i < n ? cpu_f16_to_f32(cpu_f32_to_f16(x[i] * sc)) : x[i];
				same &= !memcmp(&want, &y[i], sizeof want);
			}
		}
	ok(same, "%s: round_f16 gives the f16 nearest to each float product x * s, nothing past n", isa);
}

int main(void)
{
	static const char *const isas[] = { "generic", "avx2", "avxvnni", "avx512" };
	static const int types[] = { SKIPPER_Q4_0, SKIPPER_Q4_1, SKIPPER_Q5_0, SKIPPER_Q5_1, SKIPPER_Q8_0,
		                     SKIPPER_Q4_K, SKIPPER_Q5_K, SKIPPER_Q6_K };
	for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
		const struct cpu_kernels *kt = cpu_kernels_for(isas[i]);
		if (!kt) {
			tap_skip(3 + 2 * (int)(sizeof types / sizeof types[0]) + 16, "this CPU has no such instruction set");
			diag("%s: not supported by this CPU", isas[i]);
			continue;
		}
		test_q8k(isas[i], kt);
		test_silu(isas[i], kt);
		test_round_f16(isas[i], kt);
		for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
			test_type(isas[i], kt, types[t]);
		test_extremes(isas[i], kt);
		for (int h = 0; h < 4; h++) {
			test_attn(isas[i], kt, CPU_KV_F16, (int[]){ 8, 64, 72, 128 }[h]);
			test_attn(isas[i], kt, CPU_KV_Q8_0, (int[]){ 32, 64, 96, 128 }[h]);
		}
	}
	return tap_done();
}
