/* AVX-512 (F, BW, VL, DQ) + VNNI kernels for the quantised types, chosen
 * at run time on CPUs that have them (cpu_kernels_select), and attention
 * (scores, exp, value sums); the float types are the AVX2 ones. A super-block's weights are unpacked once
 * into 64-element vectors and applied to up to 8 activation rows from
 * registers, so a verification batch reads each weight byte once.
 *
 * Batch invariance: each row owns an integer and a float accumulator and
 * sees the same instruction sequence whatever the number of rows in the
 * pass (the row loop is a template instantiated for 1..8 rows); integer
 * sums are exact, and the float accumulation order per row is fixed. */
#include "build-config.h"

#ifdef SKIPPER_X86_64

#include <immintrin.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_packed.h"
#include "model/quant.h"

#pragma GCC optimize("fp-contract=off")

#define TGT PK_TGT
#define INL PK_INL
#define MAXR 8 /* activation rows per pass over the weights */
#ifndef PF_AHEAD
#define PF_AHEAD 3072 /* bytes of weights prefetched ahead of the one in use */
#endif

static TGT INL float hsum16(__m512 v)
{
	__m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* Q4_K / Q5_K scales and mins of one super-block: sc16 gets the 8 scales as
 * 16-bit lanes, mins2 the 8 mins each twice (to meet the 16 activation
 * sums of 16 elements). The 12 bytes hold, per sub-block j < 4, the low 6
 * bits of scale j in byte j and of min j in byte j + 4; for j >= 4 the low
 * nibbles in byte j + 4 and the top two bits in bits 6-7 of bytes j - 4
 * (scale) and j (min). */
static TGT INL void k_scales(const uint8_t *q, __m128i *sc16, __m256i *mins2)
{
	uint32_t u0, u1, u2;
	memcpy(&u0, q, 4);
	memcpy(&u1, q + 4, 4);
	memcpy(&u2, q + 8, 4);
	__m128i all = _mm_set_epi32((int)(((u2 >> 4) & 0x0f0f0f0f) | ((u1 >> 6) & 0x03030303) << 4), /* mins 4-7 */
	                            (int)(u1 & 0x3f3f3f3f),                                       /* mins 0-3 */
	                            (int)((u2 & 0x0f0f0f0f) | ((u0 >> 6) & 0x03030303) << 4),     /* scales 4-7 */
	                            (int)(u0 & 0x3f3f3f3f));                                      /* scales 0-3 */
	*sc16 = _mm_cvtepu8_epi16(all);
	__m128i m = _mm_cvtepu8_epi16(_mm_srli_si128(all, 8));
	*mins2 = _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m));
}

/* Q4_K / Q5_K, R rows. The 64 bytes of nibbles at qs + 64 h hold elements
 * [128 h, +32) and [128 h + 64, +32) in their low nibbles and the next
 * 32 of each in the high ones; two 128-bit lane shuffles put the four
 * 64-element chunks in element order, so activation rows are read as
 * they are. */
static TGT INL void q45_K_rows(int five, int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y,
                               size_t ys)
{
	size_t bb = five ? sizeof(struct skipper_block_q5_K) : sizeof(struct skipper_block_q4_K);
	const __m512i m4 = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
	/* chunk c covers sub-blocks 2c (16-bit lanes 0-15) and 2c + 1: the
	 * byte shuffle that spreads their scales over those lanes, within each
	 * 128-bit lane of a broadcast of the 8 scales */
	const __m512i pick0 = _mm512_set_epi64(0x0302030203020302, 0x0302030203020302, 0x0302030203020302,
	                                       0x0302030203020302, 0x0100010001000100, 0x0100010001000100,
	                                       0x0100010001000100, 0x0100010001000100);
	const __m512i step = _mm512_set1_epi8(4);
	const __m512i pick1 = _mm512_add_epi8(pick0, step), pick2 = _mm512_add_epi8(pick1, step),
	              pick3 = _mm512_add_epi8(pick2, step);
	const __m512i sh0 = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(1), 1);
	const __m512i two = _mm512_set1_epi16(2);
	__m512 acc[MAXR];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++, w += bb) {
		const uint8_t *qh = w + 16, *qs = five ? qh + 32 : qh;
		uint16_t d16, m16;
		__m128i sc16;
		__m256i mins2;
		/* the stream of weights runs ahead of the arithmetic */
		_mm_prefetch((const char *)w + PF_AHEAD, _MM_HINT_T0);
		_mm_prefetch((const char *)w + PF_AHEAD + 64, _MM_HINT_T0);
		_mm_prefetch((const char *)w + PF_AHEAD + 128, _MM_HINT_T0);
		memcpy(&d16, w, 2);
		memcpy(&m16, w + 2, 2);
		k_scales(w + 4, &sc16, &mins2);
		__m512i sc = _mm512_broadcast_i32x4(sc16);
		__m512i z0 = _mm512_loadu_si512((const void *)qs), z1 = _mm512_loadu_si512((const void *)(qs + 64));
		__m512i lo0 = _mm512_and_si512(z0, m4), hi0 = _mm512_and_si512(_mm512_srli_epi16(z0, 4), m4);
		__m512i lo1 = _mm512_and_si512(z1, m4), hi1 = _mm512_and_si512(_mm512_srli_epi16(z1, 4), m4);
		__m512i q0 = _mm512_shuffle_i64x2(lo0, hi0, _MM_SHUFFLE(1, 0, 1, 0));
		__m512i q1 = _mm512_shuffle_i64x2(lo0, hi0, _MM_SHUFFLE(3, 2, 3, 2));
		__m512i q2 = _mm512_shuffle_i64x2(lo1, hi1, _MM_SHUFFLE(1, 0, 1, 0));
		__m512i q3 = _mm512_shuffle_i64x2(lo1, hi1, _MM_SHUFFLE(3, 2, 3, 2));
		if (five) {
			/* the fifth bit of element 64 c + i (i < 32) is bit 2c of qh[i],
			 * of 64 c + 32 + i bit 2c + 1 */
			__m512i hb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)qh)), sh = sh0;
			q0 = _mm512_or_si512(q0, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sh), one), 4));
			sh = _mm512_add_epi16(sh, two);
			q1 = _mm512_or_si512(q1, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sh), one), 4));
			sh = _mm512_add_epi16(sh, two);
			q2 = _mm512_or_si512(q2, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sh), one), 4));
			sh = _mm512_add_epi16(sh, two);
			q3 = _mm512_or_si512(q3, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sh), one), 4));
		}
		__m512i s0 = _mm512_shuffle_epi8(sc, pick0), s1 = _mm512_shuffle_epi8(sc, pick1);
		__m512i s2 = _mm512_shuffle_epi8(sc, pick2), s3 = _mm512_shuffle_epi8(sc, pick3);
		__m512 dw = _mm512_set1_ps(_cvtsh_ss(d16)), dmw = _mm512_set1_ps(_cvtsh_ss(m16));
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			const struct cpu_q8k *xb = pk_xrow(x, xs, r, b);
			__m512i sumi = _mm512_dpwssd_epi32(_mm512_setzero_si512(),
			                                   _mm512_maddubs_epi16(q0, _mm512_load_si512((const void *)xb->qs)), s0);
			sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q1, _mm512_load_si512((const void *)(xb->qs + 64))), s1);
			sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q2, _mm512_load_si512((const void *)(xb->qs + 128))), s2);
			sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q3, _mm512_load_si512((const void *)(xb->qs + 192))), s3);
			__m256i summ = _mm256_madd_epi16(mins2, _mm256_load_si256((const __m256i *)xb->bsums));
			__m512 dx = _mm512_set1_ps(xb->d);
			acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(dw, dx), acc[r]);
			acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(summ)), _mm512_mul_ps(dmw, dx),
			                          acc[r]);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		y[(size_t)r * ys] = hsum16(acc[r]);
}

