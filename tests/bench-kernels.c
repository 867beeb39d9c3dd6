/* Matmul kernel throughput, one thread: a command for tuning, not a test.
 *   bench-kernels [MB] [TYPE,...] [ISA,...] [ROWS,...]
 * For each weight type and instruction set the machine runs, multiplies a
 * weight matrix of MB megabytes (default 256: larger than the caches, as a
 * model's are) by 1, 2, 3, 4, 6, 8 and 16 activation rows (or ROWS) and
 * prints the weight bytes streamed per second and the time relative to the
 * first row count: the cost curve of a verification pass, kernel by
 * kernel. A table that keeps a kind in a layout of its own
 * (cpu_kernels.pack) gets a second line, "+pk", over that layout: what a
 * model's matmuls run. ISA avxvnni is the AVX-VNNI table (on an AVX-512
 * CPU, its EVEX encoding). Under valgrind --tool=callgrind, with one row
 * count, the kernels' instructions can be counted (HACKING.md). Each line
 * ends with the multiply-adds per second at its last row count, and the
 * table starts with each instruction set's peak of the integer
 * multiply-adds its kernels are built on (independent chains in
 * registers): how far a verify pass's rows are from their arithmetic
 * bound. */
#include "build-config.h"

#ifdef SKIPPER_X86_64
#include <immintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_kernels.h"
#include "model/quant.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#ifdef SKIPPER_X86_64
#define PEAK_REPS 4000000L

/* Ten independent chains of one instruction S (a statement on a and w),
 * enough to hide its latency; named variables, not an array, which GCC
 * spills to the stack inside the loop; w opaque to the compiler, so
 * nothing is hoisted. Sets t to the seconds taken. */
#define PEAK_CHAINS(T, SET, ADD, S)                                                                          \
	do {                                                                                                 \
		T a0 = SET(1), a1 = SET(2), a2 = SET(3), a3 = SET(4), a4 = SET(5), a5 = SET(6), a6 = SET(7),  \
		  a7 = SET(8), a8 = SET(9), a9 = SET(10), w = SET(0x03030303);                                \
		double t0 = now();                                                                           \
		for (long r = 0; r < PEAK_REPS; r++) {                                                       \
			S(a0); S(a1); S(a2); S(a3); S(a4); S(a5); S(a6); S(a7); S(a8); S(a9);                \
			__asm__ volatile("" : "+v"(w));                                                      \
		}                                                                                            \
		t = now() - t0;                                                                              \
		T z = ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))), ADD(a8, a9));    \
		__asm__ volatile("" : : "v"(z));                                                             \
	} while (0)

/* AVX2 has no int8 dot product: its 32 products are a vpmaddubsw (u8 x s8
 * into pairs summed in 16 bits), which the kernels follow with vpmaddwd and
 * vpaddd as rarely as they can; the bound is vpmaddubsw alone. */
__attribute__((target("avx2"))) static double peak_avx2(void)
{
	double t;
#define MADDUBS(a) a = _mm256_maddubs_epi16(a, w)
	PEAK_CHAINS(__m256i, _mm256_set1_epi32, _mm256_add_epi32, MADDUBS);
#undef MADDUBS
	return 32.0 * 10 * PEAK_REPS / t;
}

/* vpdpbusd: 64 (zmm) or 32 (ymm) multiply-adds in one instruction */
__attribute__((target("avx512f,avx512vnni"))) static double peak_avx512(void)
{
	double t;
#define DPBUSD(a) a = _mm512_dpbusd_epi32(a, w, w)
	PEAK_CHAINS(__m512i, _mm512_set1_epi32, _mm512_add_epi32, DPBUSD);
#undef DPBUSD
	return 64.0 * 10 * PEAK_REPS / t;
}

/* AVX-VNNI's VEX form, or on an AVX-512 CPU its EVEX form, in asm as the
 * kernels write it (cpu_kernels_avx2.c, PK2_DPBUSD) */
__attribute__((target("avx2"))) static double peak_avxvnni(int evex)
{
	double t;
#define DPBUSD(a)                                                                \
	do {                                                                     \
		if (evex)                                                        \
			__asm__("%{evex%} vpdpbusd %1, %1, %0" : "+x"(a) : "x"(w)); \
		else                                                             \
			__asm__("%{vex%} vpdpbusd %1, %1, %0" : "+x"(a) : "x"(w));  \
	} while (0)
	PEAK_CHAINS(__m256i, _mm256_set1_epi32, _mm256_add_epi32, DPBUSD);
#undef DPBUSD
	return 32.0 * 10 * PEAK_REPS / t;
}
#endif

/* Integer multiply-adds per second the ISA's table peaks at (the best of
 * five runs: a shared machine's other work only ever slows one), 0 where
 * it has none of its own (generic) or this is not x86-64. */
