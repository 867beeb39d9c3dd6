/* Plain C kernels: the reference the SIMD tables are tested against in
 * spirit (same formulas), and the path for CPUs without AVX2 or when
 * SKIPPER_CPU_ISA=generic. Every dot product runs strictly left to right. */
#include "build-config.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "model/quant.h"

/* Keep a*b+c as two roundings everywhere, so that the compiler cannot fuse
 * it in one specialisation of a loop and not in another. */
#pragma GCC optimize("fp-contract=off")

static void quantize_q8(const float *x, struct cpu_q8 *q, int64_t k)
{
	for (int64_t b = 0; b < k / 32; b++, x += 32, q++) {
		float amax = 0.0f;
		for (int i = 0; i < 32; i++)
			amax = fmaxf(amax, fabsf(x[i]));
		float d = cpu_f16_to_f32(cpu_f32_to_f16(amax / 127.0f));
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		int32_t sum = 0;
		for (int i = 0; i < 32; i++) {
			int v = (int)nearbyintf(x[i] * id);
			q->qs[i] = (int8_t)v;
			sum += v;
		}
		q->d = d;
		q->s = cpu_f16_to_f32(cpu_f32_to_f16(d * (float)sum));
		q->sum = sum;
	}
}

static void quantize_q8k(const float *x, struct cpu_q8k *q, int64_t k)
{
	for (int64_t b = 0; b < k / 256; b++, x += 256, q++) {
		float amax = 0.0f, max = 0.0f;
		for (int i = 0; i < 256; i++)
			if (fabsf(x[i]) > amax) {
				amax = fabsf(x[i]);
				max = x[i];
			}
		float iscale = amax > 0.0f ? -127.0f / max : 0.0f;
		for (int i = 0; i < 256; i++)
			q->qs[i] = (int8_t)nearbyintf(iscale * x[i]);
		for (int j = 0; j < 16; j++) {
			int s = 0;
			for (int i = 0; i < 16; i++)
				s += q->qs[16 * j + i];
			q->bsums[j] = (int16_t)s;
		}
		for (int j = 0; j < 8; j++)
			q->bsum32[j] = (int16_t)(q->bsums[2 * j] + q->bsums[2 * j + 1]);
		q->d = amax > 0.0f ? 1.0f / iscale : 0.0f;
	}
}

/* 5-bit value i (< 32) of a Q5_0/Q5_1 block. */
static int q5_at(const uint8_t *qs, uint32_t qh, int i)
{
	int lo = i < 16 ? qs[i] & 0x0F : qs[i - 16] >> 4;
	return lo | (int)((qh >> i) & 1) << 4;
}

static float dot_q5_0(int64_t nb, const struct skipper_block_q5_0 *w, const struct cpu_q8 *x)
{
	float acc = 0.0f;
	for (int64_t b = 0; b < nb; b++) {
		uint32_t qh;
		int32_t isum = 0;
		memcpy(&qh, w[b].qh, 4);
		for (int i = 0; i < 32; i++)
			isum += q5_at(w[b].qs, qh, i) * x[b].qs[i];
		isum -= 16 * x[b].sum;
		acc += (cpu_f16_to_f32(w[b].d) * x[b].d) * (float)isum;
	}
	return acc;
}

static float dot_q5_1(int64_t nb, const struct skipper_block_q5_1 *w, const struct cpu_q8 *x)
{
	float acc = 0.0f, macc = 0.0f;
	for (int64_t b = 0; b < nb; b++) {
		uint32_t qh;
		int32_t isum = 0;
		memcpy(&qh, w[b].qh, 4);
		for (int i = 0; i < 32; i++)
			isum += q5_at(w[b].qs, qh, i) * x[b].qs[i];
		acc += (cpu_f16_to_f32(w[b].d) * x[b].d) * (float)isum;
		macc += cpu_f16_to_f32(w[b].m) * x[b].s;
	}
	return acc + macc;
}

/* Q4_K / Q5_K: per super-block, the scaled integer sum over its 8
 * sub-blocks and the mins against the activation's 16-element sums. */
