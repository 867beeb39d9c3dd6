/* Tensor element types (GGML numbering, as stored in GGUF) and their block
 * layouts. Quantized weights stay in these layouts in memory. */
#ifndef SKIPPER_QUANT_H
#define SKIPPER_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* enum skipper_dtype lives in the backend ABI header (the CUDA module needs it). */
#include "backend/backend_abi.h"

#define SKIPPER_QK 32   /* elements per block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 */
#define SKIPPER_QK_K 256 /* elements per super-block of the K-quants */

/* 32-element blocks. Nibble/5-bit layouts: element i < 16 is the low part
 * of byte i, element 16 + i the high part; Q5's fifth bits are bit i of
 * the little-endian 32-bit qh. d, m are IEEE halves. */
struct skipper_block_q4_0 { uint16_t d; uint8_t qs[SKIPPER_QK / 2]; };                 /* x = (q-8)*d  */
struct skipper_block_q4_1 { uint16_t d, m; uint8_t qs[SKIPPER_QK / 2]; };              /* x = q*d + m  */
struct skipper_block_q5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[SKIPPER_QK / 2]; };  /* x = (q-16)*d */
struct skipper_block_q5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[SKIPPER_QK / 2]; }; /* x = q*d + m */
struct skipper_block_q8_0 { uint16_t d; int8_t qs[SKIPPER_QK]; };                      /* x = q*d      */

/* 256-element super-blocks (GGML's K-quants).
 * Q4_K / Q5_K: 8 sub-blocks of 32, each with a 6-bit scale sc and min m
 * packed in scales[12] (skipper_k_scale_min); x = d*sc * q - dmin*m with q
 * of 4 (5) bits. qs[32 c + l] holds element 64 c + l in its low nibble and
 * 64 c + 32 + l in its high one; Q5_K's fifth bit of those two is bit 2c
 * (2c + 1) of qh[l].
 * Q6_K: 16 sub-blocks of 16 with int8 scales; x = d*sc * (q - 32), q of 6
 * bits: per half h (128 elements), element 128 h + 32 k + l (k < 4, l < 32)
 * has its low nibble in ql[64 h + l + 32 (k & 1)] (high nibble when k >= 2)
 * and its top two bits at bit 2k of qh[32 h + l]. */
struct skipper_block_q4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[SKIPPER_QK_K / 2]; };
struct skipper_block_q5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[SKIPPER_QK_K / 8];
                            uint8_t qs[SKIPPER_QK_K / 2]; };
struct skipper_block_q6_K { uint8_t ql[SKIPPER_QK_K / 2]; uint8_t qh[SKIPPER_QK_K / 4];
                            int8_t scales[SKIPPER_QK_K / 16]; uint16_t d; };

/* Scale and min of sub-block j (< 8) of a Q4_K / Q5_K super-block. */
static inline void skipper_k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
		*m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
	}
}

/* Name ("Q4_1") of a supported type, NULL for any other value. */
const char *skipper_dtype_name(int type);

/* Elements per block (1 for float types) and bytes per block; 0 if unsupported. */
int skipper_dtype_block(int type);
size_t skipper_dtype_block_bytes(int type);

/* Bytes taken by n elements (n must be a multiple of the block size);
 * 0 if the type is unsupported or n is not a multiple. */
size_t skipper_dtype_row_bytes(int type, int64_t n);

/* Index of the first block of n elements whose scale (or, for float types,
 * value) is infinite or NaN, or -1: such a block is corruption, since no
 * quantiser writes one, and it would turn every output it meets into NaN. */
int64_t skipper_dtype_find_nonfinite(int type, const void *data, int64_t n);

/* Convert n elements (a multiple of the block size) of a row to f32, with
 * GGML's formulas and operation order (gguf-py gives the same floats). */
void skipper_dequant_row(int type, const void *src, float *dst, int64_t n);

float skipper_fp16_to_f32(uint16_t h);
uint16_t skipper_f32_to_fp16(float f);
float skipper_bf16_to_f32(uint16_t h);
uint16_t skipper_f32_to_bf16(float f);

/* Quantize n f32 values (multiple of the block size) into blocks (used by
 * the test-model generator and by tests); returns bytes written. The 32-
 * element types follow GGML's reference quantisers byte for byte; the
 * K-quants use a plain min/max fit (valid blocks, not GGML's search). */
size_t skipper_quantize_row(int type, const float *src, void *dst, int64_t n);

#endif