/* Q6_K, R rows. Per half h: the 64 bytes ql + 64 h give elements
 * [128 h, +64) in their low nibbles and [128 h + 64, +64) in the high
 * ones; the two top bits of element 128 h + 32 k + i sit at bit 2k of
 * qh[32 h + i]. Values are 0..63; the offset 32 comes off through the
 * activation sums. Sub-blocks of 16 elements: lanes of 8 16-bit pairs. */
static TGT INL void q6_K_rows(int64_t nb, const struct skipper_block_q6_K *w, const char *x, size_t xs, int R,
                              float *y, size_t ys)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3);
	const __m512i sh_lo = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
	const __m512i sh_hi = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
	/* chunk c covers sub-blocks 4c .. 4c + 3, 8 16-bit lanes each: the byte
	 * shuffle that spreads their scales, within each 128-bit lane of a
	 * broadcast of the 8 scales of its half */
	const __m512i pick0 = _mm512_set_epi64(0x0706070607060706, 0x0706070607060706, 0x0504050405040504,
	                                       0x0504050405040504, 0x0302030203020302, 0x0302030203020302,
	                                       0x0100010001000100, 0x0100010001000100);
	const __m512i pick1 = _mm512_add_epi8(pick0, _mm512_set1_epi8(8));
	__m512 acc[MAXR];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		const char *pf = (const char *)(w + b) + PF_AHEAD;
		_mm_prefetch(pf, _MM_HINT_T0);
		_mm_prefetch(pf + 64, _MM_HINT_T0);
		_mm_prefetch(pf + 128, _MM_HINT_T0);
		_mm_prefetch(pf + 192, _MM_HINT_T0);
		__m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales));
		/* scales of half 0 (sub-blocks 0-7) and half 1 (8-15) in every 128-bit lane */
		__m512i sch0 = _mm512_broadcast_i32x4(_mm256_castsi256_si128(sc16));
		__m512i sch1 = _mm512_broadcast_i32x4(_mm256_extracti128_si256(sc16, 1));
		__m512i s0 = _mm512_shuffle_epi8(sch0, pick0), s1 = _mm512_shuffle_epi8(sch0, pick1);
		__m512i s2 = _mm512_shuffle_epi8(sch1, pick0), s3 = _mm512_shuffle_epi8(sch1, pick1);
		__m512i ql0 = _mm512_loadu_si512((const void *)w[b].ql), ql1 = _mm512_loadu_si512((const void *)(w[b].ql + 64));
		__m512i qh0 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)w[b].qh));
		__m512i qh1 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w[b].qh + 32)));
		__m512i q0 = _mm512_or_si512(_mm512_and_si512(ql0, m4),
		                             _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh0, sh_lo), m2), 4));
		__m512i q1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql0, 4), m4),
		                             _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh0, sh_hi), m2), 4));
		__m512i q2 = _mm512_or_si512(_mm512_and_si512(ql1, m4),
		                             _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh1, sh_lo), m2), 4));
		__m512i q3 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql1, 4), m4),
		                             _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh1, sh_hi), m2), 4));
		__m512 dw = _mm512_set1_ps(_cvtsh_ss(w[b].d));
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			const struct cpu_q8k *xb = pk_xrow(x, xs, r, b);
			__m256i corr = _mm256_madd_epi16(sc16, _mm256_load_si256((const __m256i *)xb->bsums));
			__m512i sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(_mm256_slli_epi32(corr, 5)));
			sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q0, _mm512_load_si512((const void *)xb->qs)), s0);
			sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q1, _mm512_load_si512((const void *)(xb->qs + 64))), s1);
			sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q2, _mm512_load_si512((const void *)(xb->qs + 128))), s2);
			sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q3, _mm512_load_si512((const void *)(xb->qs + 192))), s3);
			acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(dw, _mm512_set1_ps(xb->d)), acc[r]);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		y[(size_t)r * ys] = hsum16(acc[r]);
}

