/* Plain C kernels: the reference the SIMD tables are tested against in
 * spirit (same formulas), and the path for CPUs without AVX2 or when
 * SKIPPER_CPU_ISA=generic. Every dot product runs strictly left to right. */
#include "build-config.h"

#include <math.h>
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
GENERIC_MATMUL(mm_f32, float, float, dot_f32, k)
GENERIC_MATMUL(mm_f16, uint16_t, float, dot_f16, k)
GENERIC_MATMUL(mm_bf16, uint16_t, float, dot_bf16, k)

static float g_dot_f32_f16(const float *a, const uint16_t *b, int d)
{
	float acc = 0.0f;
	for (int i = 0; i < d; i++)
		acc += a[i] * cpu_f16_to_f32(b[i]);
	return acc;
}

static void g_axpy_f16(float *y, float a, const uint16_t *x, int d)
{
	for (int i = 0; i < d; i++)
		y[i] += a * cpu_f16_to_f32(x[i]);
}

static void g_f32_to_f16(const float *x, uint16_t *y, int n)
{
	for (int i = 0; i < n; i++)
		y[i] = cpu_f32_to_f16(x[i]);
}

static void g_round_f16(float *x, int n)
{
	for (int i = 0; i < n; i++)
		x[i] = cpu_f16_to_f32(cpu_f32_to_f16(x[i]));
}

const struct cpu_kernels cpu_kernels_generic = {
	.name = "generic",
	.matmul = {
		[CPU_W_F32] = mm_f32, [CPU_W_F16] = mm_f16, [CPU_W_BF16] = mm_bf16,
		[CPU_W_Q4_0] = mm_q4_0, [CPU_W_Q4_1] = mm_q4_1, [CPU_W_Q8_0] = mm_q8_0,
	},
	.quantize_q8 = quantize_q8,
	.dot_f32_f16 = g_dot_f32_f16,
	.axpy_f16 = g_axpy_f16,
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
	}
	return -1;
}

void cpu_row_to_f32(int dtype, const void *src, float *dst, int64_t n)
{
	switch (dtype) {
	case SKIPPER_F32:
		memcpy(dst, src, (size_t)n * sizeof(float));
		break;
	case SKIPPER_F16:
		for (int64_t i = 0; i < n; i++)
			dst[i] = cpu_f16_to_f32(((const uint16_t *)src)[i]);
		break;
	case SKIPPER_BF16:
		for (int64_t i = 0; i < n; i++)
			dst[i] = cpu_bf16_to_f32(((const uint16_t *)src)[i]);
		break;
	case SKIPPER_Q4_0:
		for (int64_t b = 0; b < n / 32; b++) {
			const struct skipper_block_q4_0 *q = (const struct skipper_block_q4_0 *)src + b;
			float d = cpu_f16_to_f32(q->d);
			for (int i = 0; i < 16; i++) {
				dst[b * 32 + i] = (float)((q->qs[i] & 0x0F) - 8) * d;
				dst[b * 32 + i + 16] = (float)((q->qs[i] >> 4) - 8) * d;
			}
		}
		break;
	case SKIPPER_Q4_1:
		for (int64_t b = 0; b < n / 32; b++) {
			const struct skipper_block_q4_1 *q = (const struct skipper_block_q4_1 *)src + b;
			float d = cpu_f16_to_f32(q->d), m = cpu_f16_to_f32(q->m);
			for (int i = 0; i < 16; i++) {
				dst[b * 32 + i] = (float)(q->qs[i] & 0x0F) * d + m;
				dst[b * 32 + i + 16] = (float)(q->qs[i] >> 4) * d + m;
			}
		}
		break;
	case SKIPPER_Q8_0:
		for (int64_t b = 0; b < n / 32; b++) {
			const struct skipper_block_q8_0 *q = (const struct skipper_block_q8_0 *)src + b;
			float d = cpu_f16_to_f32(q->d);
			for (int i = 0; i < 32; i++)
				dst[b * 32 + i] = (float)q->qs[i] * d;
		}
		break;
	}
}

const struct cpu_kernels *cpu_kernels_select(void)
{
	static const struct cpu_kernels *chosen;
	const struct cpu_kernels *k = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);

	if (k)
		return k;
	k = &cpu_kernels_generic;
#ifdef SKIPPER_X86_64
	const char *isa = getenv("SKIPPER_CPU_ISA");
	if (!(isa && strcmp(isa, "generic") == 0)) {
		__builtin_cpu_init();
		if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
		    __builtin_cpu_supports("f16c"))
			k = &cpu_kernels_avx2;
	}
#endif
	/* Two threads racing here pick the same table; the first store wins. */
	const struct cpu_kernels *expected = NULL;
	__atomic_compare_exchange_n(&chosen, &expected, k, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return expected ? expected : k;
}
