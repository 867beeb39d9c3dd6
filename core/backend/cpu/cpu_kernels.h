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

/* y[r * y_stride + c] = dot(weight row c, activation row r) for r < nr,
 * c < nc. w points at weight row 0 (rows w_row_bytes apart); x at activation
 * row 0, rows x_stride bytes apart (struct cpu_q8 blocks for quantized
 * weights, floats for F32/F16/BF16 weights). k = row length. */
typedef void (*cpu_matmul_fn)(int64_t k, const void *w, size_t w_row_bytes, int nc,
                              const void *x, size_t x_stride, int nr, float *y,
                              size_t y_stride);

enum cpu_wkind { CPU_W_F32, CPU_W_F16, CPU_W_BF16, CPU_W_Q4_0, CPU_W_Q4_1, CPU_W_Q8_0, CPU_W_N };

struct cpu_kernels {
	const char *name;
	cpu_matmul_fn matmul[CPU_W_N];
	/* Quantize k floats (multiple of 32) into k/32 blocks. */
	void (*quantize_q8)(const float *x, struct cpu_q8 *q, int64_t k);
	/* Attention helpers over f16 K/V rows of length d (multiple of 8). */
	float (*dot_f32_f16)(const float *a, const uint16_t *b, int d);
	void (*axpy_f16)(float *y, float a, const uint16_t *x, int d);
	void (*f32_to_f16)(const float *x, uint16_t *y, int n);
	/* x[i] = nearest f16 value of x[i] (exact IEEE rounding on both paths) */
	void (*round_f16)(float *x, int n);
};

extern const struct cpu_kernels cpu_kernels_generic;
#ifdef SKIPPER_X86_64
extern const struct cpu_kernels cpu_kernels_avx2;
#endif

/* The table for this process: AVX2+FMA+F16C when the CPU has them, unless
 * SKIPPER_CPU_ISA=generic. Decided on first call. */
const struct cpu_kernels *cpu_kernels_select(void);

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

/* Convert one weight row of any supported dtype to floats (embeddings, norms). */
void cpu_row_to_f32(int dtype, const void *src, float *dst, int64_t n);

#endif