/* The 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) against struct
 * cpu_q8 rows: each block's values as unsigned bytes u (Q8_0's signed ones
 * offset by 128), one VNNI dot product per row, the offset taken off
 * through the row's block sum (off * sum) or, with a min, added as m * s.
 * 256-bit vectors: a block is 32 values. */
enum { B_Q4_0, B_Q4_1, B_Q5_0, B_Q5_1, B_Q8_0 };

static TGT INL __m256i nibbles(const uint8_t *qs)
{
	__m128i b = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0F);
	return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

/* 32 bits -> 32 bytes, byte i = 0x10 where bit i is set (Q5 fifth bits) */
static TGT INL __m256i fifth_bits(const uint8_t *qh)
{
	uint32_t h;
	memcpy(&h, qh, 4);
	return _mm256_maskz_mov_epi8(h, _mm256_set1_epi8(0x10));
}

static TGT INL void blk_rows(int kind, int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y,
                             size_t ys)
{
	static const size_t bbs[] = { sizeof(struct skipper_block_q4_0), sizeof(struct skipper_block_q4_1),
		                      sizeof(struct skipper_block_q5_0), sizeof(struct skipper_block_q5_1),
		                      sizeof(struct skipper_block_q8_0) };
	const size_t bb = bbs[kind];
	const int has_min = kind == B_Q4_1 || kind == B_Q5_1;
	const float off = kind == B_Q4_0 ? -8.0f : kind == B_Q5_0 ? -16.0f : kind == B_Q8_0 ? -128.0f : 0.0f;
	__m256 acc[MAXR];
	float offacc[MAXR];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++) {
		acc[r] = _mm256_setzero_ps();
		offacc[r] = 0.0f;
	}
	for (int64_t b = 0; b < nb; b++, w += bb) {
		uint16_t d16, m16 = 0;
		__m256i u;
		_mm_prefetch((const char *)w + PF_AHEAD, _MM_HINT_T0);
		memcpy(&d16, w, 2);
		if (has_min)
			memcpy(&m16, w + 2, 2);
		switch (kind) {
		case B_Q4_0: u = nibbles(w + 2); break;
		case B_Q4_1: u = nibbles(w + 4); break;
		case B_Q5_0: u = _mm256_or_si256(nibbles(w + 6), fifth_bits(w + 2)); break;
		case B_Q5_1: u = _mm256_or_si256(nibbles(w + 8), fifth_bits(w + 4)); break;
		default: u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(w + 2)), _mm256_set1_epi8((char)0x80));
		}
		float dw = _cvtsh_ss(d16), mw = _cvtsh_ss(m16);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + b;
			__m256i t = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, _mm256_loadu_si256((const __m256i *)xb->qs));
			float dd = dw * xb->d;
			acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(dd), acc[r]);
			offacc[r] += has_min ? mw * xb->s : dd * (off * (float)xb->sum);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++) {
		__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
		s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
		s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
		y[(size_t)r * ys] = _mm_cvtss_f32(s4) + offacc[r];
	}
}

/* Walk weight rows; for each, activation rows MAXR at a time (the tail as
 * one smaller pass). */
#define AVX512_MATMUL(NAME, BODY)                                                            \
	static TGT void NAME(int64_t k, const void *w, size_t wrb, int nc, const void *x,   \
	                     size_t xs, int nr, float *y, size_t ys)                         \
	{                                                                                    \
		for (int c = 0; c < nc; c++) {                                               \
			const void *wr = (const char *)w + (size_t)c * wrb;                  \
			int r = 0;                                                           \
			for (; r + MAXR <= nr; r += MAXR)                                    \
				BODY(MAXR);                                                  \
			switch (nr - r) {                                                    \
			case 7: BODY(7); break;                                              \
			case 6: BODY(6); break;                                              \
			case 5: BODY(5); break;                                              \
			case 4: BODY(4); break;                                              \
			case 3: BODY(3); break;                                              \
			case 2: BODY(2); break;                                              \
			case 1: BODY(1); break;                                              \
			}                                                                    \
		}                                                                            \
	}

#define XR ((const char *)x + (size_t)r * xs)
#define YR (y + (size_t)r * ys + c)
#define B_Q4_K(R) q45_K_rows(0, k / 256, wr, XR, xs, R, YR, ys)
#define B_Q5_K(R) q45_K_rows(1, k / 256, wr, XR, xs, R, YR, ys)
#define B_Q6_K(R) q6_K_rows(k / 256, wr, XR, xs, R, YR, ys)

#define B_Q40(R) blk_rows(B_Q4_0, k / 32, wr, XR, xs, R, YR, ys)
#define B_Q41(R) blk_rows(B_Q4_1, k / 32, wr, XR, xs, R, YR, ys)
#define B_Q50(R) blk_rows(B_Q5_0, k / 32, wr, XR, xs, R, YR, ys)
#define B_Q51(R) blk_rows(B_Q5_1, k / 32, wr, XR, xs, R, YR, ys)
#define B_Q80(R) blk_rows(B_Q8_0, k / 32, wr, XR, xs, R, YR, ys)

AVX512_MATMUL(mm_q4_0, B_Q40)
AVX512_MATMUL(mm_q4_1, B_Q41)
AVX512_MATMUL(mm_q5_0, B_Q50)
AVX512_MATMUL(mm_q5_1, B_Q51)
AVX512_MATMUL(mm_q8_0, B_Q80)
AVX512_MATMUL(mm_q4_K, B_Q4_K)
AVX512_MATMUL(mm_q5_K, B_Q5_K)
AVX512_MATMUL(mm_q6_K, B_Q6_K)

/* ---- Q4_K, Q6_K, Q5_0, Q4_1 and Q8_0 in the packed layouts of cpu_packed.h ---- */

/* 16 weight rows (one packed group) against R activation rows. Per row and
 * super-block: the integer dot of each sub-block (exact), times its scale
 * in float, in sub-block order; the mins' term; times the row's d.
 * The packed blocks are read in address order, and each asks for the
 * lines PK_AHEAD bytes on (pk_prefetch). */
