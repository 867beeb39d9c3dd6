/* Weight conversion on upload: raw GGUF rows (F32, F16, BF16 and every
 * block type the CPU reads: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
 * Q6_K) copied to the device as they are, turned into BF16 here, so the
 * host never holds a converted copy. Each value is the F32 the CPU's
 * skipper_dequant_row gives (GGML's formulas and operation order; the _rn
 * intrinsics keep nvcc from fusing a multiply and an add), rounded to BF16
 * once. Also the small helpers: F32/F16/BF16 (and a Q8_0 K/V row) to F32,
 * F32 to BF16. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_device.cuh"
#include "cuda_kernels.h"
#include "backend/backend_abi.h"

__device__ static float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ static float mul_add(float a, float b, float c) { return __fadd_rn(__fmul_rn(a, b), c); }

/* Elements and bytes of one block (one thread's work); 1 element for the
 * float types, 0 for a type this file cannot convert. */
__host__ __device__ static int block_elems(int type)
{
	switch (type) {
	case SKIPPER_F32: case SKIPPER_F16: case SKIPPER_BF16:
		return 1;
	case SKIPPER_Q8_0: case SKIPPER_Q4_0: case SKIPPER_Q4_1: case SKIPPER_Q5_0: case SKIPPER_Q5_1:
		return 32;
	case SKIPPER_Q4_K: case SKIPPER_Q5_K: case SKIPPER_Q6_K:
		return 256;
	}
	return 0;
}

extern "C" int cuda_dequant_block(int type)
{
	return block_elems(type);
}

__device__ static int block_bytes(int type)
{
	switch (type) {
	case SKIPPER_F32: return 4;
	case SKIPPER_Q8_0: return 34;
	case SKIPPER_Q4_0: return 18;
	case SKIPPER_Q4_1: return 20;
	case SKIPPER_Q5_0: return 22;
	case SKIPPER_Q5_1: return 24;
	case SKIPPER_Q4_K: return 144;
	case SKIPPER_Q5_K: return 176;
	case SKIPPER_Q6_K: return 210;
	}
	return 2;
}

/* Q5_0 / Q5_1: element i < 16 is byte i's low nibble, 16 + i its high
 * one; the fifth bits are bits i and 16 + i of the little-endian qh. */
__device__ static void q5_block(const unsigned char *b, int has_min, __nv_bfloat16 *out)
{
	float d = ld_f16(b), m = has_min ? ld_f16(b + 2) : 0.0f;
	const unsigned char *qh = b + (has_min ? 4 : 2), *qs = qh + 4;
	unsigned h = qh[0] | qh[1] << 8 | qh[2] << 16 | (unsigned)qh[3] << 24;
	for (int j = 0; j < 16; j++) {
		int lo = (qs[j] & 15) | (int)((h >> j) & 1) << 4, hi = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1) << 4;
		out[j] = __float2bfloat16_rn(has_min ? mul_add((float)lo, d, m) : mul((float)(lo - 16), d));
		out[16 + j] = __float2bfloat16_rn(has_min ? mul_add((float)hi, d, m) : mul((float)(hi - 16), d));
	}
}

/* Scale and min of sub-block j of a Q4_K / Q5_K super-block: 6 bits each,
 * packed in 12 bytes (GGML's layout). */
__device__ static void k_scale_min(int j, const unsigned char *q, int *sc, int *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 15) | (q[j - 4] >> 6) << 4;
		*m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
	}
}

/* Q4_K / Q5_K: 8 sub-blocks of 32, x = (d sc) q - (dmin m); qs[32 c + l]
 * holds element 64 c + l (low nibble) and 64 c + 32 + l (high); Q5_K's
 * fifth bit of sub-block j is bit j of qh[l]. */
__device__ static void q45k_block(const unsigned char *b, int five, __nv_bfloat16 *out)
{
	float d = ld_f16(b), dmin = ld_f16(b + 2);
	const unsigned char *scales = b + 4, *qh = b + 16, *qs = five ? qh + 32 : qh;
	for (int j = 0; j < 8; j++) {
		int sc, m;
		k_scale_min(j, scales, &sc, &m);
		float d1 = mul(d, (float)sc), m1 = mul(dmin, (float)m);
		const unsigned char *q = qs + 32 * (j / 2);
		for (int l = 0; l < 32; l++) {
			int v = j & 1 ? q[l] >> 4 : q[l] & 15;
			if (five)
				v |= ((qh[l] >> j) & 1) << 4;
			out[32 * j + l] = __float2bfloat16_rn(__fsub_rn(mul(d1, (float)v), m1));
		}
	}
}

/* Q6_K: 16 sub-blocks of 16, x = d sc (q - 32); per half h (128 elements)
 * element 32 k + l has its low nibble in ql[l + 32 (k & 1)] (high nibble
 * for k >= 2) and its top two bits at bit 2k of qh[l]. */
__device__ static void q6k_block(const unsigned char *b, __nv_bfloat16 *out)
{
	const unsigned char *ql = b, *qh = b + 128;
	const signed char *sc = (const signed char *)(b + 192);
	float d = ld_f16(b + 208);
	for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8, out += 128)
		for (int k = 0; k < 4; k++)
			for (int l = 0; l < 32; l++) {
				int lo = k >= 2 ? ql[l + 32 * (k & 1)] >> 4 : ql[l + 32 * (k & 1)] & 15;
				int q = (lo | ((qh[l] >> (2 * k)) & 3) << 4) - 32;
				out[32 * k + l] = __float2bfloat16_rn(mul(mul(d, (float)sc[2 * k + l / 16]), (float)q));
			}
}

