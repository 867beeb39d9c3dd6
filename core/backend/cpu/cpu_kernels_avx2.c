/* AVX2 + FMA + F16C kernels, compiled with target attributes and chosen at
 * run time (cpu_kernels_select). The multi-row matmul bodies are one inline
 * template instantiated for 1..4 activation rows: each row owns its
 * accumulators and sees the same instruction sequence in every instance, so a
 * row's result does not depend on how many rows share the weight pass.
 * Q4_K, Q6_K, Q8_0, Q5_0 and Q4_1 run from the packed layouts of
 * cpu_packed.h (the AVX-512 table's), 8 rows per vector. */
#include "build-config.h"

#ifdef SKIPPER_X86_64

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_packed.h"
#include "model/quant.h"

#pragma GCC optimize("fp-contract=off")

#define TGT __attribute__((target("avx2,fma,f16c")))
#define INL __attribute__((always_inline)) inline

/* Fixed-tree horizontal sum of 8 lanes. */
static TGT INL float hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

static TGT INL float h2f(uint16_t h)
{
	return _cvtsh_ss(h);
}

/* 16 bytes of packed nibbles -> 32 unsigned bytes: element i (< 16) is the
 * low nibble of byte i, element 16 + i the high nibble (GGML order). */
static TGT INL __m256i unpack_nibbles(const uint8_t *qs)
{
	__m128i b = _mm_loadu_si128((const __m128i *)qs);
	__m128i m = _mm_set1_epi8(0x0F);
	__m128i lo = _mm_and_si128(b, m);
	__m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
	return _mm256_set_m128i(hi, lo);
}

/* Sum of u8 * s8 products in 8 int32 lanes, as floats. */
static TGT INL __m256 dot_us8(__m256i u, __m256i s)
{
	__m256i p16 = _mm256_maddubs_epi16(u, s);
	return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

static TGT INL void q4_0_rows(int64_t nb, const struct skipper_block_q4_0 *w,
                              const char *x, size_t xs, int R, float *y, size_t ys)
{
	__m256 acc[4];
	float off[4];
	for (int r = 0; r < R; r++) {
		acc[r] = _mm256_setzero_ps();
		off[r] = 0.0f;
	}
	for (int64_t b = 0; b < nb; b++) {
		__m256i wq = unpack_nibbles(w[b].qs);
		float dw = h2f(w[b].d);
		for (int r = 0; r < R; r++) {
			const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + b;
			__m256i xq = _mm256_loadu_si256((const __m256i *)xb->qs);
			float dd = dw * xb->d;
			acc[r] = _mm256_fmadd_ps(dot_us8(wq, xq), _mm256_set1_ps(dd), acc[r]);
			off[r] += dd * (float)(-8 * xb->sum);
		}
	}
	for (int r = 0; r < R; r++)
		y[(size_t)r * ys] = hsum8(acc[r]) + off[r];
}

static TGT INL void q4_1_rows(int64_t nb, const struct skipper_block_q4_1 *w,
                              const char *x, size_t xs, int R, float *y, size_t ys)
{
	__m256 acc[4];
	float off[4];
	for (int r = 0; r < R; r++) {
		acc[r] = _mm256_setzero_ps();
		off[r] = 0.0f;
	}
	for (int64_t b = 0; b < nb; b++) {
		__m256i wq = unpack_nibbles(w[b].qs);
		float dw = h2f(w[b].d), mw = h2f(w[b].m);
		for (int r = 0; r < R; r++) {
			const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + b;
			__m256i xq = _mm256_loadu_si256((const __m256i *)xb->qs);
			acc[r] = _mm256_fmadd_ps(dot_us8(wq, xq), _mm256_set1_ps(dw * xb->d), acc[r]);
			off[r] += mw * xb->s;
		}
	}
	for (int r = 0; r < R; r++)
		y[(size_t)r * ys] = hsum8(acc[r]) + off[r];
}

static TGT INL void q8_0_rows(int64_t nb, const struct skipper_block_q8_0 *w,
                              const char *x, size_t xs, int R, float *y, size_t ys)
{
	__m256 acc[4];
	for (int r = 0; r < R; r++)
		acc[r] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		__m256i wq = _mm256_loadu_si256((const __m256i *)w[b].qs);
		__m256i aw = _mm256_sign_epi8(wq, wq);
		float dw = h2f(w[b].d);
		for (int r = 0; r < R; r++) {
			const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + b;
			__m256i xq = _mm256_loadu_si256((const __m256i *)xb->qs);
			__m256 p = dot_us8(aw, _mm256_sign_epi8(xq, wq));
			acc[r] = _mm256_fmadd_ps(p, _mm256_set1_ps(dw * xb->d), acc[r]);
		}
	}
	for (int r = 0; r < R; r++)
		y[(size_t)r * ys] = hsum8(acc[r]);
}

/* 32 bits -> 32 bytes: byte i is 0x10 when bit i of x is set (Q5 fifth bits). */
static TGT INL __m256i bits_to_0x10(uint32_t x)
{
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x),
	                                _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
	                                                  0x0101010101010101, 0));
	v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
	return _mm256_and_si256(_mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1)), _mm256_set1_epi8(0x10));
}

/* Q5_0 / Q5_1: the Q4 bodies with the fifth bit ORed into each value; Q5_0's
 * offset 16 comes off through the activation sums. */
static TGT INL void q5_rows(int has_min, int64_t nb, const uint8_t *w, const char *x, size_t xs, int R,
                            float *y, size_t ys)
{
	size_t bb = has_min ? sizeof(struct skipper_block_q5_1) : sizeof(struct skipper_block_q5_0);
	__m256 acc[4];
	float off[4];
	for (int r = 0; r < R; r++) {
		acc[r] = _mm256_setzero_ps();
		off[r] = 0.0f;
	}
	for (int64_t b = 0; b < nb; b++, w += bb) {
		uint16_t d16, m16 = 0;
		uint32_t qh;
		memcpy(&d16, w, 2);
		if (has_min)
			memcpy(&m16, w + 2, 2);
		memcpy(&qh, w + (has_min ? 4 : 2), 4);
		__m256i wq = _mm256_or_si256(unpack_nibbles(w + (has_min ? 8 : 6)), bits_to_0x10(qh));
		float dw = h2f(d16), mw = h2f(m16);
		for (int r = 0; r < R; r++) {
			const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + b;
			__m256i xq = _mm256_loadu_si256((const __m256i *)xb->qs);
			float dd = dw * xb->d;
			acc[r] = _mm256_fmadd_ps(dot_us8(wq, xq), _mm256_set1_ps(dd), acc[r]);
			off[r] += has_min ? mw * xb->s : dd * (float)(-16 * xb->sum);
		}
	}
	for (int r = 0; r < R; r++)
		y[(size_t)r * ys] = hsum8(acc[r]) + off[r];
}

/* u8 x s8 products summed in pairs, then pairs scaled by s16 and summed. */
static TGT INL __m256i dot_scaled(__m256i u, __m256i s, __m256i scale)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale);
}

/* The 8 scales and 8 mins of a Q4_K/Q5_K super-block as 16-bit lanes. */
static TGT INL void k_scales(const uint8_t *q, int16_t sc[8], __m256i *mins2)
{
	uint8_t s, m;
	int16_t mm[16];
	for (int j = 0; j < 8; j++) {
		skipper_k_scale_min(j, q, &s, &m);
		sc[j] = s;
		mm[2 * j] = mm[2 * j + 1] = m;
	}
	*mins2 = _mm256_loadu_si256((const __m256i *)mm);
}

/* Q4_K / Q5_K: per 64-element chunk the low nibbles are one sub-block, the
 * high nibbles the next; integer sums scaled per sub-block, the mins taken
 * against the activation's 16-element sums. */
static TGT INL void q45_K_rows(int five, int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y,
                               size_t ys)
{
	size_t bb = five ? sizeof(struct skipper_block_q5_K) : sizeof(struct skipper_block_q4_K);
	const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
	__m256 acc[4];
	for (int r = 0; r < R; r++)
		acc[r] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++, w += bb) {
		const uint8_t *qh = w + 16, *qs = five ? qh + 32 : qh;
		uint16_t d16, m16;
		int16_t sc[8];
		__m256i mins2, sumi[4], hb = five ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
		memcpy(&d16, w, 2);
		memcpy(&m16, w + 2, 2);
		k_scales(w + 4, sc, &mins2);
		for (int r = 0; r < R; r++)
			sumi[r] = _mm256_setzero_si256();
		for (int c = 0; c < 4; c++) {
			__m256i q4 = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
			__m256i lo = _mm256_and_si256(q4, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
			if (five) {
				lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one), 4));
				hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one), 4));
			}
			__m256i slo = _mm256_set1_epi16(sc[2 * c]), shi = _mm256_set1_epi16(sc[2 * c + 1]);
			for (int r = 0; r < R; r++) {
				const int8_t *xq = ((const struct cpu_q8k *)(x + (size_t)r * xs) + b)->qs + 64 * c;
				__m256i p = _mm256_add_epi32(dot_scaled(lo, _mm256_loadu_si256((const __m256i *)xq), slo),
				                             dot_scaled(hi, _mm256_loadu_si256((const __m256i *)(xq + 32)), shi));
				sumi[r] = _mm256_add_epi32(sumi[r], p);
			}
		}
		float dw = h2f(d16), dmw = h2f(m16);
		for (int r = 0; r < R; r++) {
			const struct cpu_q8k *xb = (const struct cpu_q8k *)(x + (size_t)r * xs) + b;
			__m256i summ = _mm256_madd_epi16(mins2, _mm256_loadu_si256((const __m256i *)xb->bsums));
			acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[r]), _mm256_set1_ps(dw * xb->d), acc[r]);
			acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(summ), _mm256_set1_ps(dmw * xb->d), acc[r]);
		}
	}
	for (int r = 0; r < R; r++)
		y[(size_t)r * ys] = hsum8(acc[r]);
}

/* Q6_K: four 32-element groups per half, each two sub-blocks of 16 with
 * their own int8 scale; values 0..63 with the offset 32 taken off through
 * the activation sums. */
