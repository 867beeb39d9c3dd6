/* cudaemu: one block of a kernel run as fibers, one per CUDA thread, on the
 * calling OS thread. The fibers switch only at __syncthreads() and warp
 * shuffles, in a fixed order (fiber.c: next_fiber), so a run is
 * deterministic.
 *
 * Process-wide state: the emulated device is one per process, like the
 * real one, and kernels run one block at a time on the thread that
 * synchronises the stream. */
#ifndef SKIPPER_CUDAEMU_FIBER_H
#define SKIPPER_CUDAEMU_FIBER_H

#include <stddef.h>
#include <stdint.h>

#include <vector_types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDAEMU_MAX_THREADS 1024

struct cudaemu_block {
	uint3 block_idx;
	dim3 block_dim, grid_dim;
	int reverse; /* threads in descending order (see cudaemu_run_block) */
};

struct cudaemu_fiber {
	uint3 thread_idx;
	const struct cudaemu_block *block;
};

/* The fiber running now (only valid inside a kernel body). */
struct cudaemu_fiber *cudaemu_fiber_self(void);

/* Run body(arg) once per thread of block b (block_dim threads, at most
 * CUDAEMU_MAX_THREADS). Returns 0, or -1 with why[cap] filled when the
 * threads deadlock (a barrier or shuffle that some thread never reaches).
 * Warps run greedily, one ahead of the others as far as barriers let it,
 * and within a warp the lanes take turns between shuffles; warps and lanes
 * by ascending index or, with b->reverse, descending. Of two threads that
 * race on memory (no barrier between one's write and the other's read or
 * write), each goes first in one of the two orders. */
int cudaemu_run_block(const struct cudaemu_block *b, void (*body)(void *), void *arg, char *why,
                      size_t cap);

void cudaemu_syncthreads(void);
uint32_t cudaemu_shfl_xor(unsigned mask, uint32_t v, int xor_mask);

#ifdef __cplusplus
}
#endif
#endif