static TGT INL void q4_K_packed_rows(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y,
                                     size_t ys)
{
	__m512 acc[MAXR];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++, w += PK_BLOCK) {
		if (PK_BURST(R))
			pk_prefetch(w, PK_BLOCK);
		__m512 tmp[MAXR], dv = pk_f16x16(w + PK_D);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++)
			tmp[r] = _mm512_setzero_ps();
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++) {
			__m512i wq[8];
			if (PK_SPREAD(R))
				pk_prefetch_part(w, PK_BLOCK, j, 8);
			__m512 sc = pk_q4_sub(w, j, dv, wq);
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) {
				const int8_t *xq = pk_xrow(x, xs, r, b)->qs + 32 * j;
				__m512i d0 = _mm512_setzero_si512(), d1 = _mm512_setzero_si512();
#pragma GCC unroll 4
				for (int g = 0; g < 4; g++) {
					d0 = _mm512_dpbusd_epi32(d0, wq[g], pk_bcast32(xq + 4 * g));
					d1 = _mm512_dpbusd_epi32(d1, wq[g + 4], pk_bcast32(xq + 16 + 4 * g));
				}
				tmp[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1)), sc, tmp[r]);
			}
		}
		__m512i mp[4];
		pk_q4_mins(w, mp);
		__m512 mv = pk_f16x16(w + PK_DMIN);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			const struct cpu_q8k *xb = pk_xrow(x, xs, r, b);
			acc[r] = pk_close(mp, 4, xb->bsum32, mv, xb, tmp[r], acc[r]);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		_mm512_storeu_ps(y + (size_t)r * ys, acc[r]);
}

/* 16 Q6_K rows (one packed group) against R activation rows: per row and
 * super-block, the integer dot of each 16-element sub-block of the values
 * 0..63, times its scale in float, in the order pk_q6_step visits them;
 * the offset 32 through the activations' sums; times the row's d. */
static TGT INL void q6_K_packed_rows(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y,
                                     size_t ys)
{
	__m512 acc[MAXR];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++, w += P6_BLOCK) {
		if (PK_BURST(R))
			pk_prefetch(w, P6_BLOCK);
		__m512 tmp[MAXR], dv = pk_f16x16(w + P6_D);
#pragma GCC unroll 8
		for (int r = 0; r < R; r++)
			tmp[r] = _mm512_setzero_ps();
#pragma GCC unroll 8
		for (int step = 0; step < 8; step++) {
			__m512i va[4], vb[4];
			int sa, sb;
			__m512 sca, scb;
			if (PK_SPREAD(R))
				pk_prefetch_part(w, P6_BLOCK, step, 8);
			pk_q6_step(w, step, dv, va, vb, &sa, &sb, &sca, &scb);
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) {
				const int8_t *xq = pk_xrow(x, xs, r, b)->qs;
				__m512i da = _mm512_setzero_si512(), db = _mm512_setzero_si512();
#pragma GCC unroll 4
				for (int g = 0; g < 4; g++) {
					da = _mm512_dpbusd_epi32(da, va[g], pk_bcast32(xq + 16 * sa + 4 * g));
					db = _mm512_dpbusd_epi32(db, vb[g], pk_bcast32(xq + 16 * sb + 4 * g));
				}
				tmp[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(da), sca, tmp[r]);
				tmp[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(db), scb, tmp[r]);
			}
		}
		__m512i sp[8];
		pk_q6_offsets(w, sp);
		__m512 d32 = _mm512_mul_ps(dv, _mm512_set1_ps(32.0f));
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			const struct cpu_q8k *xb = pk_xrow(x, xs, r, b);
			acc[r] = pk_close(sp, 8, xb->bsums, d32, xb, tmp[r], acc[r]);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		_mm512_storeu_ps(y + (size_t)r * ys, acc[r]);
}

/* The four words of 16 rows at q as 8 vectors of their nibbles: wq[g] the
 * low ones (elements 4 g + b of a block), wq[g + 4] the high ones (16 + 4 g
 * + b). */
static PK_TGT PK_INL void pk_nibbles(const uint8_t *q, __m512i wq[8])
{
	const __m512i low = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++) {
		__m512i v = _mm512_loadu_si512((const void *)(q + 64 * g));
		wq[g] = _mm512_and_si512(v, low);
		wq[g + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
	}
}

/* Block h of a Q5_0 pair as 8 vectors of unsigned bytes, q + 16 * fifth
 * bit: wq[s] = elements 4 s .. 4 s + 3 of the 16 rows. */
static PK_TGT PK_INL void p5_unpack(const uint8_t *w, int h, __m512i wq[8])
{
	const uint8_t *q = w + P5_Q + P5_HALF * h;
	pk_nibbles(q + 64, wq);
#pragma GCC unroll 8
	for (int s = 0; s < 8; s++) {
		uint64_t m;
		memcpy(&m, q + 8 * s, 8);
		wq[s] = _mm512_mask_add_epi8(wq[s], _cvtu64_mask64(m), wq[s], _mm512_set1_epi8(0x10));
	}
}

enum { P32_Q8_0, P32_Q5_0, P32_Q4_1 };

/* 16 Q8_0, Q5_0 or Q4_1 rows (one packed group) against R activation rows:
 * per row and 32-element block, the integer dot of the unsigned bytes
 * (Q8_0: q + 128, Q5_0 and Q4_1: q as stored) with the activations, less
 * the offset (128, 16) times their sum (exact), times the two d, onto the
 * row's sums in block order; Q4_1's m times the activations' d * sum
 * after it. */
