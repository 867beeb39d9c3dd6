/* The CPU K/V cache's row layouts ([model] kv_type, enum cpu_kv_type):
 * what attention writes into a row and what reads it back. */
#include "build-config.h"

#include <math.h>
#include <string.h>

#include "cpu_backend.h"

/* One q8_0 block as llama.cpp's x86 quantiser makes it: scale = max |x| /
 * 127 kept as f16, values x * 127 / max |x| rounded to nearest (even). */
static void q8_block(const float *x, int8_t *q, uint16_t *scale)
{
	float amax = 0.0f;
	for (int i = 0; i < 32; i++)
		amax = fmaxf(amax, fabsf(x[i]));
	float id = amax != 0.0f ? 127.0f / amax : 0.0f;
	for (int i = 0; i < 32; i++)
		q[i] = (int8_t)rintf(x[i] * id);
	*scale = cpu_f32_to_f16(amax / 127.0f);
}

void cpu_kv_store(const struct cpu_backend *be, const float *x, uint8_t *row)
{
	int d = be->hd;
	if (be->kv_type == CPU_KV_F16) {
		be->K->f32_to_f16(x, (uint16_t *)(void *)row, d);
		return;
	}
	for (int b = 0; b < d / 32; b++) {
		uint16_t h;
		q8_block(x + 32 * b, (int8_t *)row + 32 * b, &h);
		memcpy(row + d + 2 * b, &h, sizeof h);
	}
}

void cpu_kv_load(const struct cpu_backend *be, const uint8_t *row, float *x)
{
	for (int e = 0; e < be->hd; e++)
		x[e] = cpu_kv_elem(row, be->kv_type, be->hd, e);
}

void cpu_kv_round_query(const struct cpu_backend *be, float *q, int n)
{
	if (be->kv_type == CPU_KV_F16) {
		be->K->round_f16(q, n, 1.0f);
		return;
	}
	for (int b = 0; b + 32 <= n; b += 32) {
		int8_t v[32];
		uint16_t h;
		q8_block(q + b, v, &h);
		float s = cpu_f16_to_f32(h);
		for (int i = 0; i < 32; i++)
			q[b + i] = s * (float)v[i];
	}
}