static float dot_q45_K(int64_t nb, const uint8_t *w, size_t bb, int five, const struct cpu_q8k *x)
{
	float acc = 0.0f;
	for (int64_t b = 0; b < nb; b++, w += bb) {
		const uint8_t *scales = w + 4, *qh = w + 16, *qs = five ? qh + 32 : qh;
		uint16_t d16, m16;
		int32_t sumi = 0, summ = 0;
		memcpy(&d16, w, 2);
		memcpy(&m16, w + 2, 2);
		for (int j = 0; j < 8; j++) {
			uint8_t sc, m;
			int32_t isum = 0;
			skipper_k_scale_min(j, scales, &sc, &m);
			for (int l = 0; l < 32; l++) {
				int q = j & 1 ? qs[32 * (j / 2) + l] >> 4 : qs[32 * (j / 2) + l] & 0x0F;
				if (five)
					q |= ((qh[l] >> j) & 1) << 4;
				isum += q * x[b].qs[32 * j + l];
			}
			sumi += sc * isum;
			summ += m * (x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
		}
		acc += (cpu_f16_to_f32(d16) * x[b].d) * (float)sumi - (cpu_f16_to_f32(m16) * x[b].d) * (float)summ;
	}
	return acc;
}

static float dot_q4_K(int64_t nb, const struct skipper_block_q4_K *w, const struct cpu_q8k *x)
{
	return dot_q45_K(nb, (const uint8_t *)w, sizeof *w, 0, x);
}

static float dot_q5_K(int64_t nb, const struct skipper_block_q5_K *w, const struct cpu_q8k *x)
{
	return dot_q45_K(nb, (const uint8_t *)w, sizeof *w, 1, x);
}

static float dot_q6_K(int64_t nb, const struct skipper_block_q6_K *w, const struct cpu_q8k *x)
{
	float acc = 0.0f;
	for (int64_t b = 0; b < nb; b++) {
		int32_t sumi = 0;
		for (int j = 0; j < 16; j++) {
			int32_t isum = 0;
			for (int l = 0; l < 16; l++) {
				int e = 16 * j + l, h = e / 128, k = (e % 128) / 32, i = e % 32;
				int lo = w[b].ql[64 * h + i + 32 * (k & 1)] >> (k >= 2 ? 4 : 0) & 0x0F;
				int q = lo | ((w[b].qh[32 * h + i] >> (2 * k)) & 3) << 4;
				isum += q * x[b].qs[e];
			}
			sumi += w[b].scales[j] * (isum - 32 * x[b].bsums[j]);
		}
		acc += (cpu_f16_to_f32(w[b].d) * x[b].d) * (float)sumi;
	}
	return acc;
}

static float dot_q4_0(int64_t nb, const struct skipper_block_q4_0 *w, const struct cpu_q8 *x)
{
	float acc = 0.0f;
	for (int64_t b = 0; b < nb; b++) {
		int32_t isum = 0;
		for (int i = 0; i < 16; i++) {
			isum += (w[b].qs[i] & 0x0F) * x[b].qs[i];
			isum += (w[b].qs[i] >> 4) * x[b].qs[i + 16];
		}
		isum -= 8 * x[b].sum;
		acc += (cpu_f16_to_f32(w[b].d) * x[b].d) * (float)isum;
	}
	return acc;
}

static float dot_q4_1(int64_t nb, const struct skipper_block_q4_1 *w, const struct cpu_q8 *x)
{
	float acc = 0.0f, macc = 0.0f;
	for (int64_t b = 0; b < nb; b++) {
		int32_t isum = 0;
		for (int i = 0; i < 16; i++) {
			isum += (w[b].qs[i] & 0x0F) * x[b].qs[i];
			isum += (w[b].qs[i] >> 4) * x[b].qs[i + 16];
		}
		acc += (cpu_f16_to_f32(w[b].d) * x[b].d) * (float)isum;
		macc += cpu_f16_to_f32(w[b].m) * x[b].s;
	}
	return acc + macc;
}

static float dot_q8_0(int64_t nb, const struct skipper_block_q8_0 *w, const struct cpu_q8 *x)
{
	float acc = 0.0f;
	for (int64_t b = 0; b < nb; b++) {
		int32_t isum = 0;
		for (int i = 0; i < 32; i++)
			isum += w[b].qs[i] * x[b].qs[i];
		acc += (cpu_f16_to_f32(w[b].d) * x[b].d) * (float)isum;
	}
	return acc;
}

static float dot_f32(int64_t k, const float *w, const float *x)
{
	float acc = 0.0f;
	for (int64_t i = 0; i < k; i++)
		acc += w[i] * x[i];
	return acc;
}

static float dot_f16(int64_t k, const uint16_t *w, const float *x)
{
	float acc = 0.0f;
	for (int64_t i = 0; i < k; i++)
		acc += cpu_f16_to_f32(w[i]) * x[i];
	return acc;
}

static float dot_bf16(int64_t k, const uint16_t *w, const float *x)
{
	float acc = 0.0f;
	for (int64_t i = 0; i < k; i++)
		acc += cpu_bf16_to_f32(w[i]) * x[i];
	return acc;
}

#define GENERIC_MATMUL(NAME, WT, XT, DOT, LEN)                                              \
	static void NAME(int64_t k, const void *w, size_t wrb, int nc, const void *x,      \
	                 size_t xs, int nr, float *y, size_t ys)                            \
	{                                                                                   \
		for (int c = 0; c < nc; c++) {                                              \
			const WT *wr = (const WT *)((const char *)w + (size_t)c * wrb);     \
			for (int r = 0; r < nr; r++)                                        \
				y[(size_t)r * ys + c] =                                     \
					DOT(LEN, wr, (const XT *)((const char *)x + (size_t)r * xs)); \
		}                                                                           \
	}

GENERIC_MATMUL(mm_q4_0, struct skipper_block_q4_0, struct cpu_q8, dot_q4_0, k / 32)
GENERIC_MATMUL(mm_q4_1, struct skipper_block_q4_1, struct cpu_q8, dot_q4_1, k / 32)
GENERIC_MATMUL(mm_q8_0, struct skipper_block_q8_0, struct cpu_q8, dot_q8_0, k / 32)
GENERIC_MATMUL(mm_q5_0, struct skipper_block_q5_0, struct cpu_q8, dot_q5_0, k / 32)
GENERIC_MATMUL(mm_q5_1, struct skipper_block_q5_1, struct cpu_q8, dot_q5_1, k / 32)
GENERIC_MATMUL(mm_q4_K, struct skipper_block_q4_K, struct cpu_q8k, dot_q4_K, k / 256)
GENERIC_MATMUL(mm_q5_K, struct skipper_block_q5_K, struct cpu_q8k, dot_q5_K, k / 256)
GENERIC_MATMUL(mm_q6_K, struct skipper_block_q6_K, struct cpu_q8k, dot_q6_K, k / 256)
GENERIC_MATMUL(mm_f32, float, float, dot_f32, k)
GENERIC_MATMUL(mm_f16, uint16_t, float, dot_f16, k)
GENERIC_MATMUL(mm_bf16, uint16_t, float, dot_bf16, k)

static void g_attn_scores(const float *q, int nq, const uint8_t *k, int n, size_t ks, int d, float scale, float *s,
                          int ss, int kt)
{
	for (int j = 0; j < n; j++)
		for (int i = 0; i < nq; i++) {
			const float *a = q + (size_t)i * d;
			float acc = 0.0f;
			for (int e = 0; e < d; e++)
				acc += a[e] * cpu_kv_elem(k + (size_t)j * ks, kt, d, e);
			s[(size_t)i * ss + j] = acc * scale;
		}
}

static void g_attn_values(float *o, int nq, const float *p, int ps, const uint8_t *v, int n, size_t vs, int d,
                          int kt)
{
	for (int j = 0; j < n; j++)
		for (int i = 0; i < nq; i++) {
			float a = p[(size_t)i * ps + j], *y = o + (size_t)i * d;
			for (int e = 0; e < d; e++)
				y[e] += a * cpu_kv_elem(v + (size_t)j * vs, kt, d, e);
		}
}

static void g_attn_scores_f16(const float *q, int nq, const uint8_t *k, int n, size_t ks, int d, float scale,
                              float *s, int ss)
{
	g_attn_scores(q, nq, k, n, ks, d, scale, s, ss, CPU_KV_F16);
}

static void g_attn_scores_q8(const float *q, int nq, const uint8_t *k, int n, size_t ks, int d, float scale,
                             float *s, int ss)
{
	g_attn_scores(q, nq, k, n, ks, d, scale, s, ss, CPU_KV_Q8_0);
}

static void g_attn_values_f16(float *o, int nq, const float *p, int ps, const uint8_t *v, int n, size_t vs, int d)
{
	g_attn_values(o, nq, p, ps, v, n, vs, d, CPU_KV_F16);
}

static void g_attn_values_q8(float *o, int nq, const float *p, int ps, const uint8_t *v, int n, size_t vs, int d)
{
	g_attn_values(o, nq, p, ps, v, n, vs, d, CPU_KV_Q8_0);
}

static double g_exp_sum(float *x, int n, float m)
{
	double sum = 0.0;
	for (int i = 0; i < n; i++) {
		x[i] = expf(x[i] - m);
		sum += x[i];
	}
	return sum;
}

static void g_silu_mul(const float *g, const float *u, float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] = (g[i] / (1.0f + expf(-g[i]))) * u[i];
}