static TGT INL void blk32_packed_rows(int kind, int64_t nb, const uint8_t *w, const char *x, size_t xs, int R,
                                      float *y, size_t ys)
{
	const int bytes = kind == P32_Q5_0 ? P5_BLOCK : kind == P32_Q4_1 ? P41_BLOCK : P8_BLOCK;
	const int off = kind == P32_Q5_0 ? 16 : kind == P32_Q8_0 ? 128 : 0;
	__m512 acc[MAXR];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++, w += bytes) {
		if (PK_BURST(R))
			pk_prefetch(w, bytes);
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m512i wq[8];
			__m512 dv, mv = _mm512_setzero_ps();
			if (PK_SPREAD(R))
				pk_prefetch_part(w, bytes, h, 2);
			if (kind == P32_Q5_0) {
				p5_unpack(w, h, wq);
				dv = pk_f16x16(w + P5_D + 32 * h);
			} else if (kind == P32_Q4_1) {
				pk_nibbles(w + P41_Q + 256 * h, wq);
				dv = pk_f16x16(w + P41_D + 32 * h);
				mv = pk_f16x16(w + P41_M + 32 * h);
			} else {
#pragma GCC unroll 8
				for (int g = 0; g < 8; g++)
					wq[g] = _mm512_loadu_si512((const void *)(w + P8_Q + 512 * h + 64 * g));
				dv = pk_f16x16(w + P8_D + 32 * h);
			}
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) {
				const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + 2 * b + h;
				__m512i d0 = _mm512_setzero_si512(), d1 = _mm512_setzero_si512();
#pragma GCC unroll 4
				for (int g = 0; g < 4; g++) {
					d0 = _mm512_dpbusd_epi32(d0, wq[g], pk_bcast32(xb->qs + 4 * g));
					d1 = _mm512_dpbusd_epi32(d1, wq[g + 4], pk_bcast32(xb->qs + 16 + 4 * g));
				}
				__m512i dot = _mm512_add_epi32(d0, d1);
				if (off)
					dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(off * xb->sum));
				acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dv, _mm512_set1_ps(xb->d)),
				                         acc[r]);
				if (kind == P32_Q4_1)
					acc[r] = _mm512_fmadd_ps(mv, _mm512_set1_ps(xb->s), acc[r]);
			}
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		_mm512_storeu_ps(y + (size_t)r * ys, acc[r]);
}

#define BLK32_ROWS(NAME, KIND)                                                                                   \
	static TGT INL void NAME(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y, size_t ys) \
	{                                                                                                            \
		blk32_packed_rows(KIND, nb, w, x, xs, R, y, ys);                                                     \
	}
BLK32_ROWS(q8_0_packed_rows, P32_Q8_0)
BLK32_ROWS(q5_0_packed_rows, P32_Q5_0)
BLK32_ROWS(q4_1_packed_rows, P32_Q4_1)

/* w at a group of 16 rows, wrb = a group's bytes / 16; nc a multiple of 16;
 * SPAN elements per packed block */
#define PACKED_MATMUL(NAME, ROWS, SPAN)                                                                      \
	static TGT void NAME(int64_t k, const void *w, size_t wrb, int nc, const void *x, size_t xs, int nr, \
	                     float *y, size_t ys)                                                            \
	{                                                                                                    \
		for (int c = 0; c < nc; c += CPU_PACK_ROWS) {                                                \
			const uint8_t *wr = (const uint8_t *)w + (size_t)c * wrb;                            \
			int r = 0;                                                                           \
			for (; r + MAXR <= nr; r += MAXR)                                                    \
				ROWS(k / SPAN, wr, XR, xs, MAXR, YR, ys);                                    \
			switch (nr - r) {                                                                    \
			case 7: ROWS(k / SPAN, wr, XR, xs, 7, YR, ys); break;                                \
			case 6: ROWS(k / SPAN, wr, XR, xs, 6, YR, ys); break;                                \
			case 5: ROWS(k / SPAN, wr, XR, xs, 5, YR, ys); break;                                \
			case 4: ROWS(k / SPAN, wr, XR, xs, 4, YR, ys); break;                                \
			case 3: ROWS(k / SPAN, wr, XR, xs, 3, YR, ys); break;                                \
			case 2: ROWS(k / SPAN, wr, XR, xs, 2, YR, ys); break;                                \
			case 1: ROWS(k / SPAN, wr, XR, xs, 1, YR, ys); break;                                \
			}                                                                                    \
		}                                                                                            \
	}

PACKED_MATMUL(mm_q4_K_packed, q4_K_packed_rows, 256)
PACKED_MATMUL(mm_q6_K_packed, q6_K_packed_rows, 256)
PACKED_MATMUL(mm_q8_0_packed, q8_0_packed_rows, 64)
PACKED_MATMUL(mm_q5_0_packed, q5_0_packed_rows, 64)
PACKED_MATMUL(mm_q4_1_packed, q4_1_packed_rows, 64)

/* ---- attention ---- */

static TGT INL __mmask16 tail16(int left)
{
	return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

static TGT INL __m512 load_f16(const uint16_t *x, __mmask16 m)
{
	return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x));
}

/* keys widened to floats by the scores (d floats a row): a layout of this
 * file's, not of the cache */
#define KV_WIDE (-1)

/* Elements e .. e + 15 of a cache row of d elements (masked by m) as
 * floats: a q8_0 value times its block's scale is exact in a float. kt is
 * a constant wherever this is inlined. */
static TGT INL __m512 load_kv(const uint8_t *row, int kt, int d, int e, __mmask16 m)
{
	if (kt == KV_WIDE)
		return _mm512_maskz_loadu_ps(m, (const float *)row + e);
	if (kt == CPU_KV_F16)
		return load_f16((const uint16_t *)row + e, m);
	uint16_t h;
	memcpy(&h, row + d + 2 * (e / 32), sizeof h);
	__m512 x = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, row + e)));
	return _mm512_mul_ps(x, _mm512_cvtph_ps(_mm256_set1_epi16((short)h)));
}

/* Scores of G queries against one key, its 16-element pieces widened once
 * and met by every query; each score is its own 16-lane sum. */
