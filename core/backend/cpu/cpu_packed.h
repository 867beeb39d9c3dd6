/* The packed weight layouts (cpu_kernels.pack; written by cpu_pack.c) and
 * the AVX-512 pieces of their kernels: unpacking a sub-block's weights,
 * its scales, and the per-row closing arithmetic. Kept apart from the
 * kernels so that another way of forming the integer dot products (AMX
 * tiles were tried: see HACKING.md) can reuse the rest and give the same
 * bits. The AVX2 table runs all five from the same layouts, each 64-byte
 * line as two halves of 8 rows, and gives the same bits.
 *
 * Q4_K, one super-block of a group of 16 rows (2368 bytes, 37 cache lines;
 * 2304 as GGUF has them):
 *   [0, 32)       d of the 16 rows (fp16), [32, 64) dmin
 *   [64, 192)     the 6-bit scale of sub-block s of row c at 64 + 16 s + c
 *   [192, 320)    the mins, likewise
 *   [320, 2368)   4-byte words, word (8 p + g) * 16 + c = bytes qs[32 p + 4 g, +4)
 *                 of row c: low nibbles elements 64 p + 4 g + (0..3)
 *                 (sub-block 2 p), high nibbles 32 further (sub-block 2 p + 1)
 * Q6_K, likewise (3392 bytes, 53 lines; 3360 as GGUF has them):
 *   [0, 32)       d of the 16 rows (fp16), [32, 64) zero
 *   [64, 320)     the scale of sub-block s of row c at 64 + 16 s + c
 *   [320, 3392)   lines of 16 words, word c of a line = 4 bytes of row c: the
 *                 ql and qh words in the order pk_q6_step reads them
 *                 (p6_ql_line, p6_qh_line)
 *   (in each half of 128 elements, GGUF's bytes ql[l] and ql[32 + l] hold
 *   the low 4 bits of elements l, 64 + l and 32 + l, 96 + l, and qh[l]
 *   the top 2 bits of l, 32 + l, 64 + l, 96 + l, l < 32)
 * Q8_0, two 32-element blocks of a group of 16 rows (1088 bytes, 17 lines;
 * 1088 as GGUF has them):
 *   [0, 32)       d of block 2 p of the 16 rows (fp16), [32, 64) of 2 p + 1
 *   [64, 576)     block 2 p: word g * 16 + c = bytes qs[4 g, +4) of row c,
 *                 each flipped by 0x80 (q + 128, an unsigned byte: the
 *                 128 comes off through the activations' block sum)
 *   [576, 1088)   block 2 p + 1, likewise
 * Q5_0, two 32-element blocks of a group of 16 rows (704 bytes, 11 lines;
 * 704 as GGUF has them):
 *   [0, 64)       d of blocks 2 p and 2 p + 1 of the 16 rows (fp16)
 *   [64, 384)     block 2 p: [0, 64) eight 64-bit masks, bit 4 c + b of
 *                 mask s = the fifth bit of element 4 s + b of row c; [64,
 *                 320) word g * 16 + c = bytes qs[4 g, +4) of row c (low
 *                 nibbles elements 4 g + b, high nibbles 16 + 4 g + b)
 *   [384, 704)    block 2 p + 1, likewise
 * Q4_1, two 32-element blocks of a group of 16 rows (640 bytes, 10 lines;
 * 640 as GGUF has them):
 *   [0, 64)       d of blocks 2 p and 2 p + 1 of the 16 rows (fp16)
 *   [64, 128)     m, likewise
 *   [128, 384)    block 2 p: word g * 16 + c = bytes qs[4 g, +4) of row c
 *   [384, 640)    block 2 p + 1, likewise
 * All five are read front to back, one cache line after the other, and a
 * block is a whole number of lines, so no load splits a line. On an AMD
 * EPYC (Zen 4) a Q6_K layout read out of order within each block (ql
 * lines 0-3, 8-11, 4-7, ...) streamed at half the bandwidth of an
 * in-order one: the hardware prefetcher follows ascending lines.
 * One vector holds 4 elements of 16 rows (also the layout of an AMX B
 * tile): vpdpbusd against one broadcast word of the activations gives 16
 * outputs at once, and a sub-block's scale is one multiply across the 16
 * rows (the GGUF layout needs a shuffle of the scales and a horizontal
 * sum per row). */
