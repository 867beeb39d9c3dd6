/* Device helpers that more than one kernel file uses (each .cu is its own
 * translation unit, so a __device__ function is shared by inclusion): a
 * block's f16 scale, a Q8_0 element, and the Q8_0 rounding of a warp's 32
 * values that a q8_0 K/V cache stores and its queries meet. */
#ifndef SKIPPER_CUDA_DEVICE_CUH
#define SKIPPER_CUDA_DEVICE_CUH

#include <cuda_fp16.h>

/* An f16 read one byte at a time: 18/20/22/34-byte blocks leave it only
 * 2-aligned at best. */
__device__ static inline float ld_f16(const unsigned char *p)
{
	return __half2float(__ushort_as_half((unsigned short)(p[0] | (p[1] << 8))));
}

/* Element i of the Q8_0 block at b (f16 scale, 32 int8). */
__device__ static inline float q8_elem(const unsigned char *b, int i)
{
	return __fmul_rn((float)(signed char)b[2 + i], ld_f16(b));
}

/* Lane x of a warp's 32-value block as Q8_0, as the CPU backend's q8_0
 * cache rounds it (llama.cpp's x86 quantiser): the int8 value x * 127 /
 * max |x| rounded to nearest even, the block's f16 scale max |x| / 127 in
 * *d. Every lane of the warp calls it. */
__device__ static inline int q8_round(float x, __half *d)
{
	float amax = fabsf(x);
	for (int off = 16; off > 0; off >>= 1)
		amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
	float id = amax != 0.0f ? 127.0f / amax : 0.0f;
	*d = __float2half_rn(amax / 127.0f);
	return (int)rintf(x * id);
}

#endif
