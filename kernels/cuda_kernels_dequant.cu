/* Weight conversion on upload: raw GGUF rows (F32, F16, BF16, Q8_0, Q4_0,
 * Q4_1) copied to the device as they are, turned into BF16 here, so the
 * host never holds a converted copy. Also the small F32/F16/BF16 helpers. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_kernels.h"
#include "backend/backend_abi.h"

/* Block bytes read one byte at a time: 18/20/34-byte blocks leave the f16
 * scale only 2-aligned at best. */
__device__ static float ld_f16(const unsigned char *p)
{
	unsigned short u = (unsigned short)(p[0] | (p[1] << 8));
	return __half2float(__ushort_as_half(u));
}

/* One thread per 32-element block (quantized) or per element (float types). */
__global__ static void k_to_bf16(int type, const unsigned char *src, size_t row_bytes, int64_t ne0,
                                 int64_t rows, __nv_bfloat16 *dst)
{
	int64_t per_row = type == SKIPPER_Q8_0 || type == SKIPPER_Q4_0 || type == SKIPPER_Q4_1 ? ne0 / 32 : ne0;
	int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= per_row * rows)
		return;
	int64_t r = t / per_row, c = t % per_row;
	const unsigned char *row = src + (size_t)r * row_bytes;
	__nv_bfloat16 *out = dst + r * ne0;
	switch (type) {
	case SKIPPER_F32: {
		float f;
		memcpy(&f, row + c * 4, 4);
		out[c] = __float2bfloat16_rn(f);
		break;
	}
	case SKIPPER_F16:
		out[c] = __float2bfloat16_rn(ld_f16(row + c * 2));
		break;
	case SKIPPER_BF16: {
		unsigned short u = (unsigned short)(row[c * 2] | (row[c * 2 + 1] << 8));
		out[c] = __ushort_as_bfloat16(u);
		break;
	}
	case SKIPPER_Q8_0: { /* d (f16), 32 x int8: x = q * d */
		const unsigned char *b = row + c * 34;
		float d = ld_f16(b);
		for (int i = 0; i < 32; i++)
			out[c * 32 + i] = __float2bfloat16_rn((float)(signed char)b[2 + i] * d);
		break;
	}
	case SKIPPER_Q4_0: { /* d, 16 bytes: low nibbles = 0..15, high = 16..31; x = (q - 8) * d */
		const unsigned char *b = row + c * 18;
		float d = ld_f16(b);
		for (int i = 0; i < 16; i++) {
			out[c * 32 + i] = __float2bfloat16_rn((float)((b[2 + i] & 15) - 8) * d);
			out[c * 32 + 16 + i] = __float2bfloat16_rn((float)((b[2 + i] >> 4) - 8) * d);
		}
		break;
	}
	case SKIPPER_Q4_1: { /* d, m, 16 bytes: x = q * d + m */
		const unsigned char *b = row + c * 20;
		float d = ld_f16(b), m = ld_f16(b + 2);
		for (int i = 0; i < 16; i++) {
			out[c * 32 + i] = __float2bfloat16_rn((float)(b[4 + i] & 15) * d + m);
			out[c * 32 + 16 + i] = __float2bfloat16_rn((float)(b[4 + i] >> 4) * d + m);
		}
		break;
	}
	}
}

extern "C" cudaError_t cuda_to_bf16(int type, const void *src, size_t row_bytes, int64_t ne0,
                                    int64_t rows, uint16_t *dst, cudaStream_t st)
{
	int quant = type == SKIPPER_Q8_0 || type == SKIPPER_Q4_0 || type == SKIPPER_Q4_1;
	int64_t n = (quant ? ne0 / 32 : ne0) * rows;
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

__global__ static void k_f16_to_f32(const __half *src, int64_t n, float *dst)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = __half2float(src[i]);
}

extern "C" cudaError_t cuda_f16_to_f32(const uint16_t *src, int64_t n, float *dst, cudaStream_t st)
{
	if (n <= 0)
		return cudaSuccess;
	k_f16_to_f32<<<(unsigned)((n + 255) / 256), 256, 0, st>>>((const __half *)src, n, dst);
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