static TGT INL void q6_K_rows(int64_t nb, const struct skipper_block_q6_K *w, const char *x, size_t xs, int R,
                              float *y, size_t ys)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
	__m256 acc[4];
	for (int r = 0; r < R; r++)
		acc[r] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		__m256i sumi[4];
		__m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales));
		for (int r = 0; r < R; r++) {
			const struct cpu_q8k *xb = (const struct cpu_q8k *)(x + (size_t)r * xs) + b;
			__m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)xb->bsums));
			sumi[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
		}
		for (int h = 0; h < 2; h++) {
			__m256i ql0 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * h));
			__m256i ql1 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * h + 32));
			__m256i qh = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * h));
			for (int k = 0; k < 4; k++) {
				__m256i lo = _mm256_and_si256(k >= 2 ? _mm256_srli_epi16(k & 1 ? ql1 : ql0, 4) : (k & 1 ? ql1 : ql0), m4);
				__m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2), 4));
				int g = 8 * h + 2 * k; /* sub-blocks g, g + 1 */
				__m256i scale = _mm256_set_m128i(_mm_set1_epi16(w[b].scales[g + 1]), _mm_set1_epi16(w[b].scales[g]));
				for (int r = 0; r < R; r++) {
					const int8_t *xq = ((const struct cpu_q8k *)(x + (size_t)r * xs) + b)->qs + 128 * h + 32 * k;
					sumi[r] = _mm256_add_epi32(sumi[r], dot_scaled(q, _mm256_loadu_si256((const __m256i *)xq), scale));
				}
			}
		}
		float dw = h2f(w[b].d);
		for (int r = 0; r < R; r++) {
			const struct cpu_q8k *xb = (const struct cpu_q8k *)(x + (size_t)r * xs) + b;
			acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[r]), _mm256_set1_ps(dw * xb->d), acc[r]);
		}
	}
	for (int r = 0; r < R; r++)
		y[(size_t)r * ys] = hsum8(acc[r]);
}

/* One activation row against two weight rows: the same per-column
 * operations as q4_1_rows / q8_0_rows with R = 1, interleaved so the two
 * accumulation chains overlap (decode is one row). */
static TGT INL void q4_1_2col(int64_t nb, const struct skipper_block_q4_1 *w0,
                              const struct skipper_block_q4_1 *w1, const struct cpu_q8 *x,
                              float *y0, float *y1)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	float o0 = 0.0f, o1 = 0.0f;
	for (int64_t b = 0; b < nb; b++) {
		__m256i xq = _mm256_loadu_si256((const __m256i *)x[b].qs);
		__m256i q0 = unpack_nibbles(w0[b].qs), q1 = unpack_nibbles(w1[b].qs);
		a0 = _mm256_fmadd_ps(dot_us8(q0, xq), _mm256_set1_ps(h2f(w0[b].d) * x[b].d), a0);
		a1 = _mm256_fmadd_ps(dot_us8(q1, xq), _mm256_set1_ps(h2f(w1[b].d) * x[b].d), a1);
		o0 += h2f(w0[b].m) * x[b].s;
		o1 += h2f(w1[b].m) * x[b].s;
	}
	*y0 = hsum8(a0) + o0;
	*y1 = hsum8(a1) + o1;
}

static TGT INL void q8_0_2col(int64_t nb, const struct skipper_block_q8_0 *w0,
                              const struct skipper_block_q8_0 *w1, const struct cpu_q8 *x,
                              float *y0, float *y1)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		__m256i xq = _mm256_loadu_si256((const __m256i *)x[b].qs);
		__m256i q0 = _mm256_loadu_si256((const __m256i *)w0[b].qs);
		__m256i q1 = _mm256_loadu_si256((const __m256i *)w1[b].qs);
		__m256 p0 = dot_us8(_mm256_sign_epi8(q0, q0), _mm256_sign_epi8(xq, q0));
		__m256 p1 = dot_us8(_mm256_sign_epi8(q1, q1), _mm256_sign_epi8(xq, q1));
		a0 = _mm256_fmadd_ps(p0, _mm256_set1_ps(h2f(w0[b].d) * x[b].d), a0);
		a1 = _mm256_fmadd_ps(p1, _mm256_set1_ps(h2f(w1[b].d) * x[b].d), a1);
	}
	*y0 = hsum8(a0);
	*y1 = hsum8(a1);
}

/* Float weights: 8-lane accumulation, then a left-to-right scalar tail. */
enum { FK_F32, FK_F16, FK_BF16 };

static TGT INL __m256 load8w(int fk, const void *w, int64_t i)
{
	if (fk == FK_F32)
		return _mm256_loadu_ps((const float *)w + i);
	__m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
	if (fk == FK_F16)
		return _mm256_cvtph_ps(h);
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static TGT INL float load1w(int fk, const void *w, int64_t i)
{
	if (fk == FK_F32)
		return ((const float *)w)[i];
	uint16_t h = ((const uint16_t *)w)[i];
	return fk == FK_F16 ? h2f(h) : cpu_bf16_to_f32(h);
}

static TGT INL void fl_rows(int fk, int64_t k, const void *w, const char *x, size_t xs, int R,
                            float *y, size_t ys)
{
	__m256 acc[4];
	int64_t k8 = k & ~(int64_t)7;
	for (int r = 0; r < R; r++)
		acc[r] = _mm256_setzero_ps();
	for (int64_t i = 0; i < k8; i += 8) {
		__m256 wv = load8w(fk, w, i);
		for (int r = 0; r < R; r++)
			acc[r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps((const float *)(x + (size_t)r * xs) + i),
			                         acc[r]);
	}
	for (int r = 0; r < R; r++) {
		float s = hsum8(acc[r]);
		const float *xr = (const float *)(x + (size_t)r * xs);
		for (int64_t i = k8; i < k; i++)
			s += load1w(fk, w, i) * xr[i];
		y[(size_t)r * ys] = s;
	}
}

/* Walk weight rows; for each, activation rows four at a time. */
#define AVX2_MATMUL(NAME, BODY)                                                              \
	static TGT void NAME(int64_t k, const void *w, size_t wrb, int nc, const void *x,   \
	                     size_t xs, int nr, float *y, size_t ys)                         \
	{                                                                                    \
		for (int c = 0; c < nc; c++) {                                               \
			const void *wr = (const char *)w + (size_t)c * wrb;                  \
			int r = 0;                                                           \
			for (; r + 4 <= nr; r += 4)                                          \
				BODY(4);                                                     \
			switch (nr - r) {                                                    \
			case 3: BODY(3); break;                                              \
			case 2: BODY(2); break;                                              \
			case 1: BODY(1); break;                                              \
			}                                                                    \
		}                                                                            \
	}

#define XR ((const char *)x + (size_t)r * xs)
#define YR (y + (size_t)r * ys + c)
#define B_Q4_0(R) q4_0_rows(k / 32, wr, XR, xs, R, YR, ys)
#define B_Q4_1(R) q4_1_rows(k / 32, wr, XR, xs, R, YR, ys)
#define B_Q8_0(R) q8_0_rows(k / 32, wr, XR, xs, R, YR, ys)
#define B_Q5_0(R) q5_rows(0, k / 32, wr, XR, xs, R, YR, ys)
#define B_Q5_1(R) q5_rows(1, k / 32, wr, XR, xs, R, YR, ys)
#define B_Q4_K(R) q45_K_rows(0, k / 256, wr, XR, xs, R, YR, ys)
#define B_Q5_K(R) q45_K_rows(1, k / 256, wr, XR, xs, R, YR, ys)
#define B_Q6_K(R) q6_K_rows(k / 256, wr, XR, xs, R, YR, ys)
#define B_F32(R) fl_rows(FK_F32, k, wr, XR, xs, R, YR, ys)
#define B_F16(R) fl_rows(FK_F16, k, wr, XR, xs, R, YR, ys)
#define B_BF16(R) fl_rows(FK_BF16, k, wr, XR, xs, R, YR, ys)

AVX2_MATMUL(mm_q4_0, B_Q4_0)
/* One-row products (decode) take two weight rows at a time. */
#define AVX2_MATMUL_2COL(NAME, BT, TWO, BODY)                                                \
	static TGT void NAME(int64_t k, const void *w, size_t wrb, int nc, const void *x,   \
	                     size_t xs, int nr, float *y, size_t ys)                         \
	{                                                                                    \
		if (nr != 1) {                                                               \
			NAME##_rows(k, w, wrb, nc, x, xs, nr, y, ys);                        \
			return;                                                              \
		}                                                                            \
		int c = 0;                                                                   \
		for (; c + 2 <= nc; c += 2)                                                  \
			TWO(k / 32, (const BT *)((const char *)w + (size_t)c * wrb),         \
			    (const BT *)((const char *)w + (size_t)(c + 1) * wrb),           \
			    (const struct cpu_q8 *)x, y + c, y + c + 1);                     \
		if (c < nc) {                                                                \
			const void *wr = (const char *)w + (size_t)c * wrb;                  \
			int r = 0;                                                           \
			BODY(1);                                                             \
		}                                                                            \
	}

AVX2_MATMUL(mm_q4_1_rows, B_Q4_1)
AVX2_MATMUL(mm_q8_0_rows, B_Q8_0)
AVX2_MATMUL_2COL(mm_q4_1, struct skipper_block_q4_1, q4_1_2col, B_Q4_1)
AVX2_MATMUL_2COL(mm_q8_0, struct skipper_block_q8_0, q8_0_2col, B_Q8_0)
AVX2_MATMUL(mm_q5_0, B_Q5_0)
AVX2_MATMUL(mm_q5_1, B_Q5_1)
AVX2_MATMUL(mm_q4_K, B_Q4_K)
AVX2_MATMUL(mm_q5_K, B_Q5_K)
AVX2_MATMUL(mm_q6_K, B_Q6_K)
AVX2_MATMUL(mm_f32, B_F32)
AVX2_MATMUL(mm_f16, B_F16)
AVX2_MATMUL(mm_bf16, B_BF16)

static TGT void quantize_q8(const float *x, struct cpu_q8 *q, int64_t k)
{
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
	for (int64_t b = 0; b < k / 32; b++, x += 32, q++) {
		__m256 v[4], m;
		for (int j = 0; j < 4; j++)
			v[j] = _mm256_loadu_ps(x + 8 * j);
		m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], absmask), _mm256_and_ps(v[1], absmask)),
		                  _mm256_max_ps(_mm256_and_ps(v[2], absmask), _mm256_and_ps(v[3], absmask)));
		__m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
		m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
		m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
		float amax = _mm_cvtss_f32(m4);
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		__m256 idv = _mm256_set1_ps(id);
		__m256i i32[4];
		for (int j = 0; j < 4; j++)
			i32[j] = _mm256_cvtps_epi32(
				_mm256_round_ps(_mm256_mul_ps(v[j], idv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		__m256i s = _mm256_add_epi32(_mm256_add_epi32(i32[0], i32[1]), _mm256_add_epi32(i32[2], i32[3]));
		__m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
		s4 = _mm_hadd_epi32(s4, s4);
		s4 = _mm_hadd_epi32(s4, s4);
		/* pack 32-bit -> 8-bit; packs interleave 128-bit lanes, undo with a permute */
		__m256i p16a = _mm256_packs_epi32(i32[0], i32[1]);
		__m256i p16b = _mm256_packs_epi32(i32[2], i32[3]);
		__m256i p8 = _mm256_packs_epi16(p16a, p16b);
		p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
		_mm256_storeu_si256((__m256i *)q->qs, p8);
		float d = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));
		q->d = d;
		q->sum = _mm_cvtsi128_si32(s4);
		q->s = _cvtsh_ss(_cvtss_sh(d * (float)q->sum, _MM_FROUND_TO_NEAREST_INT));
	}
}

