/* Inner kernels of the CPU backend, one table per instruction set.
 *
 * Batch invariance rests on this file: every output element y[r][c] of a
 * matrix product is computed by the same sequence of floating-point
 * operations whatever the number of rows or the thread that runs it. Kernels
 * may process several activation rows per weight row (to read the weights
 * once), but each row keeps its own accumulators, updated in the same order
 * as in the one-row case. Which table is used is decided once per process. */
#ifndef SKIPPER_CPU_KERNELS_H
#define SKIPPER_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One block of an activation row quantized for integer dot products with
 * Q4_0 / Q4_1 / Q8_0 weights: x[i] ~= d * qs[i]; sum = sum of qs (Q4_0
 * offset), s = d * sum (Q4_1 offset). d and s are rounded to fp16 values as
 * llama.cpp's Q8_0/Q8_1 blocks store them: the extra rounding costs nothing
 * measurable in accuracy and keeps logits within noise of llama.cpp, so that
 * greedy decoding picks the same tokens. */
struct cpu_q8 {
	float d, s;
	int32_t sum;
	int8_t qs[32];
};

/* One 256-element block of an activation row for the K-quants (GGML's
 * Q8_K): x[i] ~= d * qs[i], d = max / -127 for the element of largest
 * magnitude (kept as a float), bsums[j] = sum of qs[16 j .. 16 j + 15]
 * and bsum32[j] = bsums[2 j] + bsums[2 j + 1] (the K-quants' mins and
 * offsets need only these sums). qs first and the block 64-byte aligned so
 * SIMD loads never split a cache line (bsum32 fits in that padding). */
struct cpu_q8k {
	int8_t qs[256];
	int16_t bsums[16];
	int16_t bsum32[8];
	float d;
} __attribute__((aligned(64)));

/* y[r * y_stride + c] = dot(weight row c, activation row r) for r < nr,
 * c < nc. w points at weight row 0 (rows w_row_bytes apart); x at activation
 * row 0, rows x_stride bytes apart, in the layout cpu_wact() names for the
 * weight kind. k = row length. */
typedef void (*cpu_matmul_fn)(int64_t k, const void *w, size_t w_row_bytes, int nc,
                              const void *x, size_t x_stride, int nr, float *y,
                              size_t y_stride);

enum cpu_wkind {
	CPU_W_F32, CPU_W_F16, CPU_W_BF16, CPU_W_Q4_0, CPU_W_Q4_1, CPU_W_Q8_0,
	CPU_W_Q5_0, CPU_W_Q5_1, CPU_W_Q4_K, CPU_W_Q5_K, CPU_W_Q6_K, CPU_W_N
};

/* What a weight kind multiplies: float rows, struct cpu_q8 blocks or struct
 * cpu_q8k blocks. */
enum cpu_act { CPU_ACT_F32, CPU_ACT_Q8, CPU_ACT_Q8K };

static inline int cpu_wact(int kind)
{
	return kind <= CPU_W_BF16 ? CPU_ACT_F32 : kind >= CPU_W_Q4_K ? CPU_ACT_Q8K : CPU_ACT_Q8;
}

#define CPU_MAX_HEAD_DIM 256

/* A K/V cache row of d elements ([model] kv_type): CPU_KV_F16, d halves;
 * CPU_KV_Q8_0, llama.cpp's q8_0 blocks with the values and the scales
 * apart (d int8 values, then d / 32 f16 scales; element i is
 * scale[i / 32] * value[i]), so that 16 values are one aligned load. */
enum cpu_kv_type { CPU_KV_F16, CPU_KV_Q8_0, CPU_KV_N };

static inline size_t cpu_kv_row_bytes(int kt, int d)
{
	return kt == CPU_KV_Q8_0 ? (size_t)d + (size_t)d / 16 : (size_t)d * 2;
}

