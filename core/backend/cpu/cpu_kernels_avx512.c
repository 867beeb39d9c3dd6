/* AVX-512 (F, BW, VL, DQ) + VNNI kernels for the K-quants, chosen at run
 * time on CPUs that have them (cpu_kernels_select); every other entry of
 * the table is the AVX2 one. A super-block's weights are unpacked once
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
#include "model/quant.h"

#pragma GCC optimize("fp-contract=off")

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define INL __attribute__((always_inline)) inline
#define MAXR 8 /* activation rows per pass over the weights */

static TGT INL float hsum16(__m512 v)
{
	__m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

static TGT INL const struct cpu_q8k *xrow(const char *x, size_t xs, int r, int64_t b)
{
	return (const struct cpu_q8k *)(x + (size_t)r * xs) + b;
}

/* Q4_K / Q5_K scales and mins of one super-block: sc16 gets the 8 scales as
 * 16-bit lanes, mins2 the 8 mins each twice (to meet the 16 activation
 * sums of 16 elements). The 12 bytes hold, per sub-block j < 4, the low 6
 * bits of scale j in byte j and of min j in byte j + 4; for j >= 4 the low
 * nibbles in byte j + 4 and the top two bits in bits 6-7 of bytes j - 4
 * (scale) and j (min). */
static TGT INL void k_scales(const uint8_t *q, __m128i *sc16, __m256i *mins2)
{
	uint32_t u[3], s[4];
	memcpy(u, q, 12);
	s[0] = u[0] & 0x3f3f3f3f;                                            /* scales 0-3 */
	s[1] = (u[2] & 0x0f0f0f0f) | ((u[0] >> 6) & 0x03030303) << 4;         /* scales 4-7 */
	s[2] = u[1] & 0x3f3f3f3f;                                            /* mins 0-3 */
	s[3] = ((u[2] >> 4) & 0x0f0f0f0f) | ((u[1] >> 6) & 0x03030303) << 4; /* mins 4-7 */
	__m128i all = _mm_loadu_si128((const __m128i *)s);
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
	__m512i idx[4];
	__m512 acc[MAXR];
	for (int c = 0; c < 4; c++) /* chunk c covers sub-blocks 2c (lanes 0-15) and 2c + 1 */
		idx[c] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)(2 * c))),
		                            _mm256_set1_epi16((short)(2 * c + 1)), 1);
	for (int r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++, w += bb) {
		const uint8_t *qh = w + 16, *qs = five ? qh + 32 : qh;
		uint16_t d16, m16;
		__m128i sc16;
		__m256i mins2;
		__m512i q[4], scale[4];
		memcpy(&d16, w, 2);
		memcpy(&m16, w + 2, 2);
		k_scales(w + 4, &sc16, &mins2);
		__m512i sc = _mm512_castsi128_si512(sc16);
		for (int h = 0; h < 2; h++) {
			__m512i z = _mm512_loadu_si512((const void *)(qs + 64 * h));
			__m512i lo = _mm512_and_si512(z, m4), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
			q[2 * h] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
			q[2 * h + 1] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
		}
		if (five) {
			/* the fifth bit of element 64 c + i (i < 32) is bit 2c of qh[i],
			 * of 64 c + 32 + i bit 2c + 1 */
			__m512i hb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)qh));
			for (int c = 0; c < 4; c++) {
				__m512i sh = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)),
				                                _mm256_set1_epi16((short)(2 * c + 1)), 1);
				__m512i bit = _mm512_and_si512(_mm512_srlv_epi16(hb, sh), one);
				q[c] = _mm512_or_si512(q[c], _mm512_slli_epi16(bit, 4));
			}
		}
		for (int c = 0; c < 4; c++)
			scale[c] = _mm512_permutexvar_epi16(idx[c], sc);
		__m512 dw = _mm512_set1_ps(_cvtsh_ss(d16)), dmw = _mm512_set1_ps(_cvtsh_ss(m16));
		for (int r = 0; r < R; r++) {
			const struct cpu_q8k *xb = xrow(x, xs, r, b);
			__m512i sumi = _mm512_setzero_si512();
			for (int c = 0; c < 4; c++) {
				__m512i p = _mm512_maddubs_epi16(q[c], _mm512_load_si512((const void *)(xb->qs + 64 * c)));
				sumi = _mm512_dpwssd_epi32(sumi, p, scale[c]);
			}
			__m256i summ = _mm256_madd_epi16(mins2, _mm256_load_si256((const __m256i *)xb->bsums));
			__m512 dx = _mm512_set1_ps(xb->d);
			acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(dw, dx), acc[r]);
			acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(summ)), _mm512_mul_ps(dmw, dx),
			                          acc[r]);
		}
	}
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
	__m512i idx[4];
	__m512 acc[MAXR];
	for (int c = 0; c < 4; c++) { /* chunk c: sub-blocks 4c .. 4c + 3, 8 lanes each */
		short v[32];
		for (int i = 0; i < 32; i++)
			v[i] = (short)(4 * c + i / 8);
		idx[c] = _mm512_loadu_si512((const void *)v);
	}
	for (int r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		__m512i q[4], scale[4];
		__m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales));
		__m512i sc = _mm512_castsi256_si512(sc16);
		for (int h = 0; h < 2; h++) {
			__m512i ql = _mm512_loadu_si512((const void *)(w[b].ql + 64 * h));
			__m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * h)));
			__m512i hlo = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh_lo), m2), 4);
			__m512i hhi = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh_hi), m2), 4);
			q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), hlo);
			q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), hhi);
		}
		for (int c = 0; c < 4; c++)
			scale[c] = _mm512_permutexvar_epi16(idx[c], sc);
		__m512 dw = _mm512_set1_ps(_cvtsh_ss(w[b].d));
		for (int r = 0; r < R; r++) {
			const struct cpu_q8k *xb = xrow(x, xs, r, b);
			__m256i corr = _mm256_madd_epi16(sc16, _mm256_load_si256((const __m256i *)xb->bsums));
			__m512i sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(_mm256_slli_epi32(corr, 5)));
			for (int c = 0; c < 4; c++) {
				__m512i p = _mm512_maddubs_epi16(q[c], _mm512_load_si512((const void *)(xb->qs + 64 * c)));
				sumi = _mm512_dpwssd_epi32(sumi, p, scale[c]);
			}
			acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(dw, _mm512_set1_ps(xb->d)), acc[r]);
		}
	}
	for (int r = 0; r < R; r++)
		y[(size_t)r * ys] = hsum16(acc[r]);
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

AVX512_MATMUL(mm_q4_K, B_Q4_K)
AVX512_MATMUL(mm_q5_K, B_Q5_K)
AVX512_MATMUL(mm_q6_K, B_Q6_K)

void cpu_kernels_avx512_fill(struct cpu_kernels *t)
{
	t->name = "avx512";
	t->matmul[CPU_W_Q4_K] = mm_q4_K;
	t->matmul[CPU_W_Q5_K] = mm_q5_K;
	t->matmul[CPU_W_Q6_K] = mm_q6_K;
}

#endif
