/* Element types: names, block geometry, dequantisation, reference
 * quantisers and half-precision conversions. Block bytes are read with
 * memcpy because tensor rows of 18- or 20-byte blocks are not 2-aligned in
 * general once callers start slicing them. */
#include <math.h>
#include <string.h>

#include "quant.h"

const char *skipper_dtype_name(int type)
{
	switch (type) {
	case SKIPPER_F32: return "F32";
	case SKIPPER_F16: return "F16";
	case SKIPPER_BF16: return "BF16";
	case SKIPPER_Q8_0: return "Q8_0";
	case SKIPPER_Q4_0: return "Q4_0";
	case SKIPPER_Q4_1: return "Q4_1";
	}
	return NULL;
}

int skipper_dtype_block(int type)
{
	switch (type) {
	case SKIPPER_F32: case SKIPPER_F16: case SKIPPER_BF16: return 1;
	case SKIPPER_Q8_0: case SKIPPER_Q4_0: case SKIPPER_Q4_1: return SKIPPER_QK;
	}
	return 0;
}

size_t skipper_dtype_block_bytes(int type)
{
	switch (type) {
	case SKIPPER_F32: return 4;
	case SKIPPER_F16: case SKIPPER_BF16: return 2;
	case SKIPPER_Q8_0: return sizeof(struct skipper_block_q8_0);
	case SKIPPER_Q4_0: return sizeof(struct skipper_block_q4_0);
	case SKIPPER_Q4_1: return sizeof(struct skipper_block_q4_1);
	}
	return 0;
}

size_t skipper_dtype_row_bytes(int type, int64_t n)
{
	int blk = skipper_dtype_block(type);
	if (!blk || n < 0 || n % blk)
		return 0;
	uint64_t nb = (uint64_t)(n / blk), bb = skipper_dtype_block_bytes(type);
	if (nb > SIZE_MAX / bb)
		return 0;
	return (size_t)(nb * bb);
}

