/* Attention kernel throughput, one thread: a command for tuning, not a test.
 *   bench-attention [CONTEXT] [ISA,...] [f16,q8_0]
 * What one thread does for one K/V head in a pass of Qwen2.5-Coder 1.5B
 * (28 layers, head size 128, 6 query heads per K/V head) over CONTEXT cached
 * keys (default 1084, a RAG prompt's) in each K/V cache layout asked for (default both): scores, softmax (max, exponentials,
 * normalising and rounding as cpu_layer.c does) and value sums, for 1, 2,
 * 4 and 8 batch rows (6 to 48 queries), each layer's keys and values its
 * own and the caches flushed before every pass, as a model's weights do.
 * Prints ms per pass for each part, and what each query added over the
 * row count before it costs in multiply-adds per second ("marginal"),
 * beside what a loop of independent multiply-adds in registers runs at on
 * this core ("peak"): how far the kernels are from their arithmetic bound. */
#include "build-config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef SKIPPER_X86_64
#include <immintrin.h>
#endif

#include "backend/cpu/cpu_backend.h"

#define LAYERS 28
#define HD 128
#define GROUP 6
#define REPS 20
#define FLUSH_BYTES (64u << 20)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#ifdef SKIPPER_X86_64
/* Multiply-adds per second of 24 independent chains in registers (the
 * latency hidden, only the FMA units' throughput left), lanes counted; the
 * loop unrolled so that the chains stay in registers. */
__attribute__((target("avx512f"))) static double peak_avx512(void)
{
	__m512 a[24], x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(0.001f);
	for (int i = 0; i < 24; i++)
		a[i] = _mm512_set1_ps((float)i);
	long n = 4000000;
	double t0 = now();
	for (long r = 0; r < n; r++) {
#pragma GCC unroll 24
		for (int i = 0; i < 24; i++)
			a[i] = _mm512_fmadd_ps(a[i], x, y);
		__asm__ volatile("" : "+v"(x)); /* not hoisted out of the loop */
	}
	double t = now() - t0;
	float s = 0;
	for (int i = 0; i < 24; i++)
		s += _mm512_reduce_add_ps(a[i]);
	return s == s ? 16.0 * 24 * n / t : 0;
}

__attribute__((target("avx2,fma"))) static double peak_avx2(void)
{
	__m256 a[12], x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(0.001f);
	for (int i = 0; i < 12; i++)
		a[i] = _mm256_set1_ps((float)i);
	long n = 8000000;
	double t0 = now();
	for (long r = 0; r < n; r++) {
#pragma GCC unroll 12
		for (int i = 0; i < 12; i++)
			a[i] = _mm256_fmadd_ps(a[i], x, y);
		__asm__ volatile("" : "+x"(x));
	}
	double t = now() - t0;
	float v[8], s = 0;
	for (int i = 0; i < 12; i++) {
		_mm256_storeu_ps(v, a[i]);
		for (int l = 0; l < 8; l++)
			s += v[l];
	}
	return s == s ? 8.0 * 12 * n / t : 0;
}
#endif

