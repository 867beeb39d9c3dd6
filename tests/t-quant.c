/* Element types: hand-made blocks dequantise to exact known values, the
 * reference quantisers stay within their error bounds, and the half
 * precision conversions round correctly at every edge (ties, subnormals,
 * overflow, NaN). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "model/quant.h"
#include "tap.h"

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static void test_geometry(void)
{
	is_int(skipper_dtype_block_bytes(SKIPPER_Q4_0), 18, "Q4_0 block is 18 bytes");
	is_int(skipper_dtype_block_bytes(SKIPPER_Q4_1), 20, "Q4_1 block is 20 bytes");
	is_int(skipper_dtype_block_bytes(SKIPPER_Q8_0), 34, "Q8_0 block is 34 bytes");
	is_int(skipper_dtype_block_bytes(SKIPPER_Q5_0), 22, "Q5_0 block is 22 bytes");
	is_int(skipper_dtype_block_bytes(SKIPPER_Q5_1), 24, "Q5_1 block is 24 bytes");
	is_int(skipper_dtype_block_bytes(SKIPPER_Q4_K), 144, "Q4_K super-block is 144 bytes");
	is_int(skipper_dtype_block_bytes(SKIPPER_Q5_K), 176, "Q5_K super-block is 176 bytes");
	is_int(skipper_dtype_block_bytes(SKIPPER_Q6_K), 210, "Q6_K super-block is 210 bytes");
	is_int(skipper_dtype_row_bytes(SKIPPER_Q4_K, 128), 0, "K-quant row not a multiple of 256 -> 0");
	is_int(skipper_dtype_row_bytes(SKIPPER_Q6_K, 512), 420, "Q6_K row of 512");
	is_int(skipper_dtype_row_bytes(SKIPPER_Q4_0, 64), 36, "Q4_0 row of 64");
	is_int(skipper_dtype_row_bytes(SKIPPER_Q4_0, 33), 0, "row not a multiple of 32 -> 0");
	is_int(skipper_dtype_row_bytes(SKIPPER_BF16, 3), 6, "BF16 row of 3");
	is_int(skipper_dtype_row_bytes(10, 256), 0, "unsupported type (Q2_K) -> 0");
	ok(skipper_dtype_name(10) == NULL && !strcmp(skipper_dtype_name(SKIPPER_BF16), "BF16") &&
	   !strcmp(skipper_dtype_name(SKIPPER_Q6_K), "Q6_K"), "names");
}

static void test_fp16(void)
{
	static const struct { uint16_t h; float f; } exact[] = {
		{ 0x0000, 0.0f }, { 0x3c00, 1.0f }, { 0xc000, -2.0f }, { 0x7bff, 65504.0f }, { 0x0400, 0x1p-14f },
		{ 0x0001, 0x1p-24f }, { 0x03ff, 1023 * 0x1p-24f }, { 0x8001, -0x1p-24f }, { 0x3555, 0x1.554p-2f },
	};
	int good = 1;
	for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
		if (skipper_fp16_to_f32(exact[i].h) != exact[i].f || skipper_f32_to_fp16(exact[i].f) != exact[i].h) {
			diag("fp16 %04x <-> %a", exact[i].h, exact[i].f);
			good = 0;
		}
	}
	ok(good, "fp16 exact values both ways (normal, max, subnormal)");
	ok(f2u(skipper_fp16_to_f32(0x8000)) == 0x80000000u, "fp16 -0 keeps its sign");
	ok(isinf(skipper_fp16_to_f32(0x7c00)) && skipper_fp16_to_f32(0xfc00) < 0, "fp16 +-inf");
	ok(isnan(skipper_fp16_to_f32(0x7e00)) && isnan(skipper_fp16_to_f32(0x7c01)), "fp16 NaNs decode to NaN");
	uint16_t n = skipper_f32_to_fp16(NAN);
	ok((n & 0x7c00) == 0x7c00 && (n & 0x3ff), "NaN encodes as a NaN, not infinity");
	ok((skipper_f32_to_fp16(u2f(0x7f800001u)) & 0x3ff) != 0, "signalling NaN with low payload stays NaN");
	is_int(skipper_f32_to_fp16(INFINITY), 0x7c00, "inf");
	is_int(skipper_f32_to_fp16(65520.0f), 0x7c00, "65520 (tie above max) rounds to inf");
	is_int(skipper_f32_to_fp16(65519.0f), 0x7bff, "65519 rounds to 65504");
	is_int(skipper_f32_to_fp16(1e10f), 0x7c00, "overflow -> inf");
	/* ties to even: 1 + 2^-11 lies halfway between 1 and 1+2^-10 */
	is_int(skipper_f32_to_fp16(1.0f + 0x1p-11f), 0x3c00, "tie rounds to even (down)");
	is_int(skipper_f32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02, "tie rounds to even (up)");
	is_int(skipper_f32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01, "above tie rounds up");
	is_int(skipper_f32_to_fp16(0x1p-25f), 0x0000, "2^-25 (tie) rounds to 0");
	is_int(skipper_f32_to_fp16(0x1.8p-25f), 0x0001, "1.5*2^-25 rounds to smallest subnormal");
	is_int(skipper_f32_to_fp16(3 * 0x1p-25f), 0x0002, "3*2^-25 tie rounds to even subnormal 2");
	is_int(skipper_f32_to_fp16(0x1p-30f), 0x0000, "tiny underflows to 0");
	is_int(skipper_f32_to_fp16(-0x1p-30f), 0x8000, "tiny negative underflows to -0");
	is_int(skipper_f32_to_fp16(0x1.ffcp-15f), 0x0400, "largest subnormal+ rounds up into the normals");
	/* round trip of every finite half */
	int rt = 1;
	for (uint32_t h = 0; h < 0x10000; h++)
		if ((h & 0x7c00) != 0x7c00 && skipper_f32_to_fp16(skipper_fp16_to_f32((uint16_t)h)) != h)
			rt = 0;
	ok(rt, "every finite fp16 round-trips through f32");
}

