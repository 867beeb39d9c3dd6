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
 * count, the kernels' instructions can be counted (HACKING.md). */
#include "build-config.h"

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
				double t1 = 0;
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
					printf("  %12.2f %4.2f", (double)wrb * nc / best / 1e9, best / t1);
				}
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