static TGT INL void scores_g(const float *q, int G, const uint8_t *k, int kt, int d, float scale, float *s, int ss)
{
	__m512 acc[4];
	for (int g = 0; g < G; g++)
		acc[g] = _mm512_setzero_ps();
	for (int e = 0; e < d; e += 16) {
		__mmask16 m = tail16(d - e);
		__m512 kv = load_kv(k, kt, d, e, m);
		for (int g = 0; g < G; g++)
			acc[g] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + (size_t)g * d + e), kv, acc[g]);
	}
	for (int g = 0; g < G; g++)
		s[(size_t)g * ss] = hsum16(acc[g]) * scale;
}

/* hsum16's order for 16 vectors at once, in two parts: fold4 takes a
 * quarter of them through the first two stages (lane i plus lane i + 8,
 * then + 4), fold16 the four quarters through the last two (+ 2, + 1), so
 * that a score is the same bits whichever path computed it. Vector L of
 * quarter t ends in lane 4L + t. */
static TGT INL __m512 fold4(const __m512 *a)
{
	__m512 b0 = _mm512_add_ps(_mm512_shuffle_f32x4(a[0], a[1], 0x44), _mm512_shuffle_f32x4(a[0], a[1], 0xee));
	__m512 b1 = _mm512_add_ps(_mm512_shuffle_f32x4(a[2], a[3], 0x44), _mm512_shuffle_f32x4(a[2], a[3], 0xee));
	return _mm512_add_ps(_mm512_shuffle_f32x4(b0, b1, 0x88), _mm512_shuffle_f32x4(b0, b1, 0xdd));
}

static TGT INL __m512 fold16(const __m512 *c)
{
	__m512 d0 = _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x44), _mm512_shuffle_ps(c[0], c[1], 0xee));
	__m512 d1 = _mm512_add_ps(_mm512_shuffle_ps(c[2], c[3], 0x44), _mm512_shuffle_ps(c[2], c[3], 0xee));
	return _mm512_add_ps(_mm512_shuffle_ps(d0, d1, 0x88), _mm512_shuffle_ps(d0, d1, 0xdd));
}

/* Scores of G <= 6 queries against 16 keys with every running sum in a
 * register: per 16-element piece, 4 keys are widened into registers and
 * met by the G queries' pieces, also in registers, so the 4 G
 * multiply-adds read nothing more from memory (with the keys widened into
 * a scratch first, every multiply-add read one operand from it, and the
 * loads bound the pass). A quarter's 4 keys (4t .. 4t + 3, in address
 * order) are folded as soon as they are done; each sum still takes its
 * multiply-adds in element order. pf, where not NULL, is a block of 16 keys of pfs bytes each to
 * ask for meanwhile, a quarter per quarter: a long context's keys come
 * from memory, and asked for all at once the block's lines were slower. */
static TGT INL void scores_16(const float *q, int G, const uint8_t *k, int kt, size_t ks, int d, float scale,
                              float *s, int ss, const uint8_t *pf, size_t pfs)
{
	__m512 c[6][4];
	for (int t = 0; t < 4; t++) {
		if (pf)
			for (size_t b = 4 * t * pfs; b < 4 * (t + 1) * pfs; b += 64)
				_mm_prefetch((const char *)(pf + b), _MM_HINT_T0);
		__m512 acc[6][4];
#pragma GCC unroll 6
		for (int g = 0; g < G; g++)
#pragma GCC unroll 4
			for (int l = 0; l < 4; l++)
				acc[g][l] = _mm512_setzero_ps();
		for (int e = 0; e < d; e += 16) {
			__mmask16 m = tail16(d - e);
			__m512 kv[4];
#pragma GCC unroll 4
			for (int l = 0; l < 4; l++)
				kv[l] = load_kv(k + (size_t)(4 * t + l) * ks, kt, d, e, m);
#pragma GCC unroll 6
			for (int g = 0; g < G; g++) {
				__m512 qv = _mm512_maskz_loadu_ps(m, q + (size_t)g * d + e);
#pragma GCC unroll 4
				for (int l = 0; l < 4; l++)
					acc[g][l] = _mm512_fmadd_ps(qv, kv[l], acc[g][l]);
			}
		}
#pragma GCC unroll 6
		for (int g = 0; g < G; g++)
			c[g][t] = fold4(acc[g]);
	}
	/* key 4t + L's sum is in lane 4L + t */
	const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
#pragma GCC unroll 6
	for (int g = 0; g < G; g++)
		_mm512_storeu_ps(s + (size_t)g * ss,
		                 _mm512_mul_ps(_mm512_permutexvar_ps(order, fold16(c[g])), _mm512_set1_ps(scale)));
}

/* Every query against 16 keys, in groups of up to 6 queries of nearly
 * equal size (7 as 4 and 3). The block after next is asked for while the
 * first group runs. With more than one group, q8_0 keys are widened into
 * kf once, where each group would widen and scale them again; f16 keys
 * are converted by each group, one instruction a piece. */
static TGT INL void scores_block(const float *q, int nq, const uint8_t *k, int kt, size_t ks, int d, float scale,
                                 float *s, int ss, float *kf)
{
	const uint8_t *pf = k + 32 * ks;
	size_t pfs = ks;
	int ng = (nq + 5) / 6;
	if (kt == CPU_KV_Q8_0 && ng > 1) {
		for (int key = 0; key < 16; key++) {
			for (int e = 0; e < d; e += 16)
				_mm512_mask_storeu_ps(kf + (size_t)key * d + e, tail16(d - e),
				                      load_kv(k + (size_t)key * ks, kt, d, e, tail16(d - e)));
			for (size_t b = 0; b < ks; b += 64)
				_mm_prefetch((const char *)(pf + key * ks + b), _MM_HINT_T0);
		}
		pf = NULL;
		k = (const uint8_t *)kf;
		ks = (size_t)d * sizeof *kf;
		kt = KV_WIDE;
	}
	for (int i = 0; i < ng; i++) {
		int g0 = i * nq / ng, G = (i + 1) * nq / ng - g0;
		const float *qi = q + (size_t)g0 * d;
		float *si = s + (size_t)g0 * ss;
		/* the common head sizes as constants */
#define SCORES_G(n)                                                                                  \
	case n:                                                                                      \
		if (d == 128)                                                                        \
			scores_16(qi, n, k, kt, ks, 128, scale, si, ss, pf, pfs);                    \
		else if (d == 64)                                                                    \
			scores_16(qi, n, k, kt, ks, 64, scale, si, ss, pf, pfs);                     \
		else                                                                                 \
			scores_16(qi, n, k, kt, ks, d, scale, si, ss, pf, pfs);                      \
		break;
		switch (G) {
			SCORES_G(6)
			SCORES_G(5)
			SCORES_G(4)
			SCORES_G(3)
			SCORES_G(2)
			SCORES_G(1)
		}
#undef SCORES_G
		pf = NULL;
	}
}

