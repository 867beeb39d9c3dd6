/* Tensor element types (GGML numbering, as stored in GGUF) and their block
 * layouts. Quantized weights stay in these layouts in memory. */
#ifndef SKIPPER_QUANT_H
#define SKIPPER_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* enum skipper_dtype lives in the backend ABI header (the CUDA module needs it). */
#include "skipper/backend_abi.h"

#define SKIPPER_QK 32 /* elements per block of Q4_0, Q4_1, Q8_0 */

struct skipper_block_q4_0 { uint16_t d; uint8_t qs[SKIPPER_QK / 2]; };            /* x = (q-8)*d */
struct skipper_block_q4_1 { uint16_t d, m; uint8_t qs[SKIPPER_QK / 2]; };         /* x = q*d + m */
struct skipper_block_q8_0 { uint16_t d; int8_t qs[SKIPPER_QK]; };                 /* x = q*d     */

/* Name ("Q4_1") of a supported type, NULL for any other value. */
const char *skipper_dtype_name(int type);

/* Elements per block (1 for float types) and bytes per block; 0 if unsupported. */
int skipper_dtype_block(int type);
size_t skipper_dtype_block_bytes(int type);

/* Bytes taken by n elements (n must be a multiple of the block size);
 * 0 if the type is unsupported or n is not a multiple. */
size_t skipper_dtype_row_bytes(int type, int64_t n);

/* Convert n elements (a multiple of the block size) of a row to f32. */
void skipper_dequant_row(int type, const void *src, float *dst, int64_t n);

float skipper_fp16_to_f32(uint16_t h);
uint16_t skipper_f32_to_fp16(float f);
float skipper_bf16_to_f32(uint16_t h);
uint16_t skipper_f32_to_bf16(float f);

/* Quantize n f32 values (multiple of 32) into blocks (used by the test-model
 * generator and by tests); returns bytes written. */
size_t skipper_quantize_row(int type, const float *src, void *dst, int64_t n);

#endif