#ifndef SKIPPER_CPU_PACKED_H
#define SKIPPER_CPU_PACKED_H

#include <immintrin.h>

#include "cpu_kernels.h"

/* prfchw: every AVX-512 CPU has PREFETCHW (lines asked for before writing) */
#define PK_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c,prfchw")))
#define PK_INL __attribute__((always_inline)) inline

#define PK_BLOCK 2368
#define PK_D 0
#define PK_DMIN 32
#define PK_SC 64
#define PK_MIN 192
#define PK_QS 320

#define P8_BLOCK 1088
#define P8_D 0
#define P8_Q 64

#define P5_BLOCK 704
#define P5_D 0
#define P5_Q 64 /* block h of the pair at P5_Q + P5_HALF * h */
#define P5_HALF 320

#define P41_BLOCK 640
#define P41_D 0
#define P41_M 64
#define P41_Q 128 /* block h of the pair at P41_Q + 256 * h */

#define P6_BLOCK 3392
#define P6_D 0
#define P6_SC 64
#define P6_Q 320

/* Bytes of kind's packed layout for nc weight rows of length k; 0 for a
 * kind with none, or a shape it cannot take (k a whole number of blocks,
 * nc of CPU_PACK_ROWS). */
size_t cpu_pack_size(int kind, int64_t k, int nc);
/* Write that layout of nc rows at w, wrb bytes apart, to out (the caller's
 * cpu_pack_size bytes). */
void cpu_pack(int kind, int64_t k, const void *w, size_t wrb, int nc, void *out);

/* The line of a Q6_K block that holds ql word t (bytes ql[4 t, +4)) and qh
 * word u of the 16 rows: per half h and element range e, the ql words of
 * quarters 0/2 (st = 0), the qh words they share, then the ql words of
 * quarters 1/3 (st = 1), as pk_q6_step visits them. */
static inline int p6_ql_line(int t)
{
	int h = t / 16, st = t / 8 % 2, e = t / 4 % 2, g = t % 4;
	return 12 * (2 * h + e) + 8 * st + g;
}

static inline int p6_qh_line(int u)
{
	int h = u / 8, e = u / 4 % 2, g = u % 4;
	return 12 * (2 * h + e) + 4 + g;
}

/* Every packed pass asks for each block's lines PK_AHEAD bytes on, into
 * L1, as it starts the block. On an AMD EPYC (Zen 4) the hardware
 * prefetchers alone fall behind: a compute-bound pass (3 rows or more)
 * read from memory ran at half its in-cache speed (Q4_K, 8 rows: 7.0 GB/s
 * of weights against 13.1 in tests/bench-kernels; 11.3 with these
 * prefetches), and with both threads streaming, so did the memory-bound
 * passes of one and two rows. Asking for them too took the decode step
 * (tests/bench-decode, 2 threads, runs in turns) 15-19 % faster on the
 * 1.5B, 6 % on the 0.5B and 8 % on SmolLM2, and a pass of 2 rows on the
 * 1.5B from 1.17-1.20 steps to 1.02-1.10. The distance is in bytes, not
 * blocks: 7 KB (3 Q4_K blocks) did as well as or better than 4 and 12 KB
 * on all three models; the small blocks (Q4_1, 640 bytes) need 11 of it.
 * Into L1 (T0) rather than L2 gained nothing on the Zen 4 and is faster on
 * a Zen 5 (family 26; 2 threads, old and new in turns): the 1.5B's decode
 * step 3 % (bench-decode, 5 of 6 pairs; 7 % on the AVX2 kernels, 4 of
 * 4), its pass of 8 rows 5 % (bench-verify), the 0.5B's step 3 %; 4, 10
 * and 14 KB into L1 did no better there than 7. The last blocks of a
 * matrix ask for lines past its end: a prefetch never faults. */