static void g_f32_to_f16(const float *x, uint16_t *y, int n)
{
	for (int i = 0; i < n; i++)
		y[i] = cpu_f32_to_f16(x[i]);
}

static void g_round_f16(float *x, int n, float s)
{
	for (int i = 0; i < n; i++)
		x[i] = cpu_f16_to_f32(cpu_f32_to_f16(x[i] * s));
}

const struct cpu_kernels cpu_kernels_generic = {
	.name = "generic",
	.matmul = {
		[CPU_W_F32] = mm_f32, [CPU_W_F16] = mm_f16, [CPU_W_BF16] = mm_bf16,
		[CPU_W_Q4_0] = mm_q4_0, [CPU_W_Q4_1] = mm_q4_1, [CPU_W_Q8_0] = mm_q8_0,
		[CPU_W_Q5_0] = mm_q5_0, [CPU_W_Q5_1] = mm_q5_1, [CPU_W_Q4_K] = mm_q4_K,
		[CPU_W_Q5_K] = mm_q5_K, [CPU_W_Q6_K] = mm_q6_K,
	},
	.quantize_q8 = quantize_q8,
	.quantize_q8k = quantize_q8k,
	.attn_scores = { g_attn_scores_f16, g_attn_scores_q8 },
	.attn_values = { g_attn_values_f16, g_attn_values_q8 },
	.silu_mul = g_silu_mul,
	.exp_sum = g_exp_sum,
	.f32_to_f16 = g_f32_to_f16,
	.round_f16 = g_round_f16,
};

