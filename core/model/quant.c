/* Element types: names, block geometry, dequantisation, reference
 * quantisers and half-precision conversions. Block bytes are read with
 * memcpy because tensor rows of 18- or 20-byte blocks are not 2-aligned in
 * general once callers start slicing them. */
#include <math.h>
#include <string.h>

#include "quant.h"

/* a*b+c stays two roundings, as in GGML and numpy */
#pragma GCC optimize("fp-contract=off")

/* fmaxf, fminf and roundf/lroundf (halves away from zero), inline:
 * libm's are calls, and quantising a model at load makes billions of
 * them. Same results for every input the quantisers see (NaN ignored as
 * fmaxf does; v - (int)v is exact for |v| < 2^31). */
static float maxf(float a, float b) { return b > a || a != a ? b : a; }
static float minf(float a, float b) { return b < a || a != a ? b : a; }
static int round_away(float v)
{
	if (!(v > -2e9f && v < 2e9f))
		return v > 0 ? 2000000000 : v < 0 ? -2000000000 : 0;
	int i = (int)v;
	float f = v - (float)i;
	return i + (f >= 0.5f) - (f <= -0.5f);
}

/* 1/d, or 0 where that is not a finite number (d 0 or subnormal): a row
 * of tiny values then quantizes to zeros rather than to 0 * inf. */
static float inverse(float d)
{
	float r = d != 0 ? 1.0f / d : 0.0f;
	return isfinite(r) ? r : 0.0f;
}

const char *skipper_dtype_name(int type)
{
	switch (type) {
	case SKIPPER_F32: return "F32";
	case SKIPPER_F16: return "F16";
	case SKIPPER_BF16: return "BF16";
	case SKIPPER_Q8_0: return "Q8_0";
	case SKIPPER_Q4_0: return "Q4_0";
	case SKIPPER_Q4_1: return "Q4_1";
	case SKIPPER_Q5_0: return "Q5_0";
	case SKIPPER_Q5_1: return "Q5_1";
	case SKIPPER_Q4_K: return "Q4_K";
	case SKIPPER_Q5_K: return "Q5_K";
	case SKIPPER_Q6_K: return "Q6_K";
	}
	return NULL;
}