#define PK_AHEAD 7168

/* A pass of this many rows or more is bound by its VNNI instructions, and
 * asks for a block's lines a slice at a time, one slice before each
 * sub-block (pk_prefetch_part), rather than all at the block's start. On
 * a Zen 5 (family 26, 2 threads, tests/bench-verify, old and new build in
 * turns) the 1.5B's passes of 6 / 8 / 16 rows went from 26.0 / 29.4-29.9
 * / 47.8-48.4 ms to 23.1-23.3 / 24.0-25.8 / 42.2-42.5 (a decode step:
 * 21 ms, unchanged; 8 rows: gate/up 12.0 -> 10.1-10.7 ms, down 7.7-8.0 ->
 * 6.3-6.4, LM head 5.5-6.0 -> 4.4), the 0.5B's 8 rows from 10.6 to 10.1,
 * and on the AVX2 kernels the 1.5B's 4 / 8 rows from 33.9-34.4 /
 * 61.5-62.8 to 30.3 / 56.8-58.1. Passes of 1 and 2 rows, bound by memory,
 * want as many lines in flight as early as possible (sliced, they were
 * 5-7 % slower); at 3 rows the two ways came out even. The slices are
 * asked for only while cpu_pk_prefetch is set (SKIPPER_CPU_PREFETCH), and
 * that test, a branch before each slice, is also what keeps them apart:
 * without it GCC's scheduler gathered the slices of the unrolled loop at
 * the block's start again, and an asm tying each slice to its sub-block
 * kept them apart but left Q4_K's passes as slow as before. */
#define PK_SPREAD_ROWS 4
#define PK_BURST(R) ((R) < PK_SPREAD_ROWS && cpu_pk_prefetch)
#define PK_SPREAD(R) ((R) >= PK_SPREAD_ROWS && cpu_pk_prefetch)

/* Slice part (of parts) of a block's lines, PK_AHEAD bytes on. These two
 * and pk_xrow carry no target attribute: the AVX2 kernels inline them too. */
static PK_INL void pk_prefetch_part(const uint8_t *block, int bytes, int part, int parts)
{
	int per = (bytes / 64 + parts - 1) / parts * 64, end = (part + 1) * per < bytes ? (part + 1) * per : bytes;
	for (int o = part * per; o < end; o += 64)
		_mm_prefetch((const char *)block + PK_AHEAD + o, _MM_HINT_T0);
}

/* All of a block's lines, PK_AHEAD bytes on. */
static PK_INL void pk_prefetch(const uint8_t *block, int bytes)
{
	pk_prefetch_part(block, bytes, 0, 1);
}

static PK_INL const struct cpu_q8k *pk_xrow(const char *x, size_t xs, int r, int64_t b)
{
	return (const struct cpu_q8k *)(x + (size_t)r * xs) + b;
}

/* read through this type, the broadcast folds into the instruction that
 * uses it (an EVEX {1to16} memory operand): no separate broadcast uop */
typedef int32_t pk_i32u __attribute__((aligned(1), may_alias));

static PK_TGT PK_INL __m512i pk_bcast32(const void *p)
{
	return _mm512_set1_epi32(*(const pk_i32u *)p);
}

static PK_TGT PK_INL __m512 pk_f16x16(const uint8_t *p)
{
	return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

/* Q4_K sub-block j of a group's super-block: wq[g] = its elements 4 g ..
 * 4 g + 3 of the 16 rows as bytes; returns the 16 rows' d * scale. The
 * high nibbles are left in place (16 q): their scale carries 1/16. */
static PK_TGT PK_INL __m512 pk_q4_sub(const uint8_t *w, int j, __m512 dv, __m512i wq[8])
{
	const uint8_t *q = w + PK_QS + (j / 2) * 512;
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
		__m512i ql = _mm512_loadu_si512((const void *)(w + P6_Q + p6_ql_line(16 * h + 8 * st + 4 * e + g) * 64));
		__m512i qh = _mm512_loadu_si512((const void *)(w + P6_Q + p6_qh_line(8 * h + 4 * e + g) * 64));
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