static double peak(const char *isa)
{
#ifdef SKIPPER_X86_64
	if (!strcmp(isa, "avx512"))
		return peak_avx512();
	if (!strcmp(isa, "avx2"))
		return peak_avx2();
#endif
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const isas[] = { "generic", "avx2", "avx512" };
	static const int rows[] = { 1, 2, 4, 8 };
	int n = argc > 1 ? atoi(argv[1]) : 1084;
	const char *want = argc > 2 ? argv[2] : "avx2,avx512";
	const char *kinds = argc > 3 ? argv[3] : "f16,q8_0";
	if (n < 1 || n > 1 << 20) {
		fprintf(stderr, "bench-attention: CONTEXT must be 1 .. 1048576\n");
		return 2;
	}
	size_t nq_max = GROUP * 8, rows_n = LAYERS * (size_t)n;
	size_t rb_max = cpu_kv_row_bytes(CPU_KV_F16, HD);
	uint8_t *k = malloc(rows_n * rb_max), *v = malloc(rows_n * rb_max);
	float *q = malloc(nq_max * HD * sizeof *q), *s = malloc(nq_max * (size_t)n * sizeof *s);
	float *o = malloc(nq_max * HD * sizeof *o), *kv = malloc(HD * sizeof *kv);
	volatile unsigned char *flush = malloc(FLUSH_BYTES);
	if (!k || !v || !q || !s || !o || !kv || !flush) {
		fprintf(stderr, "bench-attention: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < nq_max * HD; i++)
		q[i] = (float)((i * 104729) % 2000) / 1000.0f - 1.0f;
	memset((void *)flush, 1, FLUSH_BYTES);

	printf("context %d keys, %d layers, head size %d, %d queries per row; ms per pass, one thread\n", n, LAYERS, HD,
	       GROUP);
	for (int ct = 0; ct < CPU_KV_N; ct++) {
		const char *cn = ct == CPU_KV_F16 ? "f16" : "q8_0";
		size_t rb = cpu_kv_row_bytes(ct, HD), per = (size_t)n * rb;
		if (!strstr(kinds, cn))
			continue;
		for (size_t r = 0; r < rows_n; r++)
			for (int w = 0; w < 2; w++) {
				uint8_t *row = (w ? v : k) + r * rb;
				for (int e = 0; e < HD; e++) /* keys in [-1, 1), values -0.5 times them */
					kv[e] = ((float)(((r * HD + e) * 7919) % 2000) / 1000.0f - 1.0f) * (w ? -0.5f : 1.0f);
				if (ct == CPU_KV_F16) {
					for (int e = 0; e < HD; e++) {
						uint16_t h = cpu_f32_to_f16(kv[e]);
						memcpy(row + 2 * e, &h, 2);
					}
					continue;
				}
				for (int b = 0; b < HD / 32; b++) { /* |x| <= 1: scale 1/127 */
					uint16_t h = cpu_f32_to_f16(1.0f / 127.0f);
					for (int e = 0; e < 32; e++)
						row[32 * b + e] = (uint8_t)(int8_t)(kv[32 * b + e] * 127.0f);
					memcpy(row + HD + 2 * b, &h, 2);
				}
			}
		for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
			const struct cpu_kernels *kt = cpu_kernels_for(isas[i]);
			if (!kt || !strstr(want, isas[i]))
				continue;
			double pk = peak(isas[i]), prev_s = 0, prev_v = 0;
			int prev_q = 0;
			for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
				int nq = GROUP * rows[ri];
				double ts = 0, tx = 0, tv = 0;
				for (int rep = 0; rep < REPS; rep++) {
					unsigned sum = 0;
					for (size_t b = 0; b < FLUSH_BYTES; b += 64)
						sum += flush[b];
					flush[0] = (unsigned char)sum;
					for (int l = 0; l < LAYERS; l++) {
						double t0 = now();
						kt->attn_scores[ct](q, nq, k + l * per, n, rb, HD, 0.0884f, s, n);
						double t1 = now();
						for (int j = 0; j < nq; j++) {
							float *x = s + (size_t)j * n;
							kt->round_f16(x, n, (float)(1.0 / kt->exp_sum(x, n, cpu_max(x, n))));
						}
						memset(o, 0, (size_t)nq * HD * sizeof *o);
						double t2 = now();
						kt->attn_values[ct](o, nq, s, n, v + l * per, n, rb, HD);
						double t3 = now();
						ts += t1 - t0;
						tx += t2 - t1;
						tv += t3 - t2;
					}
				}
				ts /= REPS;
				tx /= REPS;
				tv /= REPS;
				printf("%-7s %-4s rows=%d queries=%-2d scores %.3f softmax %.3f values %.3f", isas[i], cn, rows[ri],
				       nq, ts * 1e3, tx * 1e3, tv * 1e3);
				if (prev_q) { /* each query: n keys x HD multiply-adds for scores, as many for values */
					double fma = (double)(nq - prev_q) * n * HD * LAYERS;
					printf("  marginal GFMA/s: scores %.1f values %.1f", fma / (ts - prev_s) / 1e9,
					       fma / (tv - prev_v) / 1e9);
				}
				printf("\n");
				prev_q = nq;
				prev_s = ts;
				prev_v = tv;
			}
			if (pk > 0)
				printf("%-7s peak %.1f GFMA/s (independent multiply-adds in registers)\n", isas[i], pk / 1e9);
			fflush(stdout);
		}
	}
	free(k);
	free(v);
	free(q);
	free(s);
	free(o);
	free(kv);
	free((void *)flush);
	return 0;
}