/* Same values as the generic quantize_q8k: the first element of largest
 * magnitude maps to -127, products rounded half to even. */
static TGT void quantize_q8k(const float *x, struct cpu_q8k *q, int64_t k)
{
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
	for (int64_t b = 0; b < k / 256; b++, x += 256, q++) {
		__m256 m = _mm256_setzero_ps();
		for (int i = 0; i < 256; i += 8)
			m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + i), absmask));
		__m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
		m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
		m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
		float amax = _mm_cvtss_f32(m4), max = 0.0f;
		for (int i = 0; i < 256 && amax > 0.0f; i++)
			if (x[i] == amax || x[i] == -amax) {
				max = x[i];
				break;
			}
		float iscale = amax > 0.0f ? -127.0f / max : 0.0f;
		__m256 iv = _mm256_set1_ps(iscale);
		for (int i = 0; i < 256; i += 32) {
			__m256i v[4];
			for (int j = 0; j < 4; j++)
				v[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * j), iv),
				                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
			__m256i p8 = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
			p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
			_mm256_storeu_si256((__m256i *)(q->qs + i), p8);
			/* two 16-element sums: widen to 16 bits, add pairs down */
			__m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), p8);
			__m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
			__m256i t = _mm256_hadd_epi32(s32, s32);
			t = _mm256_hadd_epi32(t, t);
			q->bsums[i / 16] = (int16_t)_mm256_extract_epi32(t, 0);
			q->bsums[i / 16 + 1] = (int16_t)_mm256_extract_epi32(t, 4);
			q->bsum32[i / 32] = (int16_t)(q->bsums[i / 16] + q->bsums[i / 16 + 1]);
		}
		q->d = amax > 0.0f ? 1.0f / iscale : 0.0f;
	}
}

/* a block of cache rows widened to floats by the value sums (d floats a
 * row): a layout of this file's, not of the cache */
#define KV_WIDE (-1)

/* Elements e .. e + 7 of a cache row of d elements as floats: a q8_0
 * value times its block's scale is exact in a float. kt is a constant
 * wherever this is inlined. */
static TGT INL __m256 load_kv(const uint8_t *row, int kt, int d, int e)
{
	if (kt == KV_WIDE)
		return _mm256_loadu_ps((const float *)row + e);
	if (kt == CPU_KV_F16)
		return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * e)));
	uint16_t h;
	int64_t b;
	memcpy(&h, row + d + 2 * (e / 32), sizeof h);
	memcpy(&b, row + e, sizeof b);
	__m256 x = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(b)));
	return _mm256_mul_ps(x, _mm256_cvtph_ps(_mm_set1_epi16((short)h)));
}

/* A whole cache row of d elements as floats into out, the same floats as
 * load_kv's: a q8_0 block's scale converted and broadcast once and its
 * bytes widened straight from memory, where load_kv per 8 elements
 * converted the scale every time and moved the bytes through a general
 * register (about 8 instructions per 8 elements against 3); the keys of
 * the scores and the values' blocks are widened here. */
static TGT INL void widen_row(const uint8_t *row, int kt, int d, float *out)
{
	if (kt == CPU_KV_F16) {
		for (int e = 0; e < d; e += 8)
			_mm256_storeu_ps(out + e, load_kv(row, CPU_KV_F16, d, e));
		return;
	}
	for (int b = 0; b < d / 32; b++) {
		uint16_t h;
		memcpy(&h, row + d + 2 * b, sizeof h);
		__m256 s = _mm256_cvtph_ps(_mm_set1_epi16((short)h));
#pragma GCC unroll 4
		for (int i = 0; i < 4; i++) {
			__m128i q = _mm_loadl_epi64((const __m128i *)(row + 32 * b + 8 * i));
			_mm256_storeu_ps(out + 32 * b + 8 * i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), s));
		}
	}
}

/* Scores of G queries against one key: the key's 8-element pieces are
 * widened once and met by every query; each score is its own 8-lane sum. */
static TGT INL void scores_g(const float *q, int G, const uint8_t *k, int kt, int d, float scale, float *s, int ss)
{
	__m256 acc[4];
	for (int g = 0; g < G; g++)
		acc[g] = _mm256_setzero_ps();
	for (int e = 0; e < d; e += 8) {
		__m256 kv = load_kv(k, kt, d, e);
		for (int g = 0; g < G; g++)
			acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(q + (size_t)g * d + e), kv, acc[g]);
	}
	for (int g = 0; g < G; g++)
		s[(size_t)g * ss] = hsum8(acc[g]) * scale;
}

/* hsum8's order for 8 vectors (slots) at once, in two parts: fold4 takes a
 * quarter of them (slots 4t .. 4t + 3) through the first two stages (lane i
 * plus lane i + 4, then + 2), fold8 the two quarters through the last (+ 1),
 * so that a score is the same bits whichever path computed it. Slot 2L's
 * sum lands in lane L and slot 2L + 1's in lane 4 + L (L < 4): callers put
 * the keys in that order. */
static TGT INL __m256 fold4(const __m256 *a)
{
	__m256 b0 = _mm256_add_ps(_mm256_permute2f128_ps(a[0], a[1], 0x20), _mm256_permute2f128_ps(a[0], a[1], 0x31));
	__m256 b1 = _mm256_add_ps(_mm256_permute2f128_ps(a[2], a[3], 0x20), _mm256_permute2f128_ps(a[2], a[3], 0x31));
	return _mm256_add_ps(_mm256_shuffle_ps(b0, b1, 0x44), _mm256_shuffle_ps(b0, b1, 0xee));
}

static TGT INL __m256 fold8(const __m256 *c)
{
	return _mm256_add_ps(_mm256_shuffle_ps(c[0], c[1], 0x88), _mm256_shuffle_ps(c[0], c[1], 0xdd));
}

/* Scores of G <= 3 queries against the 8 keys widened into kf, every
 * running sum in a register: a key's 8-element piece is loaded once and
 * met by the G queries' pieces, also in registers, so 4 G multiply-adds
 * take 4 + G loads where a query at a time took one each; a quarter of 4
 * slots at a time, which fold4 folds at once. */
static TGT INL void scores_8g(const float *q, int G, const float *kf, int d, float scale, float *s, int ss, int nk)
{
	__m256 c[3][2];
	for (int t = 0; t < 2; t++) {
		__m256 acc[3][4];
#pragma GCC unroll 3
		for (int g = 0; g < G; g++)
#pragma GCC unroll 4
			for (int l = 0; l < 4; l++)
				acc[g][l] = _mm256_setzero_ps();
		for (int e = 0; e < d; e += 8) {
			__m256 qv[3];
#pragma GCC unroll 3
			for (int g = 0; g < G; g++)
				qv[g] = _mm256_loadu_ps(q + (size_t)g * d + e);
#pragma GCC unroll 4
			for (int l = 0; l < 4; l++) {
				__m256 kv = _mm256_loadu_ps(kf + (size_t)(4 * t + l) * d + e);
#pragma GCC unroll 3
				for (int g = 0; g < G; g++)
					acc[g][l] = _mm256_fmadd_ps(qv[g], kv, acc[g][l]);
			}
		}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++)
			c[g][t] = fold4(acc[g]);
	}
#pragma GCC unroll 3
	for (int g = 0; g < G; g++) {
		__m256 r = _mm256_mul_ps(fold8(c[g]), _mm256_set1_ps(scale));
		if (nk == 8) {
			_mm256_storeu_ps(s + (size_t)g * ss, r);
		} else {
			float tmp[8];
			_mm256_storeu_ps(tmp, r);
			memcpy(s + (size_t)g * ss, tmp, (size_t)nk * sizeof *tmp);
		}
	}
}

/* Scores of every query against nk <= 8 keys, the keys widened once into
 * kf (in address order), the queries in groups of up to 3 of nearly equal
 * size (7 as 2, 2 and 3). */
static TGT INL void scores_8(const float *q, int nq, const uint8_t *k, int kt, int nk, size_t ks, int d,
                             float scale, float *s, int ss, float *kf)
{
	for (int key = 0; key < 8; key++) {
		int j = key < 4 ? 2 * key : 2 * (key - 4) + 1; /* see fold4 */
		if (key < nk)
			widen_row(k + (size_t)key * ks, kt, d, kf + (size_t)j * d);
		else
			memset(kf + (size_t)j * d, 0, (size_t)d * sizeof *kf);
	}
	int ng = (nq + 2) / 3;
	for (int i = 0; i < ng; i++) {
		int g0 = i * nq / ng, G = (i + 1) * nq / ng - g0;
		const float *qi = q + (size_t)g0 * d;
		float *si = s + (size_t)g0 * ss;
		switch (G) {
		case 3: scores_8g(qi, 3, kf, d, scale, si, ss, nk); break;
		case 2: scores_8g(qi, 2, kf, d, scale, si, ss, nk); break;
		default: scores_8g(qi, 1, kf, d, scale, si, ss, nk); break;
		}
	}
}

