/* cudaemu: the CUDA C++ the kernels (kernels/NAME.cu) use, for g++.
 *
 * The CUDA backend's kernels are compiled a second time, by g++, into a
 * test copy of the backend module that runs on the CPU (tests/cudaemu/
 * README). This header is force-included (-include) into those sources after
 * launch.pl has turned every `k<<<grid, block, shm, stream>>>(args)` into
 * `cudaemu_launch("k", {grid, block, shm, stream}, k, args)`.
 *
 * Each CUDA thread of a block is a fiber (fiber.c); __syncthreads() and the
 * warp shuffles switch between them, so kernels run with their real
 * barrier and warp-exchange semantics, and a barrier or shuffle that not
 * every thread reaches is reported as a deadlock instead of hanging.
 * `__shared__` becomes `static`: blocks run one after the other, and every
 * fiber of a block sees the same variable, as threads see shared memory.
 * All of them live in one section, which launch.cc fills with 0xff bytes
 * (NaN, -1) before each block, so a value read before any thread of the
 * block wrote it is garbage, as on a device, not the previous block's. */
#ifndef SKIPPER_CUDAEMU_H
#define SKIPPER_CUDAEMU_H

#include <math.h> /* nvcc provides the math functions without an include */
#include <stdint.h>
#include <string.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
#include <array>
#include <functional>
#include <tuple>
#include <type_traits>
#endif

#include "fiber.h"

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __forceinline__
#define __global__
#define __device__
#define __host__
#define __shared__ static __attribute__((section("cudaemu_shared")))
#define __launch_bounds__(...)
#define __forceinline__ inline

/* the built-in index variables of the running fiber */
#define threadIdx (cudaemu_fiber_self()->thread_idx)
#define blockIdx (cudaemu_fiber_self()->block->block_idx)
#define blockDim (cudaemu_fiber_self()->block->block_dim)
#define gridDim (cudaemu_fiber_self()->block->grid_dim)

#define __syncthreads() cudaemu_syncthreads()

#ifdef __cplusplus

template <class T> static inline T __ldg(const T *p)
{
	return *p;
}

static inline float __uint_as_float(unsigned u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* IEEE operations nvcc never fuses into an FMA; g++ does not fuse them
 * either without -mfma, which the emulated module is not built with. */
static inline float __fmul_rn(float a, float b)
{
	return a * b;
}

static inline float __fadd_rn(float a, float b)
{
	return a + b;
}

static inline float __fsub_rn(float a, float b)
{
	return a - b;
}

/* Lane `lane ^ xor_mask` of this warp's value; all 32 lanes must take part
 * (the only form the kernels use: mask 0xffffffff). */
template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int xor_mask)
{
	static_assert(sizeof(T) == 4, "cudaemu: 32-bit shuffles only");
	uint32_t in, out;
	memcpy(&in, &v, 4);
	out = cudaemu_shfl_xor(mask, in, xor_mask);
	memcpy(&v, &out, 4);
	return v;
}

/* Launch configuration as written between <<< and >>>. */
struct cudaemu_cfg {
	dim3 grid, block;
	size_t shared_bytes;
	cudaStream_t stream;
};

/* Queue one kernel launch (launch.cc): checks the configuration and the
 * pointer arguments, then runs `body` once per thread of every block when
 * the stream reaches it (or records it while the stream is captured). */
void cudaemu_enqueue_kernel(const char *name, const cudaemu_cfg &cfg, const void *const *ptr_args,
                            int n_ptr_args, std::function<void()> body);

/* Marks an argument that is not a pointer (no address is 1). */
#define CUDAEMU_NOT_PTR ((const void *)(uintptr_t)1)

template <class A> static inline const void *cudaemu_ptr_arg(const A &a)
{
	if constexpr (std::is_pointer<A>::value)
		return (const void *)a;
	else
		return CUDAEMU_NOT_PTR;
}

/* The arguments are converted to the kernel's parameter types and copied
 * now, as a launch does; pointer arguments are checked to be device memory. */
template <class... P, class... A>
static inline void cudaemu_launch(const char *name, cudaemu_cfg cfg, void (*kernel)(P...), A &&...args)
{
	static_assert(sizeof...(P) == sizeof...(A), "cudaemu: kernel argument count");
	std::tuple<typename std::decay<P>::type...> copy(static_cast<typename std::decay<P>::type>(args)...);
	std::array<const void *, sizeof...(P)> ptrs = std::apply(
		[](const auto &...a) { return std::array<const void *, sizeof...(P)>{ cudaemu_ptr_arg(a)... }; }, copy);
	cudaemu_enqueue_kernel(name, cfg, ptrs.data(), (int)ptrs.size(),
	                       [kernel, copy]() { std::apply(kernel, copy); });
}

#endif /* __cplusplus */
#endif