static TGT INL void attn_scores_kt(const float *q, int nq, const uint8_t *k, int kt, int n, size_t ks, int d,
                                   float scale, float *s, int ss)
{
	float kf[16 * CPU_MAX_HEAD_DIM];
	int j = 0;
	for (; n - j >= 16; j += 16)
		scores_block(q, nq, k + (size_t)j * ks, kt, ks, d, scale, s + j, ss, kf);
	for (; j < n; j++)
		for (int i = 0; i < nq; i += 4) {
			const float *qi = q + (size_t)i * d;
			const uint8_t *kj = k + (size_t)j * ks;
			float *si = s + (size_t)i * ss + j;
			switch (nq - i < 4 ? nq - i : 4) {
			case 4: scores_g(qi, 4, kj, kt, d, scale, si, ss); break;
			case 3: scores_g(qi, 3, kj, kt, d, scale, si, ss); break;
			case 2: scores_g(qi, 2, kj, kt, d, scale, si, ss); break;
			default: scores_g(qi, 1, kj, kt, d, scale, si, ss); break;
			}
		}
}

static TGT void x_attn_scores_f16(const float *q, int nq, const uint8_t *k, int n, size_t ks, int d, float scale,
                                  float *s, int ss)
{
	attn_scores_kt(q, nq, k, CPU_KV_F16, n, ks, d, scale, s, ss);
}

static TGT void x_attn_scores_q8(const float *q, int nq, const uint8_t *k, int n, size_t ks, int d, float scale,
                                 float *s, int ss)
{
	attn_scores_kt(q, nq, k, CPU_KV_Q8_0, n, ks, d, scale, s, ss);
}

/* 64 elements (e .. e + 63) of G outputs d floats apart, held in registers
 * over all n keys: each element still gets one fused multiply-add per key,
 * in key order. Four pieces of a key's values serve up to 6 queries, and
 * each value is read once per call from memory. */
static TGT INL void values_64(float *o, int d, int G, const float *p, int ps, const uint8_t *v, int kt, int e0,
                              int n, size_t vs)
{
	__m512 acc[24];
#pragma GCC unroll 24
	for (int a = 0; a < G * 4; a++)
		acc[a] = _mm512_loadu_ps(o + (size_t)(a / 4) * d + 16 * (a % 4));
	for (int j = 0; j < n; j++) {
		/* a long context's values come from memory: ask 16 keys ahead */
		_mm_prefetch((const char *)(v + (size_t)(j + 16) * vs + (kt == CPU_KV_F16 ? 2 * e0 : e0)), _MM_HINT_T0);
		if (kt == CPU_KV_F16)
			_mm_prefetch((const char *)(v + (size_t)(j + 16) * vs + 2 * e0 + 64), _MM_HINT_T0);
		else
			_mm_prefetch((const char *)(v + (size_t)(j + 16) * vs + d + e0 / 16), _MM_HINT_T0);
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			__m512 vv = load_kv(v + (size_t)j * vs, kt, d, e0 + 16 * c, 0xffff);
#pragma GCC unroll 6
			for (int g = 0; g < G; g++)
				acc[g * 4 + c] = _mm512_fmadd_ps(_mm512_set1_ps(p[(size_t)g * ps + j]), vv, acc[g * 4 + c]);
		}
	}
#pragma GCC unroll 24
	for (int a = 0; a < G * 4; a++)
		_mm512_storeu_ps(o + (size_t)(a / 4) * d + 16 * (a % 4), acc[a]);
}

static TGT INL void attn_values_kt(float *o, int nq, const float *p, int ps, const uint8_t *v, int kt, int n,
                                   size_t vs, int d)
{
	int e = 0;
	for (; e + 64 <= d; e += 64)
		for (int i = 0; i < nq; i += 6) {
			float *oi = o + (size_t)i * d + e;
			const float *pi = p + (size_t)i * ps;
			switch (nq - i < 6 ? nq - i : 6) {
			case 6: values_64(oi, d, 6, pi, ps, v, kt, e, n, vs); break;
			case 5: values_64(oi, d, 5, pi, ps, v, kt, e, n, vs); break;
			case 4: values_64(oi, d, 4, pi, ps, v, kt, e, n, vs); break;
			case 3: values_64(oi, d, 3, pi, ps, v, kt, e, n, vs); break;
			case 2: values_64(oi, d, 2, pi, ps, v, kt, e, n, vs); break;
			default: values_64(oi, d, 1, pi, ps, v, kt, e, n, vs); break;
			}
		}
	/* the rest of other head sizes: through memory, same arithmetic */
	for (int j = 0; j < n; j++)
		for (int f = e; f < d; f += 16) {
			__mmask16 m = tail16(d - f);
			__m512 vv = load_kv(v + (size_t)j * vs, kt, d, f, m);
			for (int r = 0; r < nq; r++) {
				float *y = o + (size_t)r * d + f;
				_mm512_mask_storeu_ps(y, m, _mm512_fmadd_ps(_mm512_set1_ps(p[(size_t)r * ps + j]), vv,
				                                            _mm512_maskz_loadu_ps(m, y)));
			}
		}
}