int skipper_dtype_block(int type)
{
	switch (type) {
	case SKIPPER_F32: case SKIPPER_F16: case SKIPPER_BF16: return 1;
	case SKIPPER_Q8_0: case SKIPPER_Q4_0: case SKIPPER_Q4_1: case SKIPPER_Q5_0: case SKIPPER_Q5_1:
		return SKIPPER_QK;
	case SKIPPER_Q4_K: case SKIPPER_Q5_K: case SKIPPER_Q6_K: return SKIPPER_QK_K;
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
	case SKIPPER_Q5_0: return sizeof(struct skipper_block_q5_0);
	case SKIPPER_Q5_1: return sizeof(struct skipper_block_q5_1);
	case SKIPPER_Q4_K: return sizeof(struct skipper_block_q4_K);
	case SKIPPER_Q5_K: return sizeof(struct skipper_block_q5_K);
	case SKIPPER_Q6_K: return sizeof(struct skipper_block_q6_K);
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
static uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Q5_0 / Q5_1 (offset 16 or a min): 5-bit values from nibbles and qh bits. */
static void dequant_q5(const uint8_t *p, int has_min, float *o, int64_t nb)
{
	size_t bb = has_min ? sizeof(struct skipper_block_q5_1) : sizeof(struct skipper_block_q5_0);
	for (int64_t b = 0; b < nb; b++, p += bb, o += SKIPPER_QK) {
		float d = skipper_fp16_to_f32(ld16(p)), m = has_min ? skipper_fp16_to_f32(ld16(p + 2)) : 0.0f;
		const uint8_t *qh = p + (has_min ? 4 : 2), *qs = qh + 4;
		uint32_t h = ld32(qh);
		for (int j = 0; j < SKIPPER_QK / 2; j++) {
			int lo = (qs[j] & 0xf) | (int)((h >> j) & 1) << 4;
			int hi = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1) << 4;
			if (has_min) {
				o[j] = (float)lo * d + m;
				o[j + SKIPPER_QK / 2] = (float)hi * d + m;
			} else {
				o[j] = (float)(lo - 16) * d;
				o[j + SKIPPER_QK / 2] = (float)(hi - 16) * d;
			}
		}
	}
}

/* Q4_K / Q5_K: per sub-block x = (d*sc) * q - (dmin*m). */
static void dequant_q45_K(const uint8_t *p, int five, float *o, int64_t nb)
{
	size_t bb = five ? sizeof(struct skipper_block_q5_K) : sizeof(struct skipper_block_q4_K);
	for (int64_t b = 0; b < nb; b++, p += bb) {
		float d = skipper_fp16_to_f32(ld16(p)), dmin = skipper_fp16_to_f32(ld16(p + 2));
		const uint8_t *scales = p + 4, *qh = p + 16, *qs = five ? qh + SKIPPER_QK_K / 8 : qh;
		for (int c = 0; c < 4; c++, qs += 32) {
			for (int half = 0; half < 2; half++) {
				int j = 2 * c + half;
				uint8_t sc, m;
				skipper_k_scale_min(j, scales, &sc, &m);
				float d1 = d * sc, m1 = dmin * m;
				for (int l = 0; l < 32; l++) {
					int q = half ? qs[l] >> 4 : qs[l] & 0xf;
					if (five)
						q |= ((qh[l] >> j) & 1) << 4;
					*o++ = d1 * (float)q - m1;
				}
			}
		}
	}
}

static void dequant_q6_K(const uint8_t *p, float *o, int64_t nb)
{
	for (int64_t b = 0; b < nb; b++, p += sizeof(struct skipper_block_q6_K)) {
		const uint8_t *ql = p, *qh = p + 128;
		const int8_t *sc = (const int8_t *)(p + 192);
		float d = skipper_fp16_to_f32(ld16(p + 208));
		for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8, o += 128)
			for (int k = 0; k < 4; k++)
				for (int l = 0; l < 32; l++) {
					int lo = k >= 2 ? ql[l + 32 * (k & 1)] >> 4 : ql[l + 32 * (k & 1)] & 0xf;
					int q = (lo | ((qh[l] >> (2 * k)) & 3) << 4) - 32;
					o[32 * k + l] = d * (float)sc[2 * k + l / 16] * (float)q;
				}
	}
}

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
			dst[i] = u2f((uint32_t)ld16(p + 2 * i) << 16);
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
	case SKIPPER_Q5_0:
	case SKIPPER_Q5_1:
		dequant_q5(p, type == SKIPPER_Q5_1, dst, n / SKIPPER_QK);
		return;
	case SKIPPER_Q4_K:
	case SKIPPER_Q5_K:
		dequant_q45_K(p, type == SKIPPER_Q5_K, dst, n / SKIPPER_QK_K);
		return;
	case SKIPPER_Q6_K:
		dequant_q6_K(p, dst, n / SKIPPER_QK_K);
		return;
	}
}

/* ---- validation ----------------------------------------------------------- */

static int f16_finite(const uint8_t *p) { return (ld16(p) & 0x7c00) != 0x7c00; }

int64_t skipper_dtype_find_nonfinite(int type, const void *data, int64_t n)
{
	const uint8_t *p = data;
	size_t bb = skipper_dtype_block_bytes(type);
	int64_t nb = skipper_dtype_block(type) ? n / skipper_dtype_block(type) : 0;

	/* the float types one element at a time, out of the switch: a BF16
	 * checkpoint is billions of them */
	if (type == SKIPPER_BF16 || type == SKIPPER_F16) {
		uint16_t mask = type == SKIPPER_BF16 ? 0x7f80 : 0x7c00;
		for (int64_t b = 0; b < nb; b++)
			if ((ld16(p + 2 * b) & mask) == mask)
				return b;
		return -1;
	}
	for (int64_t b = 0; b < nb; b++, p += bb) {
		int good;
		switch (type) {
		case SKIPPER_F32: {
			uint32_t u;
			memcpy(&u, p, 4);
			good = (u & 0x7f800000u) != 0x7f800000u;
			break;
		}
		case SKIPPER_F16: good = f16_finite(p); break;
		case SKIPPER_BF16: good = (ld16(p) & 0x7f80) != 0x7f80; break;
		case SKIPPER_Q4_1: case SKIPPER_Q5_1: case SKIPPER_Q4_K: case SKIPPER_Q5_K:
			good = f16_finite(p) && f16_finite(p + 2); /* d and m (dmin) */
			break;
		case SKIPPER_Q6_K: good = f16_finite(p + 208); break;
		default: good = f16_finite(p); break; /* Q4_0, Q5_0, Q8_0: d first */
		}
		if (!good)
			return b;
	}
	return -1;
}