static void test_bf16(void)
{
	is_int(skipper_f32_to_bf16(1.0f), 0x3f80, "bf16 1.0");
	ok(skipper_bf16_to_f32(0xc040) == -3.0f, "bf16 -3.0");
	is_int(skipper_f32_to_bf16(u2f(0x3f808000u)), 0x3f80, "bf16 tie to even (down)");
	is_int(skipper_f32_to_bf16(u2f(0x3f818000u)), 0x3f82, "bf16 tie to even (up)");
	is_int(skipper_f32_to_bf16(u2f(0x3f808001u)), 0x3f81, "bf16 above tie rounds up");
	is_int(skipper_f32_to_bf16(u2f(0x7f7fffffu)), 0x7f80, "FLT_MAX rounds to inf");
	uint16_t n = skipper_f32_to_bf16(u2f(0x7f800001u));
	ok((n & 0x7f80) == 0x7f80 && (n & 0x7f), "bf16 NaN with low payload stays NaN");
	ok(skipper_bf16_to_f32(0x0001) == 0x1p-133f, "bf16 subnormal");
	is_int(skipper_f32_to_bf16(-0.0f), 0x8000, "bf16 -0");
}

static void test_dequant_exact(void)
{
	float out[64];
	/* Q8_0: d = 0.5, q = j - 16 */
	uint8_t q8[34];
	uint16_t d = skipper_f32_to_fp16(0.5f);
	memcpy(q8, &d, 2);
	for (int j = 0; j < 32; j++)
		q8[2 + j] = (uint8_t)(int8_t)(j - 16);
	skipper_dequant_row(SKIPPER_Q8_0, q8, out, 32);
	int good = 1;
	for (int j = 0; j < 32; j++)
		good &= out[j] == 0.5f * (j - 16);
	ok(good, "Q8_0 hand block: x = q*d");

	/* Q4_0: d = 2, byte j = low nibble j&15, high nibble 15-(j&15) */
	uint8_t q40[18];
	d = skipper_f32_to_fp16(2.0f);
	memcpy(q40, &d, 2);
	for (int j = 0; j < 16; j++)
		q40[2 + j] = (uint8_t)(j | (15 - j) << 4);
	skipper_dequant_row(SKIPPER_Q4_0, q40, out, 32);
	good = 1;
	for (int j = 0; j < 16; j++)
		good &= out[j] == 2.0f * (j - 8) && out[16 + j] == 2.0f * (15 - j - 8);
	ok(good, "Q4_0 hand block: low nibbles are elements 0..15, high 16..31, x = (q-8)*d");

	/* Q4_1: d = 0.25, m = -1 */
	uint8_t q41[20];
	uint16_t dm[2] = { skipper_f32_to_fp16(0.25f), skipper_f32_to_fp16(-1.0f) };
	memcpy(q41, dm, 4);
	for (int j = 0; j < 16; j++)
		q41[4 + j] = (uint8_t)((j ^ 5) | j << 4);
	skipper_dequant_row(SKIPPER_Q4_1, q41, out, 32);
	good = 1;
	for (int j = 0; j < 16; j++)
		good &= out[j] == 0.25f * (j ^ 5) - 1.0f && out[16 + j] == 0.25f * j - 1.0f;
	ok(good, "Q4_1 hand block: x = q*d + m");

	uint16_t h[3] = { 0x3c00, 0xc000, 0x0001 };
	skipper_dequant_row(SKIPPER_F16, h, out, 3);
	ok(out[0] == 1.0f && out[1] == -2.0f && out[2] == 0x1p-24f, "F16 row");
	uint16_t b[2] = { 0x3f80, 0x4049 };
	skipper_dequant_row(SKIPPER_BF16, b, out, 2);
	ok(out[0] == 1.0f && out[1] == u2f(0x40490000u), "BF16 row");
	float f[2] = { 1.5f, -7.25f };
	skipper_dequant_row(SKIPPER_F32, f, out, 2);
	ok(out[0] == 1.5f && out[1] == -7.25f, "F32 row");
}