static TGT INL void attn_scores_kt(const float *q, int nq, const uint8_t *k, int kt, int n, size_t ks, int d,
                                   float scale, float *s, int ss)
{
	float kf[8 * CPU_MAX_HEAD_DIM];
	int j = 0;
	/* blocks of 8 keys while there are enough of them to fill one; the
	 * common head sizes as constants (the slots at fixed offsets) */
	for (; n - j >= 4; j += 8) {
		int nk = n - j < 8 ? n - j : 8;
		if (d == 128)
			scores_8(q, nq, k + (size_t)j * ks, kt, nk, ks, 128, scale, s + j, ss, kf);
		else if (d == 64)
			scores_8(q, nq, k + (size_t)j * ks, kt, nk, ks, 64, scale, s + j, ss, kf);
		else
			scores_8(q, nq, k + (size_t)j * ks, kt, nk, ks, d, scale, s + j, ss, kf);
	}
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

static TGT void a_attn_scores_f16(const float *q, int nq, const uint8_t *k, int n, size_t ks, int d, float scale,
                                  float *s, int ss)
{
	attn_scores_kt(q, nq, k, CPU_KV_F16, n, ks, d, scale, s, ss);
}

static TGT void a_attn_scores_q8(const float *q, int nq, const uint8_t *k, int n, size_t ks, int d, float scale,
                                 float *s, int ss)
{
	attn_scores_kt(q, nq, k, CPU_KV_Q8_0, n, ks, d, scale, s, ss);
}

/* 32 elements (e0 .. e0 + 31) of G <= 3 outputs d floats apart, held in
 * registers over all n keys: one fused multiply-add per element and key,
 * in key order, as through memory below. */
static TGT INL void values_32(float *o, int d, int G, const float *p, int ps, const uint8_t *v, int kt, int e0,
                              int n, size_t vs)
{
	__m256 acc[12];
#pragma GCC unroll 12
	for (int a = 0; a < G * 4; a++)
		acc[a] = _mm256_loadu_ps(o + (size_t)(a / 4) * d + 8 * (a % 4));
	for (int j = 0; j < n; j++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			__m256 vv = load_kv(v + (size_t)j * vs, kt, d, e0 + 8 * c);
#pragma GCC unroll 3
			for (int g = 0; g < G; g++)
				acc[g * 4 + c] = _mm256_fmadd_ps(_mm256_set1_ps(p[(size_t)g * ps + j]), vv, acc[g * 4 + c]);
		}
#pragma GCC unroll 12
	for (int a = 0; a < G * 4; a++)
		_mm256_storeu_ps(o + (size_t)(a / 4) * d + 8 * (a % 4), acc[a]);
}

/* Keys per block of the value sums: a block's values stay in L1 while
 * every group of up to 3 outputs and every 32-element part meets them;
 * unblocked, each group and part read the whole cache again, from L3 or
 * memory once it outgrew L2 (8 passes for one row's 6 query heads, 64 for
 * 8 rows'). q8_0 values are widened to floats once a block (16 KiB for a
 * head of 128), where their scaling would otherwise be done again by
 * every pass; f16's one conversion costs less than the scratch's stores.
 * Each output still takes its multiply-adds in key order, and a widened
 * value is the same float either way, so the bits do not change. */
#define VALUES_BLOCK 32

static TGT INL void attn_values_kt(float *o, int nq, const float *p, int ps, const uint8_t *v, int kt, int n,
                                   size_t vs, int d)
{
	float vf[VALUES_BLOCK * CPU_MAX_HEAD_DIM];
	for (int j0 = 0; j0 < n; j0 += VALUES_BLOCK) {
		int nb = n - j0 < VALUES_BLOCK ? n - j0 : VALUES_BLOCK, e = 0, bt = kt;
		const uint8_t *vb = v + (size_t)j0 * vs;
		size_t bs = vs;
		if (kt != CPU_KV_F16) {
			for (int j = 0; j < nb; j++)
				widen_row(vb + (size_t)j * vs, kt, d, vf + (size_t)j * d);
			vb = (const uint8_t *)vf;
			bs = (size_t)d * sizeof *vf;
			bt = KV_WIDE;
		}
		for (; e + 32 <= d; e += 32)
			for (int i = 0; i < nq; i += 3) {
				float *oi = o + (size_t)i * d + e;
				const float *pi = p + (size_t)i * ps + j0;
				switch (nq - i < 3 ? nq - i : 3) {
				case 3: values_32(oi, d, 3, pi, ps, vb, bt, e, nb, bs); break;
				case 2: values_32(oi, d, 2, pi, ps, vb, bt, e, nb, bs); break;
				default: values_32(oi, d, 1, pi, ps, vb, bt, e, nb, bs); break;
				}
			}
		/* the rest of other head sizes: through memory */
		for (int j = 0; j < nb; j++)
			for (int f = e; f < d; f += 8) {
				__m256 vv = load_kv(vb + (size_t)j * bs, bt, d, f);
				for (int i = 0; i < nq; i++) {
					float *y = o + (size_t)i * d + f;
					_mm256_storeu_ps(y, _mm256_fmadd_ps(_mm256_set1_ps(p[(size_t)i * ps + j0 + j]), vv,
					                                    _mm256_loadu_ps(y)));
				}
			}
	}
}

static TGT void a_attn_values_f16(float *o, int nq, const float *p, int ps, const uint8_t *v, int n, size_t vs,
                                  int d)
{
	attn_values_kt(o, nq, p, ps, v, CPU_KV_F16, n, vs, d);
}

static TGT void a_attn_values_q8(float *o, int nq, const float *p, int ps, const uint8_t *v, int n, size_t vs,
                                 int d)
{
	attn_values_kt(o, nq, p, ps, v, CPU_KV_Q8_0, n, vs, d);
}

/* exp(x) for x <= 0 down to -87 (below, exp(-87), which rounds away as a
 * probability): 2^n * e^f with n = round(x / ln 2), |f| <= ln 2 / 2, e^f by
 * its Taylor series to degree 7 (relative error below 1e-8). */
static TGT INL __m256 exp8(__m256 x)
{
	x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
	                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 f = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
	f = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), f);
	__m256 p = _mm256_set1_ps(1.0f / 5040);
	p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 720));
	p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 120));
	p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 24));
	p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 6));
	p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

static TGT double a_exp_sum(float *x, int n, float m)
{
	__m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
	__m256 mv = _mm256_set1_ps(m);
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 y = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
		_mm256_storeu_ps(x + i, y);
		s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(y)));
		s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(y, 1)));
	}
	double lanes[4], sum;
	_mm256_storeu_pd(lanes, _mm256_add_pd(s0, s1));
	sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
	if (i < n) { /* the tail through the same vector code */
		float t[8] = { 0 };
		memcpy(t, x + i, (size_t)(n - i) * sizeof *t);
		__m256 y = exp8(_mm256_sub_ps(_mm256_loadu_ps(t), mv));
		_mm256_storeu_ps(t, y);
		for (int r = 0; r < n - i; r++) {
			x[i + r] = t[r];
			sum += t[r];
		}
	}
	return sum;
}

/* exp8 is as accurate above 0, but its 2^n wraps past n = 128: -g is
 * capped at 88 (silu(g) ~ -4e-37 there, -0 with expf) */
static TGT INL __m256 silu8(__m256 g, __m256 u)
{
	__m256 e = exp8(_mm256_min_ps(_mm256_sub_ps(_mm256_setzero_ps(), g), _mm256_set1_ps(88.0f)));
	return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

static TGT void a_silu_mul(const float *g, const float *u, float *a, int n)
{
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(a + i, silu8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
	if (i < n) { /* the tail through the same vector code */
		float tg[8] = { 0 }, tu[8] = { 0 }, ta[8];
		memcpy(tg, g + i, (size_t)(n - i) * sizeof *tg);
		memcpy(tu, u + i, (size_t)(n - i) * sizeof *tu);
		_mm256_storeu_ps(ta, silu8(_mm256_loadu_ps(tg), _mm256_loadu_ps(tu)));
		memcpy(a + i, ta, (size_t)(n - i) * sizeof *ta);
	}
}

static TGT void a_f32_to_f16(const float *x, uint16_t *y, int n)
{
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(y + i),
		                 _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		y[i] = (uint16_t)_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

static TGT void a_round_f16(float *x, int n, float s)
{
	const __m256 sv = _mm256_set1_ps(s);
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), sv),
		                                                        _MM_FROUND_TO_NEAREST_INT)));
	for (; i < n; i++)
		x[i] = _cvtsh_ss(_cvtss_sh(x[i] * s, _MM_FROUND_TO_NEAREST_INT));
}

/* ---- the packed layouts of cpu_packed.h ----
 *
 * Each 64-byte line holds 4 elements of 16 rows; a ymm takes the 8 rows of
 * one half. A pass of 2..8 rows (PK2_MAXR, as AVX-512's) decodes a block's
 * values a part at a time, 8 vectors (4 lines of both halves, or both
 * nibbles of 4 lines of one half), and takes each part to every row in
 * turn: one broadcast of 4 activation bytes meets 16 weight rows (8 rows'
 * two nibbles), and each row's sums are done before the next row's, so no
 * row holds registers across parts and a value is decoded once per pass.
 * vpmaddubsw sums two u8 x s8 products into a saturating int16, so the
 * integer dots stay exact only while those sums cannot pass 32767: the
 * nibbles 0..15 of Q4_K and Q4_1 in sums of 8 (32 elements: at most
 * 30480), Q6_K's values 0..63 of 2 (32004), Q5_0's 0..31 of 4 (31496),
 * Q8_0's bytes q + 128 as two nibbles of 8 each (30480); tests/t-kernels
 * meets every bound with all values at their largest magnitude. A block's
 * integer dots go to memory (dot[][]), then every row's float arithmetic
 * runs over them, all rows at once (one row's chain of fused multiply-adds
 * alone waits on each one's latency): the AVX-512 kernels' arithmetic per
 * row and lane (scale, order, fused multiply-adds), so these tables give
 * the same bits. The AVX-VNNI table runs the same kernels with vpdpbusd
 * (int32 sums: no bounds). The K-quants on the AVX2 table are the
 * exception: there the int16 sums meet their sub-blocks' scales in
 * vpmaddwd (q4_K_packed_rows and q6_K_packed_rows with enc 0), which the
 * int32 sums of the VNNI tables cannot, and each row's super-block is
 * converted to float once: their own bits, fewer instructions. */