/* One thread per block (quantized) or per element (float types). */
__global__ static void k_to_bf16(int type, const unsigned char *src, size_t row_bytes, int64_t ne0,
                                 int64_t rows, __nv_bfloat16 *dst)
{
	int64_t per_row = ne0 / block_elems(type);
	int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= per_row * rows)
		return;
	int64_t r = t / per_row, c = t % per_row;
	const unsigned char *b = src + (size_t)r * row_bytes + (size_t)c * block_bytes(type);
	__nv_bfloat16 *out = dst + r * ne0 + c * block_elems(type);
	switch (type) {
	case SKIPPER_F32: {
		float f;
		memcpy(&f, b, 4);
		out[0] = __float2bfloat16_rn(f);
		break;
	}
	case SKIPPER_F16:
		out[0] = __float2bfloat16_rn(ld_f16(b));
		break;
	case SKIPPER_BF16:
		out[0] = __ushort_as_bfloat16((unsigned short)(b[0] | (b[1] << 8)));
		break;
	case SKIPPER_Q8_0: { /* d, 32 x int8: x = q * d */
		float d = ld_f16(b);
		for (int i = 0; i < 32; i++)
			out[i] = __float2bfloat16_rn(mul((float)(signed char)b[2 + i], d));
		break;
	}
	case SKIPPER_Q4_0: { /* d, 16 bytes: low nibbles = 0..15, high = 16..31; x = (q - 8) * d */
		float d = ld_f16(b);
		for (int i = 0; i < 16; i++) {
			out[i] = __float2bfloat16_rn(mul((float)((b[2 + i] & 15) - 8), d));
			out[16 + i] = __float2bfloat16_rn(mul((float)((b[2 + i] >> 4) - 8), d));
		}
		break;
	}
	case SKIPPER_Q4_1: { /* d, m, 16 bytes: x = q * d + m */
		float d = ld_f16(b), m = ld_f16(b + 2);
		for (int i = 0; i < 16; i++) {
			out[i] = __float2bfloat16_rn(mul_add((float)(b[4 + i] & 15), d, m));
			out[16 + i] = __float2bfloat16_rn(mul_add((float)(b[4 + i] >> 4), d, m));
		}
		break;
	}
	case SKIPPER_Q5_0: case SKIPPER_Q5_1:
		q5_block(b, type == SKIPPER_Q5_1, out);
		break;
	case SKIPPER_Q4_K: case SKIPPER_Q5_K:
		q45k_block(b, type == SKIPPER_Q5_K, out);
		break;
	case SKIPPER_Q6_K:
		q6k_block(b, out);
		break;
	}
}

extern "C" cudaError_t cuda_to_bf16(int type, const void *src, size_t row_bytes, int64_t ne0,
                                    int64_t rows, uint16_t *dst, cudaStream_t st)
{
	int64_t n = block_elems(type) ? ne0 / block_elems(type) * rows : 0;
	if (n <= 0)
		return cudaSuccess;
	k_to_bf16<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(type, (const unsigned char *)src, row_bytes,
	                                                       ne0, rows, (__nv_bfloat16 *)dst);
	return cudaGetLastError();
}

__global__ static void k_to_f32(int type, const unsigned char *src, int64_t n, float *dst)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	if (type == SKIPPER_F32) {
		memcpy(&dst[i], src + i * 4, 4);
	} else if (type == SKIPPER_F16) {
		dst[i] = ld_f16(src + i * 2);
	} else if (type == SKIPPER_Q8_0) {
		dst[i] = q8_elem(src + i / 32 * 34, (int)(i % 32));
	} else {
		unsigned short u = (unsigned short)(src[i * 2] | (src[i * 2 + 1] << 8));
		dst[i] = __bfloat162float(__ushort_as_bfloat16(u));
	}
}

extern "C" cudaError_t cuda_to_f32(int type, const void *src, int64_t n, float *dst, cudaStream_t st)
{
	if (n <= 0)
		return cudaSuccess;
	k_to_f32<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(type, (const unsigned char *)src, n, dst);
	return cudaGetLastError();
}

__global__ static void k_f32_to_bf16(const float *src, int64_t rows, int64_t cols, size_t ss,
                                     __nv_bfloat16 *dst, size_t ds)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= rows * cols)
		return;
	int64_t r = i / cols, c = i % cols;
	dst[(size_t)r * ds + c] = __float2bfloat16_rn(src[(size_t)r * ss + c]);
}

extern "C" cudaError_t cuda_f32_to_bf16(const float *src, int64_t rows, int64_t cols, size_t ss,
                                        uint16_t *dst, size_t ds, cudaStream_t st)
{
	int64_t n = rows * cols;
	if (n <= 0)
		return cudaSuccess;
	k_f32_to_bf16<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(src, rows, cols, ss,
	                                                           (__nv_bfloat16 *)dst, ds);
	return cudaGetLastError();
}