static void test_roundtrip(void)
{
	enum { N = 256 };
	float x[N], y[N];
	uint8_t buf[N * 4];
	uint64_t s = 42;
	for (int i = 0; i < N; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)((int64_t)(s >> 33) - (1ll << 30)) / (float)(1 << 30) * (i < 32 ? 0.01f : 3.0f);
	}
	x[40] = 0; /* a zero inside a block */
	static const struct { int t; float rel; } tc[] = {
		{ SKIPPER_F16, 1.0f / 2048 }, { SKIPPER_BF16, 1.0f / 256 }, { SKIPPER_Q8_0, 0.5f / 127 + 1e-3f },
		{ SKIPPER_Q4_0, 1.0f / 8 + 1e-3f } /* +max can only reach 7/8 when -max sets d */, { SKIPPER_Q4_1, 0.5f / 15 + 2e-3f },
		{ SKIPPER_Q5_0, 1.0f / 16 + 1e-3f }, { SKIPPER_Q5_1, 0.5f / 31 + 2e-3f },
		/* K-quants: half a step plus the rounding of the 6-bit (8-bit) sub-block scale */
		{ SKIPPER_Q4_K, 0.5f / 15 + 0.02f }, { SKIPPER_Q5_K, 0.5f / 31 + 0.02f }, { SKIPPER_Q6_K, 0.5f / 32 + 0.01f },
	};
	for (size_t k = 0; k < sizeof tc / sizeof tc[0]; k++) {
		size_t nb = skipper_quantize_row(tc[k].t, x, buf, N);
		skipper_dequant_row(tc[k].t, buf, y, N);
		float worst = 0;
		/* errors are bounded relative to the range of the block that shares a
		 * scale: 32 elements, or a K-quant's whole super-block (whose small
		 * sub-blocks lose their 6-bit scales to a large neighbour) */
		int bs = skipper_dtype_block(tc[k].t) == SKIPPER_QK_K ? SKIPPER_QK_K : 32;
		for (int b = 0; b < N / bs; b++) {
			float amax = 0, lo = x[b * bs], hi = x[b * bs];
			for (int j = 0; j < bs; j++) {
				float v = x[b * bs + j];
				amax = fmaxf(amax, fabsf(v));
				lo = fminf(lo, v);
				hi = fmaxf(hi, v);
			}
			int has_min = tc[k].t == SKIPPER_Q4_1 || tc[k].t == SKIPPER_Q5_1 || tc[k].t == SKIPPER_Q4_K ||
			              tc[k].t == SKIPPER_Q5_K;
			float scale = has_min ? hi - lo : amax;
			for (int j = 0; j < bs; j++) {
				float e = fabsf(y[b * bs + j] - x[b * bs + j]);
				float bound = tc[k].t == SKIPPER_F16 || tc[k].t == SKIPPER_BF16 ? fabsf(x[b * bs + j]) : scale;
				if (bound > 0)
					worst = fmaxf(worst, e / bound);
			}
		}
		ok(nb == skipper_dtype_row_bytes(tc[k].t, N) && worst <= tc[k].rel, "%s quantize->dequantize: worst relative error %g <= %g",
		   skipper_dtype_name(tc[k].t), worst, tc[k].rel);
	}
	/* the element of largest magnitude survives Q4_0 exactly (up to fp16 d) */
	float z[32] = { 0 };
	z[7] = -4.0f;
	z[20] = 1.0f;
	skipper_quantize_row(SKIPPER_Q4_0, z, buf, 32);
	skipper_dequant_row(SKIPPER_Q4_0, buf, y, 32);
	ok(y[7] == -4.0f && y[20] == 1.0f && y[0] == 0.0f, "Q4_0 keeps the extreme, the zeros and a grid value exact");
	memset(z, 0, sizeof z);
	skipper_quantize_row(SKIPPER_Q8_0, z, buf, 32);
	skipper_dequant_row(SKIPPER_Q8_0, buf, y, 32);
	ok(y[0] == 0 && y[31] == 0, "all-zero block quantises without dividing by zero");
}

int main(void)
{
	test_geometry();
	test_fp16();
	test_bf16();
	test_dequant_exact();
	test_roundtrip();
	return tap_done();
}