static TGT INL __m256i pk2_bcast32(const void *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

static TGT INL __m256 pk2_f16x8(const uint8_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* 8 bytes at p, unsigned or signed, as 8 int32 lanes */
static TGT INL __m256i pk2_u8x8(const uint8_t *p)
{
	return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

static TGT INL __m256i pk2_i8x8(const uint8_t *p)
{
	return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

/* v as it is, in a register, here: GCC would otherwise reassociate a
 * row's chain of integer adds into a tree and compute every product of
 * all rows first, spilling them (an empty asm, no instruction) */
#define PK2_KEEP(v) __asm__("" : "+x"(v))

#define PK2_MAXR 8 /* activation rows per pass over the weights */

/* int16 pairs summed into int32 lanes */
static TGT INL __m256i pk2_widen(__m256i s)
{
	return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
}

/* a row's half super-block done: tmp less scale * (pairs . sums: the 16-bit
 * pairs of mins or scales against the row's pairs of sums), times the row's
 * d, onto its 8 outputs y (pk_close's arithmetic) */
static TGT INL void pk2_close(const __m256i *pairs, int n, const int16_t *sums, __m256 scale,
                              const struct cpu_q8k *xb, __m256 tmp, float *y)
{
	__m256i ms = _mm256_madd_epi16(pairs[0], pk2_bcast32(sums));
#pragma GCC unroll 8
	for (int i = 1; i < n; i++)
		ms = _mm256_add_epi32(ms, _mm256_madd_epi16(pairs[i], pk2_bcast32(sums + 2 * i)));
	tmp = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms), scale, tmp);
	_mm256_storeu_ps(y, _mm256_fmadd_ps(tmp, _mm256_set1_ps(xb->d), _mm256_loadu_ps(y)));
}

static TGT INL void pk2_zero(float *y, size_t ys, int R)
{
	for (int r = 0; r < R; r++) {
		_mm256_storeu_ps(y + (size_t)r * ys, _mm256_setzero_ps());
		_mm256_storeu_ps(y + (size_t)r * ys + 8, _mm256_setzero_ps());
	}
}

/* Slice part (< 16) of a block of at most 16 n lines, PK_AHEAD bytes on:
 * lines [n part, +n), n a constant, whatever part is (pk_prefetch_part's
 * bounds, computed for a part known only at run time, cost a loop); the
 * last slices reach into the next blocks, which ask for them again */
static TGT INL void pk2_prefetch_slice(const uint8_t *block, int part, int n)
{
	const char *p = (const char *)block + PK_AHEAD + 64 * n * part;
	for (int i = 0; i < n; i++)
		_mm_prefetch(p + 64 * i, _MM_HINT_T0);
}

/* Quarter qt (lines 4 qt .. 4 qt + 3) of Q4_K sub-block j at q, both
 * halves: v[g][h] its elements 4 (4 qt + g) + (0..3) of half h */
static TGT INL void q4_values(const uint8_t *q, int odd, __m256i v[4][2])
{
	const __m256i low = _mm256_set1_epi8(0x0F), high = _mm256_set1_epi8((char)0xF0);
	/* no load shared with the other sub-block of these lines: 8 values live, not 16 */
	__asm__("" : "+r"(q));
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++)
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i l = _mm256_loadu_si256((const __m256i *)(q + 64 * g + 32 * h));
			v[g][h] = odd ? _mm256_srli_epi16(_mm256_and_si256(l, high), 4) : _mm256_and_si256(l, low);
		}
}

/* s += p in s's register: written as an intrinsic, GCC reassociates a
 * row's chain of int16 adds into a tree, computes all the products first
 * and spills them (HACKING.md) */
#define PK2_ADD16(s, p) __asm__("vpaddw %1, %0, %0" : "+x"(s) : "x"(p))

/* s += the sums of u's and x's products 4 by 4 (u8 x s8, in int32 lanes):
 * vpdpbusd on ymm, in asm so that the kernels keep the AVX2 target and
 * its encoding is chosen per table: VEX (AVX-VNNI, enc 1) or EVEX (AVX-512
 * VNNI with VL, enc 2: the same instruction, for the CPUs that have that
 * but not AVX-VNNI) */
#define PK2_DPBUSD(enc, s, u, x)                                                               \
	do {                                                                                   \
		if ((enc) == 1)                                                                \
			__asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(s) : "x"(u), "x"(x));     \
		else                                                                           \
			__asm__("%{evex%} vpdpbusd %2, %1, %0" : "+x"(s) : "x"(u), "x"(x));    \
	} while (0)

/* A row's sums of 4 words against 8 value vectors (v[g][0], v[g][1]:
 * elements 4 g .. 4 g + 3 of two sets of 8 weight rows or nibbles), x the
 * row's 16 activations: s[c] = (first ? 0 : s[c]) + the products of
 * v[.][c]; int16 sums of pairs (enc 0) or int32 sums (VNNI, enc 1, 2) */
static TGT INL void pk2_quarter(int enc, __m256i v[4][2], const int8_t *x, int first, __m256i s[2])
{
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++) {
		__m256i xb = pk2_bcast32(x + 4 * g);
#pragma GCC unroll 2
		for (int c = 0; c < 2; c++) {
			if (enc) {
				if (first && !g)
					s[c] = _mm256_setzero_si256();
				PK2_DPBUSD(enc, s[c], v[g][c], xb);
				continue;
			}
			__m256i p = _mm256_maddubs_epi16(v[g][c], xb);
			if (first && !g)
				s[c] = p;
			else
				PK2_ADD16(s[c], p);
		}
	}
}

/* 16 Q4_K rows (one packed group) against R <= 8 activation rows, a super-
 * block at a time: the integer dots first, a quarter of a sub-block at a
 * time (its 8 values, both halves, met by every row in turn, so that one
 * broadcast of 4 activation bytes meets 16 weight rows and each row's
 * sums are done before the next row's), every row's dot of every sub-
 * block and half left in dot[][][] (exact, so the order leaves the bits
 * alone); then each row's float arithmetic from them, per half, in
 * pk_close's order. On the AVX2 table (enc 0) each sub-block's int16 sums
 * (at most 30480) meet its scales (0..63) in vpmaddwd instead and add up
 * in dot[0][][] (at most 2^25), converted once per half, which leaves
 * out a conversion and a fused multiply-add per sub-block and half. */
static TGT INL void q4_K_packed_rows(int enc, int64_t nb, const uint8_t *w, const char *x, size_t xs, int R,
                                     float *y, size_t ys)
{
	pk2_zero(y, ys, R);
	for (int64_t b = 0; b < nb; b++, w += PK_BLOCK) {
		__m256i dot[8][2][PK2_MAXR], part[PK2_MAXR][2], sc16[8][2];
		if (PK_BURST(R))
			pk_prefetch(w, PK_BLOCK);
		if (!enc)
#pragma GCC unroll 8
			for (int j = 0; j < 8; j++)
#pragma GCC unroll 2
				for (int h = 0; h < 2; h++) {
					__m256i s = pk2_u8x8(w + PK_SC + 16 * j + 8 * h);
					sc16[j][h] = _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
				}
		for (int p = 0; p < 4; p++) {
#pragma GCC unroll 2
			for (int odd = 0; odd < 2; odd++) {
				int j = 2 * p + odd;
#pragma GCC unroll 2
				for (int qt = 0; qt < 2; qt++) {
					__m256i v[4][2];
					if (PK_SPREAD(R))
						pk2_prefetch_slice(w, 2 * j + qt, 3);
					q4_values(w + PK_QS + 512 * p + 256 * qt, odd, v);
#pragma GCC unroll 8
					for (int r = 0; r < R; r++) {
						__m256i t[2] = { part[r][0], part[r][1] };
						pk2_quarter(enc, v, pk_xrow(x, xs, r, b)->qs + 32 * j + 16 * qt, !qt, t);
						if (!qt) {
							part[r][0] = t[0];
							part[r][1] = t[1];
						} else if (enc) {
							dot[j][0][r] = t[0];
							dot[j][1][r] = t[1];
						} else {
#pragma GCC unroll 2
							for (int h = 0; h < 2; h++) {
								__m256i d = _mm256_madd_epi16(t[h], sc16[j][h]);
								dot[0][h][r] = j ? _mm256_add_epi32(dot[0][h][r], d) : d;
							}
						}
					}
				}
			}
		}
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256 sc[8], dv = pk2_f16x8(w + PK_D + 16 * h), mv = pk2_f16x8(w + PK_DMIN + 16 * h);
#pragma GCC unroll 8
			for (int j = 0; j < 8 && enc; j++)
				sc[j] = _mm256_mul_ps(dv, _mm256_cvtepi32_ps(pk2_u8x8(w + PK_SC + 16 * j + 8 * h)));
			__m256i mp[4];
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++)
				mp[i] = _mm256_or_si256(pk2_u8x8(w + PK_MIN + 32 * i + 8 * h),
				                        _mm256_slli_epi32(pk2_u8x8(w + PK_MIN + 32 * i + 16 + 8 * h), 16));
			/* every row's chain of multiply-adds at once: one row's alone
			 * would wait on each one's latency */
			__m256 tmp[PK2_MAXR];
#pragma GCC unroll 8
			for (int r = 0; r < R; r++)
				tmp[r] = enc ? _mm256_setzero_ps() : _mm256_mul_ps(_mm256_cvtepi32_ps(dot[0][h][r]), dv);
#pragma GCC unroll 8
			for (int j = 0; j < 8 && enc; j++)
#pragma GCC unroll 8
				for (int r = 0; r < R; r++)
					tmp[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[j][h][r]), sc[j], tmp[r]);
#pragma GCC unroll 8
			for (int r = 0; r < R; r++)
				pk2_close(mp, 4, pk_xrow(x, xs, r, b)->bsum32, mv, pk_xrow(x, xs, r, b), tmp[r],
				          y + (size_t)r * ys + 8 * h);
		}
	}
}

/* the offset 32 of half h: scales 2 j and 2 j + 1 as the 16-bit halves
 * of a lane, against the row's pairs of sums in pk2_close (pk_q6_offsets) */
static TGT INL void p6_offsets(const uint8_t *w, int h, __m256i sp[8])
{
#pragma GCC unroll 8
	for (int j = 0; j < 8; j++)
		sp[j] = _mm256_or_si256(_mm256_and_si256(pk2_i8x8(w + P6_SC + 32 * j + 8 * h), _mm256_set1_epi32(0xFFFF)),
		                        _mm256_slli_epi32(pk2_i8x8(w + P6_SC + 32 * j + 16 + 8 * h), 16));
}

/* Q6_K sub-block a (sub = 0) or b (1) of a step's lines (ql, qh: the
 * first of four, 64 bytes apart): v[g][h] = its elements 4 g .. 4 g + 3 of
 * half h of the group, the values 0..63 (pk_q6_step's va / vb) */
static TGT INL void p6_values(const uint8_t *ql, const uint8_t *qh, int st, int sub, __m256i v[4][2])
{
	const __m256i low = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
	/* none of these loads shared with the other sub-block's: 8 values live, not 16 */
	__asm__("" : "+r"(ql), "+r"(qh));
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++)
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i l = _mm256_loadu_si256((const __m256i *)(ql + 64 * g + 32 * h));
			__m256i t = _mm256_loadu_si256((const __m256i *)(qh + 64 * g + 32 * h));
			/* the two top bits at bits 4-5: qh bits 0-1 (st 0) or 2-3 (st 1) for
			 * sub-block a, bits 4-5 or 6-7 for b */
			if (!sub)
				t = st ? _mm256_slli_epi16(t, 2) : _mm256_slli_epi16(t, 4);
			else if (st)
				t = _mm256_srli_epi16(t, 2);
			l = sub ? _mm256_srli_epi16(l, 4) : l;
			v[g][h] = _mm256_or_si256(_mm256_and_si256(l, low), _mm256_and_si256(t, top));
		}
}