/* ---- reference quantisers ------------------------------------------------- */

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Q5_0 (offset 16, the largest magnitude maps to -16) and Q5_1 (min + 31
 * steps), GGML's reference formulas. */
static void quantize_q5(const float *src, uint8_t *p, int has_min, int64_t nb)
{
	size_t bb = has_min ? sizeof(struct skipper_block_q5_1) : sizeof(struct skipper_block_q5_0);
	for (int64_t b = 0; b < nb; b++, p += bb) {
		const float *x = src + b * SKIPPER_QK;
		float lo = x[0], hi = x[0], big = 0, d, off;
		for (int j = 0; j < SKIPPER_QK; j++) {
			lo = minf(lo, x[j]);
			hi = maxf(hi, x[j]);
			if (fabsf(x[j]) > fabsf(big))
				big = x[j];
		}
		if (has_min) {
			d = (hi - lo) / 31.0f;
			off = 0.5f;
			st16(p + 2, skipper_f32_to_fp16(lo));
		} else {
			d = big / -16.0f;
			off = 16.5f;
			lo = 0.0f;
		}
		float id = inverse(d);
		uint8_t *qh = p + (has_min ? 4 : 2), *qs = qh + 4;
		uint32_t h = 0;
		st16(p, skipper_f32_to_fp16(d));
		for (int j = 0; j < SKIPPER_QK / 2; j++) {
			int a = clampi((int)floorf((x[j] - lo) * id + off), 0, 31);
			int c = clampi((int)floorf((x[j + SKIPPER_QK / 2] - lo) * id + off), 0, 31);
			qs[j] = (uint8_t)((a & 0xf) | (c & 0xf) << 4);
			h |= (uint32_t)(a >> 4) << j | (uint32_t)(c >> 4) << (j + 16);
		}
		memcpy(qh, &h, 4);
	}
}

/* Q4_K / Q5_K: per sub-block of 32 a min/max fit, scales and mins rounded
 * to 6 bits of the super-block's d and dmin. */
