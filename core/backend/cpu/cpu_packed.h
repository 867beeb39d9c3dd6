/* The packed weight layouts of the AVX-512 table (cpu_kernels.pack) and the
 * pieces of their kernels: unpacking a sub-block's weights, its scales,
 * and the per-row closing arithmetic. Kept apart from the kernels so that
 * another way of forming the integer dot products (AMX tiles were tried:
 * see HACKING.md) can reuse the rest and give the same bits. Included by
 * cpu_kernels_avx512.c.
 *
 * Q4_K, one super-block of a group of 16 rows (2368 bytes; 2304 as GGUF
 * has them):
 *   [0, 2048)     4-byte words, word (8 p + g) * 16 + c = bytes qs[32 p + 4 g, +4)
 *                 of row c: low nibbles elements 64 p + 4 g + (0..3)
 *                 (sub-block 2 p), high nibbles 32 further (sub-block 2 p + 1)
 *   [2048, 2176)  the 6-bit scale of sub-block s of row c at 16 s + c
 *   [2176, 2304)  the mins, likewise
 *   [2304, 2336)  d of the 16 rows (fp16), [2336, 2368) dmin
 * Q6_K, likewise (3360 bytes, as in GGUF):
 *   [0, 2048)     word t * 16 + c = bytes ql[4 t, +4) of row c
 *   [2048, 3072)  word u * 16 + c = bytes qh[4 u, +4) of row c
 *   [3072, 3328)  the scale of sub-block s of row c at 16 s + c
 *   [3328, 3360)  d of the 16 rows (fp16)
 *   (in each half of 128 elements, GGUF's bytes ql[l] and ql[32 + l] hold
 *   the low 4 bits of elements l, 64 + l and 32 + l, 96 + l, and qh[l]
 *   the top 2 bits of l, 32 + l, 64 + l, 96 + l, l < 32)
 * One vector holds 4 elements of 16 rows (also the layout of an AMX B
 * tile): vpdpbusd against one broadcast word of the activations gives 16
 * outputs at once, and a sub-block's scale is one multiply across the 16
 * rows (the GGUF layout needs a shuffle of the scales and a horizontal
 * sum per row). */
#ifndef SKIPPER_CPU_PACKED_H
#define SKIPPER_CPU_PACKED_H

#include <immintrin.h>
#include <string.h>

#include "cpu_kernels.h"

#define PK_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define PK_INL __attribute__((always_inline)) inline

#define PK_BLOCK 2368
#define PK_SC 2048
#define PK_MIN 2176
#define PK_D 2304
#define PK_DMIN 2336

#define P6_BLOCK 3360
#define P6_QH 2048
#define P6_SC 3072
#define P6_D 3328

static PK_TGT PK_INL const struct cpu_q8k *pk_xrow(const char *x, size_t xs, int r, int64_t b)
{
	return (const struct cpu_q8k *)(x + (size_t)r * xs) + b;
}

static PK_TGT PK_INL __m512i pk_bcast32(const void *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return _mm512_set1_epi32(v);
}

static PK_TGT PK_INL __m512 pk_f16x16(const uint8_t *p)
{
	return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

/* the weights stream ahead of the arithmetic: every line of a block */
static PK_TGT PK_INL void pk_prefetch(const uint8_t *p, int bytes)
{
	for (int i = 0; i < bytes; i += 64)
		_mm_prefetch((const char *)p + i, _MM_HINT_T0);
}

/* Q4_K sub-block j of a group's super-block: wq[g] = its elements 4 g ..
 * 4 g + 3 of the 16 rows as bytes; returns the 16 rows' d * scale. The
 * high nibbles are left in place (16 q): their scale carries 1/16. */
static PK_TGT PK_INL __m512 pk_q4_sub(const uint8_t *w, int j, __m512 dv, __m512i wq[8])
{
	const uint8_t *q = w + (j / 2) * 512;
	__m512i mask = _mm512_set1_epi8(j & 1 ? (char)0xF0 : 0x0F);
#pragma GCC unroll 8
	for (int g = 0; g < 8; g++)
		wq[g] = _mm512_and_si512(_mm512_loadu_si512((const void *)(q + 64 * g)), mask);
	__m512 sc = _mm512_mul_ps(dv, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(w + PK_SC + 16 * j)))));
	return j & 1 ? _mm512_mul_ps(sc, _mm512_set1_ps(1.0f / 16)) : sc;
}