static double peak_int8(const char *isa)
{
	double best = 0;
	for (int run = 0; run < 5; run++) {
		double r = 0;
#ifdef SKIPPER_X86_64
		if (!strcmp(isa, "avx2"))
			r = peak_avx2();
		else if (!strcmp(isa, "avx512"))
			r = peak_avx512();
		else if (!strcmp(isa, "avxvnni"))
			r = peak_avxvnni(!__builtin_cpu_supports("avxvnni"));
#else
		(void)isa;
#endif
		best = r > best ? r : best;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int type; } types[] = {
		{ "q4_k", SKIPPER_Q4_K }, { "q6_k", SKIPPER_Q6_K }, { "q5_k", SKIPPER_Q5_K }, { "q5_0", SKIPPER_Q5_0 },
		{ "q8_0", SKIPPER_Q8_0 }, { "q4_0", SKIPPER_Q4_0 }, { "q4_1", SKIPPER_Q4_1 }, { "f16", SKIPPER_F16 },
	};
	static const char *const isas[] = { "generic", "avx2", "avxvnni", "avx512" };
	int rows[16] = { 1, 2, 3, 4, 6, 8, 16 }, nrows = 7;
	double mb = argc > 1 ? atof(argv[1]) : 256;
	const char *want_t = argc > 2 ? argv[2] : "q4_k,q6_k,q5_0,q8_0,q4_1", *want_i = argc > 3 ? argv[3] : "avx2,avxvnni,avx512";
	const int64_t k = 1536;

	if (argc > 4) {
		nrows = 0;
		for (char *p = argv[4], *e;; p = e + 1) {
			long n = strtol(p, &e, 10);
			if (e == p || n < 1 || n > 16 || (*e && *e != ',') || nrows == 16) {
				fprintf(stderr, "bench-kernels: rows '%s': numbers 1..16 separated by commas\n", argv[4]);
				return 1;
			}
			rows[nrows++] = (int)n;
			if (!*e)
				break;
		}
	}

	for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
		double pk = cpu_kernels_for(isas[i]) && strstr(want_i, isas[i]) ? peak_int8(isas[i]) : 0;
		if (pk > 0)
			printf("%-8s peak %.1f G int8 multiply-adds/s (independent chains in registers)\n", isas[i], pk / 1e9);
	}
	printf("%-6s %-8s", "type", "isa");
	for (int r = 0; r < nrows; r++)
		printf("  rows=%-2d GB/s  x1", rows[r]);
	printf("\n");
	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
		if (!strstr(want_t, types[t].name))
			continue;
		int type = types[t].type, kind = cpu_wkind(type), act = cpu_wact(kind);
		size_t wrb = skipper_dtype_row_bytes(type, k);
		int nc = (int)(mb * 1e6 / (double)wrb) / CPU_PACK_ROWS * CPU_PACK_ROWS;
		uint8_t *w = malloc(wrb * (size_t)nc);
		float row[1536], *x = malloc(sizeof(float) * k * 16), *y = malloc(sizeof(float) * (size_t)nc * 16);
		size_t xs = act == CPU_ACT_Q8K ? (k / 256) * sizeof(struct cpu_q8k)
		            : act == CPU_ACT_Q8 ? (k / 32) * sizeof(struct cpu_q8) : k * sizeof(float);
		char *xq = aligned_alloc(64, (xs * 16 + 63) / 64 * 64); /* C11: a multiple of the alignment */
		for (int64_t i = 0; i < k; i++)
			row[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
		for (int c = 0; c < nc; c++)
			skipper_quantize_row(type, row, w + wrb * c, k);
		for (int64_t i = 0; i < 16 * k; i++)
			x[i] = (float)((i * 104729) % 2000) / 1000.0f - 1.0f;
		for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
			const struct cpu_kernels *kt = cpu_kernels_for(isas[i]);
			if (!kt || !strstr(want_i, isas[i]))
				continue;
			for (int r = 0; r < 16; r++) {
				if (act == CPU_ACT_Q8K)
					kt->quantize_q8k(x + r * k, (struct cpu_q8k *)(xq + xs * r), k);
				else if (act == CPU_ACT_Q8)
					kt->quantize_q8(x + r * k, (struct cpu_q8 *)(xq + xs * r), k);
				else
					memcpy(xq + xs * r, x + r * k, xs);
			}
			size_t psize = kt->pack_size ? kt->pack_size(kind, k, nc) : 0;
			for (int packed = 0; packed <= (psize > 0); packed++) {
				const uint8_t *wm = w;
				size_t wmrb = wrb;
				cpu_matmul_fn mm = kt->matmul[kind];
				uint8_t *pk = NULL;
				if (packed) {
					if (!(pk = malloc(psize)))
						break;
					kt->pack(kind, k, w, wrb, nc, pk);
					wm = pk;
					wmrb = psize / (size_t)nc;
					mm = kt->matmul_packed[kind];
				}
				printf("%-6s %-8s", types[t].name, packed ? "+pk" : isas[i]);
				double t1 = 0, tl = 0;
				for (int ri = 0; ri < nrows; ri++) {
					double best = 1e9;
					for (int rep = 0; rep < 3; rep++) {
						double t0 = now();
						mm(k, wm, wmrb, nc, xq, xs, rows[ri], y, (size_t)nc);
						double dt = now() - t0;
						best = dt < best ? dt : best;
					}
					if (ri == 0)
						t1 = best;
					tl = best;
					printf("  %12.2f %4.2f", (double)wrb * nc / best / 1e9, best / t1);
				}
				printf("  %d rows: %.1f GMAC/s", rows[nrows - 1], (double)rows[nrows - 1] * (double)k * nc / tl / 1e9);
				printf("\n");
				fflush(stdout);
				free(pk);
			}
		}
		free(w);
		free(x);
		free(y);
		free(xq);
	}
	return 0;
}