int cpu_wkind(int dtype)
{
	switch (dtype) {
	case SKIPPER_F32: return CPU_W_F32;
	case SKIPPER_F16: return CPU_W_F16;
	case SKIPPER_BF16: return CPU_W_BF16;
	case SKIPPER_Q4_0: return CPU_W_Q4_0;
	case SKIPPER_Q4_1: return CPU_W_Q4_1;
	case SKIPPER_Q8_0: return CPU_W_Q8_0;
	case SKIPPER_Q5_0: return CPU_W_Q5_0;
	case SKIPPER_Q5_1: return CPU_W_Q5_1;
	case SKIPPER_Q4_K: return CPU_W_Q4_K;
	case SKIPPER_Q5_K: return CPU_W_Q5_K;
	case SKIPPER_Q6_K: return CPU_W_Q6_K;
	}
	return -1;
}

static struct cpu_kernels avx512_table, avxvnni_table;
static pthread_once_t avx512_once = PTHREAD_ONCE_INIT, avxvnni_once = PTHREAD_ONCE_INIT;

static void build_avx512(void)
{
#ifdef SKIPPER_X86_64
	avx512_table = cpu_kernels_avx2;
	cpu_kernels_avx512_fill(&avx512_table);
#endif
}

#ifdef SKIPPER_X86_64
static int has_avx512(void)
{
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("avx512vnni");
}
#endif

/* AVX-VNNI's vpdpbusd where the CPU has it, else the same instruction
 * EVEX-encoded (AVX-512 VNNI and VL: the CPUs that run the avx512 table,
 * where "avxvnni" is only ever chosen by SKIPPER_CPU_ISA, to compare and
 * to test these kernels) */
static void build_avxvnni(void)
{
#ifdef SKIPPER_X86_64
	avxvnni_table = cpu_kernels_avx2;
	cpu_kernels_avxvnni_fill(&avxvnni_table, !__builtin_cpu_supports("avxvnni"));
#endif
}

const struct cpu_kernels *cpu_kernels_for(const char *isa)
{
	if (strcmp(isa, "generic") == 0)
		return &cpu_kernels_generic;
#ifdef SKIPPER_X86_64
	__builtin_cpu_init();
	int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
	if (strcmp(isa, "avx2") == 0)
		return avx2 ? &cpu_kernels_avx2 : NULL;
	if (strcmp(isa, "avxvnni") == 0) {
		if (!avx2 || !(__builtin_cpu_supports("avxvnni") || has_avx512()))
			return NULL;
		pthread_once(&avxvnni_once, build_avxvnni);
		return &avxvnni_table;
	}
	if (strcmp(isa, "avx512") == 0) {
		if (!avx2 || !has_avx512())
			return NULL;
		pthread_once(&avx512_once, build_avx512);
		return &avx512_table;
	}
#endif
	return NULL;
}

int cpu_pk_prefetch = 1;

const struct cpu_kernels *cpu_kernels_select(void)
{
	static const char *const order[] = { "avx512", "avxvnni", "avx2", "generic" };
	const char *cap = getenv("SKIPPER_CPU_ISA"), *pf = getenv("SKIPPER_CPU_PREFETCH");
	size_t i = 0;

	cpu_pk_prefetch = !(pf && strcmp(pf, "0") == 0);

	/* SKIPPER_CPU_ISA caps the choice: the first in the order at or below it */
	while (cap && *cap && i + 1 < sizeof order / sizeof order[0] && strcmp(order[i], cap) != 0)
		i++;
	for (; i < sizeof order / sizeof order[0]; i++) {
		const struct cpu_kernels *k = cpu_kernels_for(order[i]);
		if (k)
			return k;
	}
	return &cpu_kernels_generic;
}