struct cpu_kernels {
	const char *name;
	cpu_matmul_fn matmul[CPU_W_N];
	/* Quantize k floats (multiple of 32) into k/32 blocks. */
	void (*quantize_q8)(const float *x, struct cpu_q8 *q, int64_t k);
	/* Quantize k floats (multiple of 256) into k/256 blocks. */
	void (*quantize_q8k)(const float *x, struct cpu_q8k *q, int64_t k);
	/* Attention over K/V cache rows of d elements (d a multiple of 8, at
	 * most CPU_MAX_HEAD_DIM; of 32 for q8_0) in the layout kt names (enum
	 * cpu_kv_type; [kt] picks the kernel), for nq queries or outputs of d
	 * floats each, stored one after the other. Every score and every
	 * output element is computed by the same operations in the same order
	 * whatever nq and n (and however a caller splits the keys into calls),
	 * so one row's attention never depends on the other rows of a batch.
	 * attn_scores: s[i * ss + j] = (q_i . k_j) * scale, k_j at k + j * ks
	 * bytes. */
	void (*attn_scores[CPU_KV_N])(const float *q, int nq, const uint8_t *k, int n, size_t ks, int d, float scale,
	                              float *s, int ss);
	/* attn_values: o_i += p[i * ps + j] * v_j for j = 0 .. n-1 in order (one
	 * fused multiply-add per element and key), v_j at v + j * vs bytes. */
	void (*attn_values[CPU_KV_N])(float *o, int nq, const float *p, int ps, const uint8_t *v, int n, size_t vs,
	                              int d);
	/* a[i] = silu(g[i]) * u[i] = g[i] / (1 + exp(-g[i])) * u[i] for i < n. */
	void (*silu_mul)(const float *g, const float *u, float *a, int n);
	/* x[i] = exp(x[i] - m) for i < n (x[i] <= m); returns their sum. */
	double (*exp_sum)(float *x, int n, float m);
	void (*f32_to_f16)(const float *x, uint16_t *y, int n);
	/* x[i] = nearest f16 value of the float product x[i] * s (exact IEEE
	 * rounding on every path); attention's probabilities are normalised
	 * and rounded in one pass, a scalar loop of its own cost more than
	 * the exponentials. */
	void (*round_f16)(float *x, int n, float s);
	/* Weight kinds this table runs from a layout of its own (NULL: none).
	 * pack_size: bytes of that layout for nc weight rows of length k, 0
	 * when this kind (or this shape: nc must be a multiple of
	 * CPU_PACK_ROWS) stays as GGUF stores it; pack: write it (w: nc rows
	 * wrb bytes apart); matmul_packed[kind]: the matmul over it, w at a
	 * group of CPU_PACK_ROWS rows, w_row_bytes = that group's bytes /
	 * CPU_PACK_ROWS, nc a multiple of CPU_PACK_ROWS. Same batch
	 * invariance as matmul. */
	size_t (*pack_size)(int kind, int64_t k, int nc);
	void (*pack)(int kind, int64_t k, const void *w, size_t wrb, int nc, void *out);
	cpu_matmul_fn matmul_packed[CPU_W_N];
};

/* Weight rows interleaved in a packed layout. */
#define CPU_PACK_ROWS 16

extern const struct cpu_kernels cpu_kernels_generic;
#ifdef SKIPPER_X86_64
extern const struct cpu_kernels cpu_kernels_avx2;
/* Override the entries of an AVX2 table that have AVX-512 kernels. */
void cpu_kernels_avx512_fill(struct cpu_kernels *t);
/* Override the packed kernels of an AVX2 table with the AVX-VNNI ones
 * (vpdpbusd on ymm; EVEX-encoded when evex, for AVX-512 VNNI CPUs). */
void cpu_kernels_avxvnni_fill(struct cpu_kernels *t, int evex);
#endif

/* The table of one instruction set: "avx512" (AVX-512 F/BW/VL/DQ + VNNI),
 * "avxvnni" (the avx2 table with AVX-VNNI's vpdpbusd in its packed
 * kernels; on AVX-512 VNNI CPUs the same instruction EVEX-encoded), "avx2"
 * (AVX2 + FMA + F16C) or "generic"; NULL when this CPU lacks it. */
const struct cpu_kernels *cpu_kernels_for(const char *isa);

/* The table a backend uses: the best this CPU runs, capped by
 * SKIPPER_CPU_ISA=generic|avx2|avxvnni|avx512 (tests run every path the machine
 * has). */
const struct cpu_kernels *cpu_kernels_select(void);

/* Whether the packed kernels prefetch their weights (cpu_packed.h): 1
 * unless SKIPPER_CPU_PREFETCH=0 (read by cpu_kernels_select), to compare. */
extern int cpu_pk_prefetch;

/* Weight kind for a GGUF dtype, or -1 when unsupported. */
int cpu_wkind(int dtype);

/* Exact IEEE half <-> float conversions (round to nearest even). */
static inline float cpu_f16_to_f32(uint16_t h)
{
	_Float16 f;
	__builtin_memcpy(&f, &h, 2);
	return (float)f;
}

static inline uint16_t cpu_f32_to_f16(float x)
{
	_Float16 f = (_Float16)x;
	uint16_t h;
	__builtin_memcpy(&h, &f, 2);
	return h;
}

static inline float cpu_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	__builtin_memcpy(&f, &u, 4);
	return f;
}


/* Element e of a K/V cache row of d elements (enum cpu_kv_type) as a
 * float. */
static inline float cpu_kv_elem(const uint8_t *row, int kt, int d, int e)
{
	uint16_t h;
	if (kt == CPU_KV_F16) {
		memcpy(&h, row + 2 * (size_t)e, sizeof h);
		return cpu_f16_to_f32(h);
	}
	memcpy(&h, row + d + 2 * (e / 32), sizeof h);
	return cpu_f16_to_f32(h) * (float)(int8_t)row[e];
}

#endif