/* On the AVX2 table (enc 0, no VNNI) the Q6_K passes scale each sub-
 * block's integer sums in integers: vpmaddwd of the pair sums (at most
 * 32004) against the sub-block's scale in both 16-bit halves of each
 * weight row's lane, summed into one int32 per weight row and activation
 * row for the whole super-block, the offset 32 taken off against the
 * activation sums in integers too (|sum| < 2^29), then one conversion and
 * one multiply-add per half. Exact until that conversion, so the order of
 * the rows and sub-blocks and the pass size leave the bits alone; per
 * sub-block, a widening, a conversion and a fused multiply-add became one
 * vpmaddwd, and the dots no longer go to memory. The VNNI tables' int32
 * sums have no such multiply-add, so they keep the float arithmetic, and
 * the two do not give the same bits. */

/* the int8 scales at p of 8 weight rows, each in both 16-bit halves of its lane */
static TGT INL __m256i p6_scale_pairs(const uint8_t *p)
{
	__m256i s = pk2_i8x8(p);
	return _mm256_blend_epi16(s, _mm256_slli_epi32(s, 16), 0xAA);
}

/* a row's half super-block done in integers: its sum less 32 times the
 * scales against its sub-blocks' sums (the offset pairs sp), times the
 * half's d and the row's, onto its 8 outputs y */
static TGT INL void p6_close_int(const __m256i sp[8], __m256i acc, __m256 dv, const struct cpu_q8k *xb, float *y)
{
	__m256i off = _mm256_madd_epi16(sp[0], pk2_bcast32(xb->bsums));
#pragma GCC unroll 8
	for (int j = 1; j < 8; j++)
		off = _mm256_add_epi32(off, _mm256_madd_epi16(sp[j], pk2_bcast32(xb->bsums + 2 * j)));
	__m256 sum = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc, _mm256_slli_epi32(off, 5)));
	_mm256_storeu_ps(y, _mm256_fmadd_ps(sum, _mm256_mul_ps(dv, _mm256_set1_ps(xb->d)), _mm256_loadu_ps(y)));
}

/* 16 Q6_K rows (one packed group) against R <= 8 activation rows (AVX2:
 * 2 <= R), a super-block at a time: per step of pk_q6_step, sub-block a's
 * values for every row, then b's (8 values live, and each row's dots done
 * before the next row's). VNNI: every row's dot of every sub-block left in
 * dot[][][], then each row's float arithmetic from them, per half, in
 * pk_q6_step's order and pk_close's. AVX2: each row's scaled sums added
 * up in acc[][] and closed by p6_close_int. */
static TGT INL void q6_K_packed_rows(int enc, int64_t nb, const uint8_t *w, const char *x, size_t xs, int R,
                                     float *y, size_t ys)
{
	pk2_zero(y, ys, R);
	for (int64_t b = 0; b < nb; b++, w += P6_BLOCK) {
		__m256i dot[16][2][PK2_MAXR], acc[2][PK2_MAXR], sc16[16][2];
		if (PK_BURST(R))
			pk_prefetch(w, P6_BLOCK);
		if (!enc)
#pragma GCC unroll 16
			for (int j = 0; j < 16; j++)
#pragma GCC unroll 2
				for (int h = 0; h < 2; h++)
					sc16[j][h] = p6_scale_pairs(w + P6_SC + 16 * j + 8 * h);
		/* steps 4 hh + 2 e + st, lines 12 (2 hh + e) on (p6_ql_line, p6_qh_line) */
		for (int he = 0; he < 4; he++) {
			int hh = he / 2, e = he % 2;
			const uint8_t *lq = w + P6_Q + 12 * 64 * he;
#pragma GCC unroll 2
			for (int st = 0; st < 2; st++) {
				int step = 4 * hh + 2 * e + st;
				if (PK_SPREAD(R))
					pk2_prefetch_slice(w, 2 * step, 4);
#pragma GCC unroll 2
				for (int sub = 0; sub < 2; sub++) {
					int sb = 8 * hh + 2 * (st + 2 * sub) + e;
					__m256i v[4][2];
					p6_values(lq + 8 * 64 * st, lq + 4 * 64, st, sub, v);
#pragma GCC unroll 8
					for (int r = 0; r < R; r++) {
						const int8_t *xp = pk_xrow(x, xs, r, b)->qs + 16 * sb;
						if (enc) {
							__m256i d[2];
							pk2_quarter(enc, v, xp, 1, d);
							dot[sb][0][r] = d[0];
							dot[sb][1][r] = d[1];
							continue;
						}
#pragma GCC unroll 2
						for (int gp = 0; gp < 2; gp++) {
							__m256i b0 = pk2_bcast32(xp + 8 * gp), b1 = pk2_bcast32(xp + 8 * gp + 4);
#pragma GCC unroll 2
							for (int h = 0; h < 2; h++) {
								__m256i t = _mm256_madd_epi16(
									_mm256_add_epi16(_mm256_maddubs_epi16(v[2 * gp][h], b0),
									                 _mm256_maddubs_epi16(v[2 * gp + 1][h], b1)),
									sc16[sb][h]);
								acc[h][r] = he || st || sub || gp ? _mm256_add_epi32(acc[h][r], t) : t;
							}
						}
					}
					if (PK_SPREAD(R) && !sub)
						pk2_prefetch_slice(w, 2 * step + 1, 4);
				}
			}
		}
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256 sc[16], dv = pk2_f16x8(w + P6_D + 16 * h);
			__m256i sp[8];
			p6_offsets(w, h, sp);
			if (!enc) {
#pragma GCC unroll 8
				for (int r = 0; r < R; r++)
					p6_close_int(sp, acc[h][r], dv, pk_xrow(x, xs, r, b), y + (size_t)r * ys + 8 * h);
				continue;
			}
#pragma GCC unroll 16
			for (int j = 0; j < 16; j++)
				sc[j] = _mm256_mul_ps(dv, _mm256_cvtepi32_ps(pk2_i8x8(w + P6_SC + 16 * j + 8 * h)));
			__m256 d32 = _mm256_mul_ps(dv, _mm256_set1_ps(32.0f));
			/* every row's chain of multiply-adds at once: one row's alone
			 * would wait on each one's latency */
			__m256 tmp[PK2_MAXR];
#pragma GCC unroll 8
			for (int r = 0; r < R; r++)
				tmp[r] = _mm256_setzero_ps();
#pragma GCC unroll 8
			for (int step = 0; step < 8; step++) {
				int hh = step / 4, e = step / 2 % 2, st = step % 2;
				int sa = 8 * hh + 2 * st + e, sb = 8 * hh + 2 * (st + 2) + e;
#pragma GCC unroll 8
				for (int r = 0; r < R; r++) {
					tmp[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[sa][h][r]), sc[sa], tmp[r]);
					tmp[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[sb][h][r]), sc[sb], tmp[r]);
				}
			}
#pragma GCC unroll 8
			for (int r = 0; r < R; r++)
				pk2_close(sp, 8, pk_xrow(x, xs, r, b)->bsums, d32, pk_xrow(x, xs, r, b), tmp[r],
				          y + (size_t)r * ys + 8 * h);
		}
	}
}

/* A Q5_0 word's fifth bits, 4 per row of the half (bit 4 c + b: element b
 * of row c), as the byte 0x10 where set */
static TGT INL __m256i p5_bits(const uint8_t *mask)
{
	const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
	                                        3, 3, 3, 3, 3, 3, 3, 3);
	const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
	__m256i v = _mm256_shuffle_epi8(pk2_bcast32(mask), spread);
	return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
}

enum { P2_Q8_0, P2_Q5_0, P2_Q4_1 };

/* Part pt of 32-element block h2 of a Q4_1 or Q5_0 pair, both halves:
 * v[g][h] = elements 16 pt + 4 g + (0..3) of half h (pt 0: the low nibbles
 * of the block's four words, 1: the high ones; Q5_0 with its fifth bit) */
static TGT INL void p41_values(int kind, const uint8_t *w, int h2, int pt, __m256i v[4][2])
{
	const __m256i low = _mm256_set1_epi8(0x0F), high = _mm256_set1_epi8((char)0xF0);
	const uint8_t *q = kind == P2_Q5_0 ? w + P5_Q + P5_HALF * h2 + 64 : w + P41_Q + 256 * h2;
	/* no load shared with the other part of these words: 8 values live, not 16 */
	__asm__("" : "+r"(q));
#pragma GCC unroll 4
	for (int g = 0; g < 4; g++)
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i l = _mm256_loadu_si256((const __m256i *)(q + 64 * g + 32 * h));
			v[g][h] = pt ? _mm256_srli_epi16(_mm256_and_si256(l, high), 4) : _mm256_and_si256(l, low);
			if (kind == P2_Q5_0)
				v[g][h] = _mm256_add_epi8(v[g][h], p5_bits(q - 64 + 8 * (4 * pt + g) + 4 * h));
		}
}

/* 16 Q5_0 or Q4_1 rows against R <= 8 activation rows, a pair of blocks
 * at a time: a part of a block (its 8 values, both halves) met by every
 * row in turn, so that one broadcast of 4 activation bytes meets 16
 * weight rows; per row and block the AVX-512 kernel's integer dot (Q4_1's
 * values 0..15 in int16 sums of 8 pairs, at most 30480; Q5_0's 0..31 of
 * 4, 31496), then its float arithmetic, onto y */
