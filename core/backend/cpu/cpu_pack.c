/* Writing weights in the packed layouts of cpu_packed.h: the one layout
 * that the AVX-512 and AVX2 tables both run (each table says which kinds
 * it runs from it). Plain C: it runs once, at load. */
#include "build-config.h"

#ifdef SKIPPER_X86_64

#include <string.h>

#include "cpu_packed.h"
#include "model/quant.h"

/* elements per packed block of a kind, and its bytes for 16 rows */
static int pack_span(int kind, size_t *bytes)
{
	switch (kind) {
	case CPU_W_Q4_K: *bytes = PK_BLOCK; return 256;
	case CPU_W_Q6_K: *bytes = P6_BLOCK; return 256;
	case CPU_W_Q8_0: *bytes = P8_BLOCK; return 64;
	case CPU_W_Q5_0: *bytes = P5_BLOCK; return 64;
	case CPU_W_Q4_1: *bytes = P41_BLOCK; return 64;
	default: *bytes = 0; return 0;
	}
}

size_t cpu_pack_size(int kind, int64_t k, int nc)
{
	size_t bytes;
	int span = pack_span(kind, &bytes);
	if (!span || k % span || nc % CPU_PACK_ROWS)
		return 0;
	return (size_t)(nc / CPU_PACK_ROWS) * (size_t)(k / span) * bytes;
}

static void pack_q4_K(const struct skipper_block_q4_K *blk, int c, uint8_t *o)
{
	for (int p = 0; p < 4; p++)
		for (int g = 0; g < 8; g++)
			memcpy(o + PK_QS + ((p * 8 + g) * 16 + c) * 4, blk->qs + 32 * p + 4 * g, 4);
	for (int j = 0; j < 8; j++)
		skipper_k_scale_min(j, blk->scales, o + PK_SC + 16 * j + c, o + PK_MIN + 16 * j + c);
	memcpy(o + PK_D + 2 * c, &blk->d, 2);
	memcpy(o + PK_DMIN + 2 * c, &blk->dmin, 2);
}

static void pack_q6_K(const struct skipper_block_q6_K *blk, int c, uint8_t *o)
{
	for (int t = 0; t < 32; t++)
		memcpy(o + P6_Q + (p6_ql_line(t) * 16 + c) * 4, blk->ql + 4 * t, 4);
	for (int u = 0; u < 16; u++)
		memcpy(o + P6_Q + (p6_qh_line(u) * 16 + c) * 4, blk->qh + 4 * u, 4);
	for (int j = 0; j < 16; j++)
		o[P6_SC + 16 * j + c] = (uint8_t)blk->scales[j];
	memcpy(o + P6_D + 2 * c, &blk->d, 2);
	memset(o + P6_D + 32 + 2 * c, 0, 2); /* the padding, never read */
}

/* blocks 2 p and 2 p + 1 of row c */
static void pack_q8_0(const struct skipper_block_q8_0 *blk, int c, uint8_t *o)
{
	for (int h = 0; h < 2; h++) {
		for (int g = 0; g < 8; g++)
			for (int i = 0; i < 4; i++)
				o[P8_Q + 512 * h + (g * 16 + c) * 4 + i] = (uint8_t)(blk[h].qs[4 * g + i] ^ 0x80);
		memcpy(o + P8_D + 32 * h + 2 * c, &blk[h].d, 2);
	}
}

/* blocks 2 p and 2 p + 1 of row c */
static void pack_q4_1(const struct skipper_block_q4_1 *blk, int c, uint8_t *o)
{
	for (int h = 0; h < 2; h++) {
		for (int g = 0; g < 4; g++)
			memcpy(o + P41_Q + 256 * h + (g * 16 + c) * 4, blk[h].qs + 4 * g, 4);
		memcpy(o + P41_D + 32 * h + 2 * c, &blk[h].d, 2);
		memcpy(o + P41_M + 32 * h + 2 * c, &blk[h].m, 2);
	}
}

/* blocks 2 p and 2 p + 1 of row c; row 0 comes first and starts the masks */
static void pack_q5_0(const struct skipper_block_q5_0 *blk, int c, uint8_t *o)
{
	for (int h = 0; h < 2; h++) {
		uint8_t *q = o + P5_Q + P5_HALF * h;
		uint32_t qh;
		memcpy(&qh, blk[h].qh, 4);
		for (int s = 0; s < 8; s++) {
			uint64_t m = 0;
			if (c)
				memcpy(&m, q + 8 * s, 8);
			m |= (uint64_t)((qh >> (4 * s)) & 0xF) << (4 * c);
			memcpy(q + 8 * s, &m, 8);
		}
		for (int g = 0; g < 4; g++)
			memcpy(q + 64 + (g * 16 + c) * 4, blk[h].qs + 4 * g, 4);
		memcpy(o + P5_D + 32 * h + 2 * c, &blk[h].d, 2);
	}
}

void cpu_pack(int kind, int64_t k, const void *w, size_t wrb, int nc, void *out)
{
	size_t bytes;
	int64_t nb = k / pack_span(kind, &bytes);
	size_t bb = kind == CPU_W_Q4_K   ? sizeof(struct skipper_block_q4_K)
	            : kind == CPU_W_Q6_K ? sizeof(struct skipper_block_q6_K)
	            : kind == CPU_W_Q5_0 ? 2 * sizeof(struct skipper_block_q5_0)
	            : kind == CPU_W_Q4_1 ? 2 * sizeof(struct skipper_block_q4_1)
	                                 : 2 * sizeof(struct skipper_block_q8_0);
	uint8_t *o = out;
	for (int c0 = 0; c0 < nc; c0 += CPU_PACK_ROWS)
		for (int64_t b = 0; b < nb; b++, o += bytes)
			for (int c = 0; c < CPU_PACK_ROWS; c++) {
				const void *blk = (const char *)w + (size_t)(c0 + c) * wrb + (size_t)b * bb;
				if (kind == CPU_W_Q4_K)
					pack_q4_K(blk, c, o);
				else if (kind == CPU_W_Q6_K)
					pack_q6_K(blk, c, o);
				else if (kind == CPU_W_Q5_0)
					pack_q5_0(blk, c, o);
				else if (kind == CPU_W_Q4_1)
					pack_q4_1(blk, c, o);
				else
					pack_q8_0(blk, c, o);
			}
}

#endif