static void quantize_q45_K(const float *src, uint8_t *p, int five, int64_t nb)
{
	size_t bb = five ? sizeof(struct skipper_block_q5_K) : sizeof(struct skipper_block_q4_K);
	int qmax = five ? 31 : 15;
	for (int64_t b = 0; b < nb; b++, p += bb, src += SKIPPER_QK_K) {
		float scale[8], min[8], smax = 0, mmax = 0;
		uint8_t sc[8], m[8], *scales = p + 4, *qh = p + 16, *qs = five ? qh + SKIPPER_QK_K / 8 : qh;
		for (int j = 0; j < 8; j++) {
			float lo = 0, hi = src[32 * j]; /* the min is never above 0: x = d*q - m, m >= 0 */
			for (int l = 0; l < 32; l++) {
				lo = minf(lo, src[32 * j + l]);
				hi = maxf(hi, src[32 * j + l]);
			}
			scale[j] = (hi - lo) / (float)qmax;
			min[j] = -lo;
			smax = maxf(smax, scale[j]);
			mmax = maxf(mmax, min[j]);
		}
		float d = skipper_fp16_to_f32(skipper_f32_to_fp16(smax / 63.0f));
		float dmin = skipper_fp16_to_f32(skipper_f32_to_fp16(mmax / 63.0f));
		st16(p, skipper_f32_to_fp16(d));
		st16(p + 2, skipper_f32_to_fp16(dmin));
		memset(scales, 0, 12);
		for (int j = 0; j < 8; j++) {
			sc[j] = (uint8_t)clampi(d > 0 ? round_away(scale[j] / d) : 0, 0, 63);
			m[j] = (uint8_t)clampi(dmin > 0 ? round_away(min[j] / dmin) : 0, 0, 63);
			if (j < 4) {
				scales[j] |= sc[j];
				scales[j + 4] |= m[j];
			} else {
				scales[j + 4] = (uint8_t)((sc[j] & 0xf) | (m[j] & 0xf) << 4);
				scales[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
				scales[j] |= (uint8_t)((m[j] >> 4) << 6);
			}
		}
		if (five)
			memset(qh, 0, SKIPPER_QK_K / 8);
		for (int j = 0; j < 8; j++) {
			float d1 = d * sc[j], m1 = dmin * m[j], id = d1 > 0 ? inverse(d1) : 0.0f;
			for (int l = 0; l < 32; l++) {
				int q = clampi(round_away((src[32 * j + l] + m1) * id), 0, qmax);
				uint8_t *byte = &qs[32 * (j / 2) + l];
				*byte = (uint8_t)(j & 1 ? (*byte & 0x0f) | (q & 0xf) << 4 : (*byte & 0xf0) | (q & 0xf));
				if (five)
					qh[l] |= (uint8_t)((q >> 4) << j);
			}
		}
	}
}

/* Q6_K: per sub-block of 16 a symmetric fit (largest magnitude -> -32),
 * int8 scales of the super-block's d. */
static void quantize_q6_K(const float *src, uint8_t *p, int64_t nb)
{
	for (int64_t b = 0; b < nb; b++, p += sizeof(struct skipper_block_q6_K), src += SKIPPER_QK_K) {
		float scale[16], smax = 0;
		uint8_t *ql = p, *qh = p + 128;
		int8_t *sc = (int8_t *)(p + 192);
		for (int j = 0; j < 16; j++) {
			float big = 0;
			for (int l = 0; l < 16; l++)
				if (fabsf(src[16 * j + l]) > fabsf(big))
					big = src[16 * j + l];
			scale[j] = big / -32.0f;
			if (fabsf(scale[j]) > fabsf(smax))
				smax = scale[j];
		}
		float d = skipper_fp16_to_f32(skipper_f32_to_fp16(smax / -127.0f));
		st16(p + 208, skipper_f32_to_fp16(d));
		memset(ql, 0, 128 + 64);
		for (int j = 0; j < 16; j++) {
			sc[j] = (int8_t)clampi(d != 0 ? round_away(scale[j] / d) : 0, -128, 127);
			float d1 = d * sc[j], id = inverse(d1);
			for (int l = 0; l < 16; l++) {
				int e = 16 * j + l, h = e / 128, k = (e % 128) / 32, i = e % 32;
				int q = clampi(round_away(src[e] * id) + 32, 0, 63);
				ql[64 * h + i + 32 * (k & 1)] |= (uint8_t)((q & 0xf) << (k >= 2 ? 4 : 0));
				qh[32 * h + i] |= (uint8_t)((q >> 4) << (2 * k));
			}
		}
	}
}

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
			float amax = 0; /* never NaN: the compare is fmaxf's result, and vectorises */
			for (int j = 0; j < SKIPPER_QK; j++)
				amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
			float d = amax / 127.0f, id = inverse(d);
			st16(p, skipper_f32_to_fp16(d));
			for (int j = 0; j < SKIPPER_QK; j++)
				p[2 + j] = (uint8_t)(int8_t)clampi(round_away(x[j] * id), -127, 127);
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
			float d = big / -8.0f, id = inverse(d);
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
				lo = minf(lo, x[j]);
				hi = maxf(hi, x[j]);
			}
			float d = (hi - lo) / 15.0f, id = inverse(d);
			st16(p, skipper_f32_to_fp16(d));
			st16(p + 2, skipper_f32_to_fp16(lo));
			for (int j = 0; j < SKIPPER_QK / 2; j++) {
				int a = clampi((int)floorf((x[j] - lo) * id + 0.5f), 0, 15);
				int c = clampi((int)floorf((x[j + SKIPPER_QK / 2] - lo) * id + 0.5f), 0, 15);
				p[4 + j] = (uint8_t)(a | c << 4);
			}
		}
		break;
	case SKIPPER_Q5_0:
	case SKIPPER_Q5_1:
		quantize_q5(src, p, type == SKIPPER_Q5_1, n / SKIPPER_QK);
		break;
	case SKIPPER_Q4_K:
	case SKIPPER_Q5_K:
		quantize_q45_K(src, p, type == SKIPPER_Q5_K, n / SKIPPER_QK_K);
		break;
	case SKIPPER_Q6_K:
		quantize_q6_K(src, p, n / SKIPPER_QK_K);
		break;
	default:
		return 0;
	}
	return skipper_dtype_row_bytes(type, n);
}