static TGT INL void p41_packed_rows(int enc, int kind, int64_t nb, const uint8_t *w, const char *x, size_t xs,
                                    int R, float *y, size_t ys)
{
	const int bytes = kind == P2_Q5_0 ? P5_BLOCK : P41_BLOCK;
	pk2_zero(y, ys, R);
	for (int64_t b = 0; b < nb; b++, w += bytes) {
		if (PK_BURST(R))
			pk_prefetch(w, bytes);
#pragma GCC unroll 2
		for (int h2 = 0; h2 < 2; h2++) {
			__m256i part[PK2_MAXR][2];
			__m256 dv[2], mv[2];
			if (PK_SPREAD(R))
				pk_prefetch_part(w, bytes, h2, 2);
#pragma GCC unroll 2
			for (int pt = 0; pt < 2; pt++) {
				__m256i v[4][2];
				p41_values(kind, w, h2, pt, v);
#pragma GCC unroll 8
				for (int r = 0; r < R; r++) {
					const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + 2 * b + h2;
					__m256i s[2] = { part[r][0], part[r][1] };
					if (enc) {
						pk2_quarter(enc, v, xb->qs + 16 * pt, !pt, s);
						part[r][0] = s[0];
						part[r][1] = s[1];
						continue;
					}
					pk2_quarter(enc, v, xb->qs + 16 * pt, 1, s);
#pragma GCC unroll 2
					for (int h = 0; h < 2; h++)
						if (kind == P2_Q4_1)
							part[r][h] = pt ? pk2_widen(_mm256_add_epi16(s[h], part[r][h])) : s[h];
						else
							part[r][h] = pt ? _mm256_add_epi32(pk2_widen(s[h]), part[r][h]) : pk2_widen(s[h]);
				}
			}
#pragma GCC unroll 2
			for (int h = 0; h < 2; h++) {
				dv[h] = pk2_f16x8(w + (kind == P2_Q5_0 ? P5_D : P41_D) + 32 * h2 + 16 * h);
				mv[h] = kind == P2_Q4_1 ? pk2_f16x8(w + P41_M + 32 * h2 + 16 * h) : _mm256_setzero_ps();
			}
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) {
				const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + 2 * b + h2;
#pragma GCC unroll 2
				for (int h = 0; h < 2; h++) {
					float *yr = y + (size_t)r * ys + 8 * h;
					__m256i dot = part[r][h];
					if (kind == P2_Q5_0)
						dot = _mm256_sub_epi32(dot, _mm256_set1_epi32(16 * xb->sum));
					__m256 acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
					                             _mm256_mul_ps(dv[h], _mm256_set1_ps(xb->d)), _mm256_loadu_ps(yr));
					if (kind == P2_Q4_1)
						acc = _mm256_fmadd_ps(mv[h], _mm256_set1_ps(xb->s), acc);
					_mm256_storeu_ps(yr, acc);
				}
			}
		}
	}
}

/* 16 Q8_0 rows against R <= 8 activation rows, in parts of 4 words of a
 * block met by every row in turn; per row and block the AVX-512 kernel's
 * integer dot, dot(u, x) - 128 sum(x) of the stored bytes u = q + 128,
 * then its float arithmetic, onto y. vpmaddubsw (enc 0) takes a half of 8
 * rows at a time, u as its two nibbles (8 value vectors) in int16 sums of
 * 8 pairs of 0..15 x -127..127 (at most 30480) of each; vpsignb and
 * vpabsb, the other way to multiply signed bytes, share the two pipes
 * vpmaddubsw runs on (measured slower). VNNI takes u itself, both halves. */
static TGT INL void q8_0_packed_rows(int enc, int64_t nb, const uint8_t *w, const char *x, size_t xs, int R,
                                     float *y, size_t ys)
{
	const __m256i low = _mm256_set1_epi8(0x0F), high = _mm256_set1_epi8((char)0xF0);
	pk2_zero(y, ys, R);
	for (int64_t b = 0; b < nb; b++, w += P8_BLOCK) {
		if (PK_BURST(R))
			pk_prefetch(w, P8_BLOCK);
#pragma GCC unroll 2
		for (int h2 = 0; h2 < 2; h2++) {
			if (PK_SPREAD(R))
				pk_prefetch_part(w, P8_BLOCK, h2, 2);
#pragma GCC unroll 2
			for (int h = 0; h < 2; h++) {
				__m256i part[PK2_MAXR][2];
				if (enc && h)
					break;
#pragma GCC unroll 2
				for (int pt = 0; pt < 2; pt++) {
					const uint8_t *q = w + P8_Q + 512 * h2 + 256 * pt + 32 * h;
					__m256i v[4][2];
#pragma GCC unroll 4
					for (int g = 0; g < 4; g++) {
						__m256i u = _mm256_loadu_si256((const __m256i *)(q + 64 * g));
						if (enc) {
							v[g][0] = u;
							v[g][1] = _mm256_loadu_si256((const __m256i *)(q + 64 * g + 32));
						} else {
							v[g][0] = _mm256_and_si256(u, low);
							v[g][1] = _mm256_srli_epi16(_mm256_and_si256(u, high), 4);
						}
					}
#pragma GCC unroll 8
					for (int r = 0; r < R; r++) {
						const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + 2 * b + h2;
						__m256i t[2] = { part[r][0], part[r][1] };
						pk2_quarter(enc, v, xb->qs + 16 * pt, !pt, t);
						part[r][0] = t[0];
						part[r][1] = t[1];
					}
				}
#pragma GCC unroll 2
				for (int c = 0; c < 2; c++) {
					if (!enc && c)
						break;
					__m256 dv = pk2_f16x8(w + P8_D + 32 * h2 + 16 * (h + c));
#pragma GCC unroll 8
					for (int r = 0; r < R; r++) {
						const struct cpu_q8 *xb = (const struct cpu_q8 *)(x + (size_t)r * xs) + 2 * b + h2;
						float *yr = y + (size_t)r * ys + 8 * (h + c);
						__m256i dot = enc ? part[r][c]
						                  : _mm256_add_epi32(pk2_widen(part[r][0]),
						                                     _mm256_madd_epi16(part[r][1], _mm256_set1_epi16(16)));
						dot = _mm256_sub_epi32(dot, _mm256_set1_epi32(128 * xb->sum));
						_mm256_storeu_ps(yr, _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
						                                     _mm256_mul_ps(dv, _mm256_set1_ps(xb->d)),
						                                     _mm256_loadu_ps(yr)));
					}
				}
			}
		}
	}
}

/* The multi-row passes of each table: the AVX2 one (enc 0) and the VNNI
 * ones (PK2_DPBUSD) */
#define PK2_ROWS(SUF, ENC)                                                                                   \
	static TGT INL void pk2_q4_K##SUF(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y, \
	                                   size_t ys)                                                            \
	{                                                                                                        \
		q4_K_packed_rows(ENC, nb, w, x, xs, R, y, ys);                                                   \
	}                                                                                                        \
	static TGT INL void pk2_q6_K##SUF(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y, \
	                                   size_t ys)                                                            \
	{                                                                                                        \
		q6_K_packed_rows(ENC, nb, w, x, xs, R, y, ys);                                                   \
	}                                                                                                        \
	static TGT INL void pk2_q8_0##SUF(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y, \
	                                   size_t ys)                                                            \
	{                                                                                                        \
		q8_0_packed_rows(ENC, nb, w, x, xs, R, y, ys);                                                   \
	}                                                                                                        \
	static TGT INL void pk2_q5_0##SUF(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y, \
	                                   size_t ys)                                                            \
	{                                                                                                        \
		p41_packed_rows(ENC, P2_Q5_0, nb, w, x, xs, R, y, ys);                                            \
	}                                                                                                        \
	static TGT INL void pk2_q4_1##SUF(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y, \
	                                   size_t ys)                                                            \
	{                                                                                                        \
		p41_packed_rows(ENC, P2_Q4_1, nb, w, x, xs, R, y, ys);                                            \
	}
PK2_ROWS(, 0)
PK2_ROWS(_vex, 1)
PK2_ROWS(_evex, 2)

/* ---- passes of one row (decode): Q6_K, Q8_0, Q5_0 ----
 *
 * The passes above decode a block's values once for all their rows and
 * arrange the work so that rows share it; at one row that costs more than
 * it saves (in cache, Q6_K's one-row pass took 15 % longer, Q8_0's 4 %,
 * Q5_0's 2 %; Q6_K's two-row pass, 6 % longer in the float arithmetic,
 * is faster there since its sub-blocks are scaled in integers).
 * These take each half of 8 weight rows on its own, as the kernels of
 * 1..4 rows did before, with the same arithmetic. */

/* 16 Q6_K rows against one activation row, the arithmetic of
 * q6_K_packed_rows with enc 0: per half and step of pk_q6_step, the
 * lines read once for both sub-blocks */
static TGT INL void q6_K_scaled_one(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y,
                                    size_t ys)
{
	const __m256i low = _mm256_set1_epi8(0x0F), high = _mm256_set1_epi8((char)0xF0), m33 = _mm256_set1_epi8(0x33);
	const struct cpu_q8k *xr = pk_xrow(x, xs, 0, 0);
	pk2_zero(y, ys, R);
	for (int64_t b = 0; b < nb; b++, w += P6_BLOCK) {
		if (cpu_pk_prefetch)
			pk_prefetch(w, P6_BLOCK);
		for (int h = 0; h < 2; h++) {
			__m256i acc = _mm256_setzero_si256();
			const uint8_t *lq = w + P6_Q + 32 * h;
#pragma GCC unroll 8
			for (int step = 0; step < 8; step++) {
				int hh = step / 4, e = step / 2 % 2, st = step % 2;
				int sab[2] = { 8 * hh + 2 * st + e, 8 * hh + 2 * (st + 2) + e };
				__m256i sc[2] = { p6_scale_pairs(w + P6_SC + 16 * sab[0] + 8 * h),
				                  p6_scale_pairs(w + P6_SC + 16 * sab[1] + 8 * h) };
#pragma GCC unroll 2
				for (int gp = 0; gp < 2; gp++) {
					__m256i v[2][2];
#pragma GCC unroll 2
					for (int i = 0; i < 2; i++) {
						int g = 2 * gp + i;
						__m256i ql = _mm256_loadu_si256(
							(const __m256i *)(lq + p6_ql_line(16 * hh + 8 * st + 4 * e + g) * 64));
						__m256i qh = _mm256_loadu_si256(
							(const __m256i *)(lq + p6_qh_line(8 * hh + 4 * e + g) * 64));
						qh = _mm256_and_si256(st ? _mm256_srli_epi16(qh, 2) : qh, m33);
						v[0][i] = _mm256_or_si256(_mm256_and_si256(ql, low),
						                          _mm256_and_si256(_mm256_slli_epi16(qh, 4), high));
						v[1][i] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql, 4), low),
						                          _mm256_and_si256(qh, high));
					}
#pragma GCC unroll 2
					for (int sub = 0; sub < 2; sub++) {
						const int8_t *xp = xr[b].qs + 16 * sab[sub] + 8 * gp;
						acc = _mm256_add_epi32(
							acc, _mm256_madd_epi16(
								     _mm256_add_epi16(_mm256_maddubs_epi16(v[sub][0], pk2_bcast32(xp)),
								                      _mm256_maddubs_epi16(v[sub][1], pk2_bcast32(xp + 4))),
								     sc[sub]));
					}
				}
			}
			__m256i sp[8];
			p6_offsets(w, h, sp);
			p6_close_int(sp, acc, pk2_f16x8(w + P6_D + 16 * h), xr + b, y + 8 * h);
		}
	}
}