static TGT void x_attn_values_f16(float *o, int nq, const float *p, int ps, const uint8_t *v, int n, size_t vs,
                                  int d)
{
	attn_values_kt(o, nq, p, ps, v, CPU_KV_F16, n, vs, d);
}

static TGT void x_attn_values_q8(float *o, int nq, const float *p, int ps, const uint8_t *v, int n, size_t vs,
                                 int d)
{
	attn_values_kt(o, nq, p, ps, v, CPU_KV_Q8_0, n, vs, d);
}

/* exp(x) for -87 <= x <= 0 (smaller x are taken as -87, which rounds away
 * as a probability): 2^n e^f with n = round(x / ln 2), |f| <= ln 2 / 2, e^f
 * by its Taylor series to degree 7 (relative error below 1e-8). */
static TGT INL __m512 exp16(__m512 x)
{
	x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
	                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x);
	f = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), f);
	__m512 p = _mm512_set1_ps(1.0f / 5040);
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 720));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 120));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 24));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 6));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(p, n);
}

static TGT double x_exp_sum(float *x, int n, float m)
{
	__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
	__m512 mv = _mm512_set1_ps(m);
	for (int i = 0; i < n; i += 16) {
		__mmask16 k = tail16(n - i);
		__m512 y = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mv)));
		_mm512_mask_storeu_ps(x + i, k, y);
		s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(y)));
		s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(y, 1)));
	}
	return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}

/* Same values as the generic quantize_q8k: the first element of largest
 * magnitude maps to -127, products rounded half to even (the default
 * rounding of vcvtps2dq). One vector is one 16-element sum.
 * The other thread has just read q (the previous matmul's activations) and
 * often wrote x: each line then comes over from its core, one at a time as
 * the loads and stores reach it (about 80 ns a line between these two
 * vCPUs, 2 us for a 1536-element row against 0.35 us of arithmetic).
 * Asking for all of them first (for writing, the destination) overlaps
 * those transfers. */
static TGT void x_quantize_q8k(const float *x, struct cpu_q8k *q, int64_t k)
{
	const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
	for (int64_t i = 0; i < k / 256 * (int64_t)sizeof *q; i += 64)
		__builtin_prefetch((const char *)q + i, 1, 3);
	for (int64_t i = 0; i < k; i += 16)
		__builtin_prefetch(x + i, 0, 3);
	for (int64_t b = 0; b < k / 256; b++, x += 256, q++) {
		__m512 m = _mm512_setzero_ps();
		for (int i = 0; i < 256; i += 16)
			m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(x + i), absmask));
		float amax = _mm512_reduce_max_ps(m), max = 0.0f;
		__m512 av = _mm512_set1_ps(amax);
		for (int i = 0; i < 256 && amax > 0.0f; i += 16) {
			__mmask16 hit = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(x + i), absmask), av, _CMP_EQ_OQ);
			if (hit) {
				max = x[i + __builtin_ctz(hit)];
				break;
			}
		}
		float iscale = amax > 0.0f ? -127.0f / max : 0.0f;
		__m512 iv = _mm512_set1_ps(iscale);
		for (int i = 0; i < 256; i += 16) {
			__m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), iv));
			_mm_storeu_si128((__m128i *)(q->qs + i), _mm512_cvtsepi32_epi8(v));
			q->bsums[i / 16] = (int16_t)_mm512_reduce_add_epi32(v);
		}
		for (int j = 0; j < 8; j++)
			q->bsum32[j] = (int16_t)(q->bsums[2 * j] + q->bsums[2 * j + 1]);
		q->d = amax > 0.0f ? 1.0f / iscale : 0.0f;
	}
}

/* exp16 is as accurate above 0, and scalef overflows to inf past 88.7
 * (silu(g) = g / inf = -0 there, as with expf) */
static TGT void x_silu_mul(const float *g, const float *u, float *a, int n)
{
	for (int i = 0; i < n; i += 16) {
		__mmask16 k = tail16(n - i);
		__m512 gv = _mm512_maskz_loadu_ps(k, g + i);
		__m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), gv));
		__m512 s = _mm512_div_ps(gv, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
		_mm512_mask_storeu_ps(a + i, k, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(k, u + i)));
	}
}

void cpu_kernels_avx512_fill(struct cpu_kernels *t)
{
	t->silu_mul = x_silu_mul;
	t->quantize_q8k = x_quantize_q8k;
	t->attn_scores[CPU_KV_F16] = x_attn_scores_f16;
	t->attn_scores[CPU_KV_Q8_0] = x_attn_scores_q8;
	t->attn_values[CPU_KV_F16] = x_attn_values_f16;
	t->attn_values[CPU_KV_Q8_0] = x_attn_values_q8;
	t->exp_sum = x_exp_sum;
	t->name = "avx512";
	t->matmul[CPU_W_Q4_0] = mm_q4_0;
	t->matmul[CPU_W_Q4_1] = mm_q4_1;
	t->matmul[CPU_W_Q5_0] = mm_q5_0;
	t->matmul[CPU_W_Q5_1] = mm_q5_1;
	t->matmul[CPU_W_Q8_0] = mm_q8_0;
	t->matmul[CPU_W_Q4_K] = mm_q4_K;
	t->matmul[CPU_W_Q5_K] = mm_q5_K;
	t->matmul[CPU_W_Q6_K] = mm_q6_K;
	/* the layout (pack_size, pack) is the AVX2 table's, which t copies */
	t->matmul_packed[CPU_W_Q4_K] = mm_q4_K_packed;
	t->matmul_packed[CPU_W_Q6_K] = mm_q6_K_packed;
	t->matmul_packed[CPU_W_Q8_0] = mm_q8_0_packed;
	t->matmul_packed[CPU_W_Q5_0] = mm_q5_0_packed;
	t->matmul_packed[CPU_W_Q4_1] = mm_q4_1_packed;
}

#endif