/* ---- half precision ------------------------------------------------------- */

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float skipper_fp16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	if (exp == 0) {
		/* zero or subnormal: man * 2^-24 is exact in f32 */
		float v = (float)man * 0x1p-24f;
		return sign ? -v : v;
	}
	if (exp == 31)
		return u2f(sign | 0x7f800000u | (man << 13));
	return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t skipper_f32_to_fp16(float f)
{
	uint32_t x = f2u(f), sign = (x >> 16) & 0x8000;
	x &= 0x7fffffffu;
	if (x > 0x7f800000u) /* NaN: keep it a (quiet) NaN whatever the payload */
		return (uint16_t)(sign | 0x7e00 | ((x >> 13) & 0x3ff));
	if (x >= 0x47800000u) /* >= 65536: infinity */
		return (uint16_t)(sign | 0x7c00);
	if (x < 0x38800000u) { /* below the smallest normal half 2^-14: subnormal or zero */
		if (x <= 0x33000000u) /* <= 2^-25: rounds (ties to even) to zero */
			return (uint16_t)sign;
		uint32_t exp = x >> 23, man = (x & 0x7fffffu) | 0x800000u;
		uint32_t shift = 126 - exp; /* value / 2^-24 = man * 2^(exp-126) */
		uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t y = x - 0x38000000u; /* rebias the exponent from 127 to 15 */
	uint32_t h = y >> 13, rem = y & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++; /* a carry into the exponent is the right answer, up to infinity */
	return (uint16_t)(sign | h);
}

float skipper_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t skipper_f32_to_bf16(float f)
{
	uint32_t x = f2u(f);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40); /* quiet, never truncated into infinity */
	x += 0x7fffu + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/* ---- dequantisation ------------------------------------------------------- */

static uint16_t ld16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static void st16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

void skipper_dequant_row(int type, const void *src, float *dst, int64_t n)
{
	const uint8_t *p = src;
	switch (type) {
	case SKIPPER_F32:
		memcpy(dst, src, (size_t)n * 4);
		return;
	case SKIPPER_F16:
		for (int64_t i = 0; i < n; i++)
			dst[i] = skipper_fp16_to_f32(ld16(p + 2 * i));
		return;
	case SKIPPER_BF16:
		for (int64_t i = 0; i < n; i++)
			dst[i] = skipper_bf16_to_f32(ld16(p + 2 * i));
		return;
	case SKIPPER_Q8_0:
		for (int64_t b = 0; b < n / SKIPPER_QK; b++, p += sizeof(struct skipper_block_q8_0)) {
			float d = skipper_fp16_to_f32(ld16(p));
			for (int j = 0; j < SKIPPER_QK; j++)
				dst[b * SKIPPER_QK + j] = (float)(int8_t)p[2 + j] * d;
		}
		return;
	case SKIPPER_Q4_0:
		for (int64_t b = 0; b < n / SKIPPER_QK; b++, p += sizeof(struct skipper_block_q4_0)) {
			float d = skipper_fp16_to_f32(ld16(p));
			float *o = dst + b * SKIPPER_QK;
			for (int j = 0; j < SKIPPER_QK / 2; j++) {
				o[j] = (float)((p[2 + j] & 0xf) - 8) * d;
				o[j + SKIPPER_QK / 2] = (float)((p[2 + j] >> 4) - 8) * d;
			}
		}
		return;
	case SKIPPER_Q4_1:
		for (int64_t b = 0; b < n / SKIPPER_QK; b++, p += sizeof(struct skipper_block_q4_1)) {
			float d = skipper_fp16_to_f32(ld16(p)), m = skipper_fp16_to_f32(ld16(p + 2));
			float *o = dst + b * SKIPPER_QK;
			for (int j = 0; j < SKIPPER_QK / 2; j++) {
				o[j] = (float)(p[4 + j] & 0xf) * d + m;
				o[j + SKIPPER_QK / 2] = (float)(p[4 + j] >> 4) * d + m;
			}
		}
		return;
	}
}

/* ---- reference quantisers ------------------------------------------------- */

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

size_t skipper_quantize_row(int type, const float *src, void *dst, int64_t n)
{
	uint8_t *p = dst;
	switch (type) {
	case SKIPPER_F32:
		memcpy(dst, src, (size_t)n * 4);
		return (size_t)n * 4;
	case SKIPPER_F16:
	case SKIPPER_BF16:
		for (int64_t i = 0; i < n; i++)
			st16(p + 2 * i, type == SKIPPER_F16 ? skipper_f32_to_fp16(src[i]) : skipper_f32_to_bf16(src[i]));
		return (size_t)n * 2;
	case SKIPPER_Q8_0:
		for (int64_t b = 0; b < n / SKIPPER_QK; b++, p += sizeof(struct skipper_block_q8_0)) {
			const float *x = src + b * SKIPPER_QK;
			float amax = 0;
			for (int j = 0; j < SKIPPER_QK; j++)
				amax = fmaxf(amax, fabsf(x[j]));
			float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
			st16(p, skipper_f32_to_fp16(d));
			for (int j = 0; j < SKIPPER_QK; j++)
				p[2 + j] = (uint8_t)(int8_t)clampi((int)roundf(x[j] * id), -127, 127);
		}
		break;
	case SKIPPER_Q4_0:
		for (int64_t b = 0; b < n / SKIPPER_QK; b++, p += sizeof(struct skipper_block_q4_0)) {
			const float *x = src + b * SKIPPER_QK;
			/* the value of largest magnitude maps to -8 exactly, keeping its sign, so
			 * the asymmetric range [-8, 7] is used where it matters */
			float big = 0;
			for (int j = 0; j < SKIPPER_QK; j++)
				if (fabsf(x[j]) > fabsf(big))
					big = x[j];
			float d = big / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
			st16(p, skipper_f32_to_fp16(d));
			for (int j = 0; j < SKIPPER_QK / 2; j++) {
				int lo = clampi((int)floorf(x[j] * id + 8.5f), 0, 15);
				int hi = clampi((int)floorf(x[j + SKIPPER_QK / 2] * id + 8.5f), 0, 15);
				p[2 + j] = (uint8_t)(lo | hi << 4);
			}
		}
		break;
	case SKIPPER_Q4_1:
		for (int64_t b = 0; b < n / SKIPPER_QK; b++, p += sizeof(struct skipper_block_q4_1)) {
			const float *x = src + b * SKIPPER_QK;
			float lo = x[0], hi = x[0];
			for (int j = 1; j < SKIPPER_QK; j++) {
				lo = fminf(lo, x[j]);
				hi = fmaxf(hi, x[j]);
			}
			float d = (hi - lo) / 15.0f, id = d != 0 ? 1.0f / d : 0.0f;
			st16(p, skipper_f32_to_fp16(d));
			st16(p + 2, skipper_f32_to_fp16(lo));
			for (int j = 0; j < SKIPPER_QK / 2; j++) {
				int a = clampi((int)floorf((x[j] - lo) * id + 0.5f), 0, 15);
				int c = clampi((int)floorf((x[j + SKIPPER_QK / 2] - lo) * id + 0.5f), 0, 15);
				p[4 + j] = (uint8_t)(a | c << 4);
			}
		}
		break;
	default:
		return 0;
	}
	return skipper_dtype_row_bytes(type, n);
}