/* 16 Q8_0 or Q5_0 rows against one activation row, one half of 8 rows over
 * all of k, then the other: per 32-element block the AVX-512 kernel's
 * integer dot (Q8_0's signed bytes through vpsignb, so no offset to take
 * off, each int16 pair sum, at most 32512, widened; Q5_0's values 0..31
 * widened after 4 sums, 31496), then its float arithmetic */
static TGT INL void blk32_packed_one(int kind, int64_t nb, const uint8_t *w0, const char *x, float *y)
{
	const int bytes = kind == P2_Q5_0 ? P5_BLOCK : P8_BLOCK;
	const __m256i low = _mm256_set1_epi8(0x0F);
	for (int half = 0; half < 2; half++) {
		__m256 acc = _mm256_setzero_ps();
		const uint8_t *w = w0;
		for (int64_t b = 0; b < nb; b++, w += bytes) {
			if (!half && cpu_pk_prefetch)
				pk_prefetch(w, bytes);
#pragma GCC unroll 2
			for (int h = 0; h < 2; h++) {
				const struct cpu_q8 *xb = (const struct cpu_q8 *)x + 2 * b + h;
				__m256i wq[8], dot;
				__m256 dv;
				if (kind == P2_Q8_0) {
#pragma GCC unroll 8
					for (int g = 0; g < 8; g++)
						wq[g] = _mm256_xor_si256(
							_mm256_loadu_si256((const __m256i *)(w + P8_Q + 512 * h + 64 * g + 32 * half)),
							_mm256_set1_epi8((char)0x80));
					dv = pk2_f16x8(w + P8_D + 32 * h + 16 * half);
					dot = _mm256_setzero_si256();
#pragma GCC unroll 8
					for (int g = 0; g < 8; g++) {
						__m256i sx = _mm256_sign_epi8(pk2_bcast32(xb->qs + 4 * g), wq[g]);
						dot = _mm256_add_epi32(dot, pk2_widen(_mm256_maddubs_epi16(_mm256_abs_epi8(wq[g]), sx)));
						PK2_KEEP(dot);
					}
				} else {
					const uint8_t *q = w + P5_Q + P5_HALF * h + 64;
#pragma GCC unroll 4
					for (int g = 0; g < 4; g++) {
						__m256i v = _mm256_loadu_si256((const __m256i *)(q + 64 * g + 32 * half));
						wq[g] = _mm256_and_si256(v, low);
						wq[g + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
					}
#pragma GCC unroll 8
					for (int g = 0; g < 8; g++)
						wq[g] = _mm256_add_epi8(wq[g], p5_bits(q - 64 + 8 * g + 4 * half));
					dv = pk2_f16x8(w + P5_D + 32 * h + 16 * half);
					__m256i s0 = _mm256_maddubs_epi16(wq[0], pk2_bcast32(xb->qs));
					__m256i s1 = _mm256_maddubs_epi16(wq[4], pk2_bcast32(xb->qs + 16));
#pragma GCC unroll 3
					for (int g = 1; g < 4; g++) {
						s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(wq[g], pk2_bcast32(xb->qs + 4 * g)));
						s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(wq[g + 4],
						                                              pk2_bcast32(xb->qs + 16 + 4 * g)));
						PK2_KEEP(s0);
						PK2_KEEP(s1);
					}
					dot = _mm256_sub_epi32(_mm256_add_epi32(pk2_widen(s0), pk2_widen(s1)),
					                       _mm256_set1_epi32(16 * xb->sum));
				}
				acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dv, _mm256_set1_ps(xb->d)), acc);
			}
		}
		_mm256_storeu_ps(y + 8 * half, acc);
	}
}

#define ONE_ROW(NAME, CALL)                                                                                     \
	static TGT INL void NAME(int64_t nb, const uint8_t *w, const char *x, size_t xs, int R, float *y, size_t ys) \
	{                                                                                                            \
		CALL;                                                                                                \
	}
ONE_ROW(q8_0_one_row, blk32_packed_one(P2_Q8_0, nb, w, x, y))
ONE_ROW(q5_0_one_row, blk32_packed_one(P2_Q5_0, nb, w, x, y))

/* w at a group of 16 rows, wrb = a group's bytes / 16; nc a multiple of 16;
 * SPAN elements per packed block; FEW the passes of up to NFEW rows */
#define AVX2_PACKED_MATMUL(NAME, ROWS, FEW, NFEW, SPAN)                                                         \
	static TGT void NAME(int64_t k, const void *w, size_t wrb, int nc, const void *x, size_t xs, int nr, \
	                     float *y, size_t ys)                                                            \
	{                                                                                                    \
		for (int c = 0; c < nc; c += CPU_PACK_ROWS) {                                                \
			const uint8_t *wr = (const uint8_t *)w + (size_t)c * wrb;                            \
			int r = 0;                                                                           \
			for (; r + PK2_MAXR <= nr; r += PK2_MAXR)                                            \
				ROWS(k / SPAN, wr, XR, xs, PK2_MAXR, YR, ys);                                \
			switch (nr - r) {                                                                    \
			case 7: ROWS(k / SPAN, wr, XR, xs, 7, YR, ys); break;                                 \
			case 6: ROWS(k / SPAN, wr, XR, xs, 6, YR, ys); break;                                 \
			case 5: ROWS(k / SPAN, wr, XR, xs, 5, YR, ys); break;                                 \
			case 4: ROWS(k / SPAN, wr, XR, xs, 4, YR, ys); break;                                 \
			case 3: 3 <= NFEW ? FEW(k / SPAN, wr, XR, xs, 3, YR, ys) : ROWS(k / SPAN, wr, XR, xs, 3, YR, ys); break; \
			case 2: 2 <= NFEW ? FEW(k / SPAN, wr, XR, xs, 2, YR, ys) : ROWS(k / SPAN, wr, XR, xs, 2, YR, ys); break; \
			case 1: 1 <= NFEW ? FEW(k / SPAN, wr, XR, xs, 1, YR, ys) : ROWS(k / SPAN, wr, XR, xs, 1, YR, ys); break; \
			}                                                                                    \
		}                                                                                            \
	}

AVX2_PACKED_MATMUL(mm_q4_K_packed, pk2_q4_K, pk2_q4_K, 0, 256)
AVX2_PACKED_MATMUL(mm_q6_K_packed, pk2_q6_K, q6_K_scaled_one, 1, 256)
AVX2_PACKED_MATMUL(mm_q8_0_packed, pk2_q8_0, q8_0_one_row, 1, 64)
AVX2_PACKED_MATMUL(mm_q5_0_packed, pk2_q5_0, q5_0_one_row, 1, 64)
AVX2_PACKED_MATMUL(mm_q4_1_packed, pk2_q4_1, pk2_q4_1, 0, 64)

/* the VNNI tables run every pass size through the multi-row kernels */
#define PK2_VNNI_MATMULS(SUF)                                                                  \
	AVX2_PACKED_MATMUL(mm_q4_K_packed##SUF, pk2_q4_K##SUF, pk2_q4_K##SUF, 0, 256)                  \
	AVX2_PACKED_MATMUL(mm_q6_K_packed##SUF, pk2_q6_K##SUF, pk2_q6_K##SUF, 0, 256)                  \
	AVX2_PACKED_MATMUL(mm_q8_0_packed##SUF, pk2_q8_0##SUF, pk2_q8_0##SUF, 0, 64)                   \
	AVX2_PACKED_MATMUL(mm_q5_0_packed##SUF, pk2_q5_0##SUF, pk2_q5_0##SUF, 0, 64)                   \
	AVX2_PACKED_MATMUL(mm_q4_1_packed##SUF, pk2_q4_1##SUF, pk2_q4_1##SUF, 0, 64)
PK2_VNNI_MATMULS(_vex)
PK2_VNNI_MATMULS(_evex)

const struct cpu_kernels cpu_kernels_avx2 = {
	.name = "avx2",
	.matmul = {
		[CPU_W_F32] = mm_f32, [CPU_W_F16] = mm_f16, [CPU_W_BF16] = mm_bf16,
		[CPU_W_Q4_0] = mm_q4_0, [CPU_W_Q4_1] = mm_q4_1, [CPU_W_Q8_0] = mm_q8_0,
		[CPU_W_Q5_0] = mm_q5_0, [CPU_W_Q5_1] = mm_q5_1, [CPU_W_Q4_K] = mm_q4_K,
		[CPU_W_Q5_K] = mm_q5_K, [CPU_W_Q6_K] = mm_q6_K,
	},
	.quantize_q8 = quantize_q8,
	.quantize_q8k = quantize_q8k,
	.attn_scores = { a_attn_scores_f16, a_attn_scores_q8 },
	.attn_values = { a_attn_values_f16, a_attn_values_q8 },
	.silu_mul = a_silu_mul,
	.exp_sum = a_exp_sum,
	.f32_to_f16 = a_f32_to_f16,
	.round_f16 = a_round_f16,
	.pack_size = cpu_pack_size,
	.pack = cpu_pack,
	.matmul_packed = { [CPU_W_Q4_K] = mm_q4_K_packed, [CPU_W_Q6_K] = mm_q6_K_packed, [CPU_W_Q8_0] = mm_q8_0_packed,
	                   [CPU_W_Q5_0] = mm_q5_0_packed, [CPU_W_Q4_1] = mm_q4_1_packed },
};

void cpu_kernels_avxvnni_fill(struct cpu_kernels *t, int evex)
{
	t->name = "avxvnni";
	t->matmul_packed[CPU_W_Q4_K] = evex ? mm_q4_K_packed_evex : mm_q4_K_packed_vex;
	t->matmul_packed[CPU_W_Q6_K] = evex ? mm_q6_K_packed_evex : mm_q6_K_packed_vex;
	t->matmul_packed[CPU_W_Q8_0] = evex ? mm_q8_0_packed_evex : mm_q8_0_packed_vex;
	t->matmul_packed[CPU_W_Q5_0] = evex ? mm_q5_0_packed_evex : mm_q5_0_packed_vex;
	t->matmul_packed[CPU_W_Q4_1] = evex ? mm_q4_1_packed_evex : mm_q4_1_packed_vex;
}

#endif