/* the mins: mins 2 i and 2 i + 1, as the 16-bit halves of a lane, meet
 * the activation sums of elements [64 i, +32) and [64 i + 32, +32) (bsum32)
 * in one vpdpwssd of pk_close */
static PK_TGT PK_INL void pk_q4_mins(const uint8_t *w, __m512i mp[4])
{
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++) {
		__m512i m0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(w + PK_MIN + 32 * i)));
		__m512i m1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(w + PK_MIN + 32 * i + 16)));
		mp[i] = _mm512_or_si512(m0, _mm512_slli_epi32(m1, 16));
	}
}

/* A row's super-block done: tmp (the scaled sub-block dots) less scale *
 * (pairs . sums: n vpdpwssd of the 16-bit pairs of mins or scales against
 * the row's pairs of sums), times the row's d, onto acc. */
static PK_TGT PK_INL __m512 pk_close(const __m512i *pairs, int n, const int16_t *sums, __m512 scale,
                                     const struct cpu_q8k *xb, __m512 tmp, __m512 acc)
{
	__m512i ms = _mm512_setzero_si512();
#pragma GCC unroll 8
	for (int i = 0; i < n; i++)
		ms = _mm512_dpwssd_epi32(ms, pairs[i], pk_bcast32(sums + 2 * i));
	tmp = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), scale, tmp);
	return _mm512_fmadd_ps(tmp, _mm512_set1_ps(xb->d), acc);
}

/* Q6_K step (0..7) of a group's super-block: half h = step / 4, elements
 * l in [16 e, +16) (e = step / 2 % 2) of two quarters, from bytes ql[l]
 * (st = step % 2 = 0: quarters 0 and 2) or ql[32 + l] (st = 1: quarters 1
 * and 3), their top bits from qh[l]. va / vb: elements 4 g .. 4 g + 3 of
 * sub-blocks *sa / *sb as the values 0..63; *sca / *scb their d * scale. */
static PK_TGT PK_INL void pk_q6_step(const uint8_t *w, int step, __m512 dv, __m512i va[4], __m512i vb[4], int *sa,
                                     int *sb, __m512 *sca, __m512 *scb)
{
	const __m512i low = _mm512_set1_epi8(0x0F), m33 = _mm512_set1_epi8(0x33);
	int h = step / 4, e = step / 2 % 2, st = step % 2;
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++) {
		__m512i ql = _mm512_loadu_si512((const void *)(w + (16 * h + 8 * st + 4 * e + g) * 64));
		__m512i qh = _mm512_loadu_si512((const void *)(w + P6_QH + (8 * h + 4 * e + g) * 64));
		/* the two top bits of this step's two quarters at bits 0-1 and 4-5 */
		qh = _mm512_and_si512(st ? _mm512_srli_epi16(qh, 2) : qh, m33);
		/* (a & 0x0F) | (b & 0xF0), b's bits 6-7 being 0 */
		va[g] = _mm512_ternarylogic_epi32(ql, _mm512_slli_epi16(qh, 4), low, 0xE4);
		vb[g] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), qh, low, 0xE4);
	}
	*sa = 8 * h + 2 * st + e;
	*sb = 8 * h + 2 * (st + 2) + e;
	*sca = _mm512_mul_ps(dv, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(w + P6_SC + 16 * *sa)))));
	*scb = _mm512_mul_ps(dv, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(w + P6_SC + 16 * *sb)))));
}

/* the offset 32: scales 2 j and 2 j + 1 as the 16-bit halves of a lane
 * meet the sums of sub-blocks 2 j and 2 j + 1 (bsums) in one vpdpwssd of
 * pk_close */
static PK_TGT PK_INL void pk_q6_offsets(const uint8_t *w, __m512i sp[8])
{
#pragma GCC unroll 8
	for (int j = 0; j < 8; j++) {
		__m512i s0 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(w + P6_SC + 32 * j)));
		__m512i s1 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(w + P6_SC + 32 * j + 16)));
		sp[j] = _mm512_or_si512(_mm512_and_si512(s0, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(s1, 16));
	}
}

#endif
