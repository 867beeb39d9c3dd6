/* cudaemu: kernel launches: the configuration and pointer checks, then
 * every block run as fibers (fiber.c) when the stream reaches the launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <string>

#include "cudaemu.h"
#include "internal.h"

using namespace cudaemu;

/* the bounds of the kernels' __shared__ variables (cudaemu.h), from the
 * linker; weak: a module without any has no such section */
extern "C" char __start_cudaemu_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_cudaemu_shared[] __attribute__((weak, visibility("hidden")));

namespace {

void call_body(void *p)
{
	(*static_cast<std::function<void()> *>(p))();
}

/* SKIPPER_CUDAEMU_PROFILE=1: seconds and launches per kernel, at exit */
std::map<std::string, std::pair<long, double>> profile;

void print_profile()
{
	for (const auto &k : profile)
		fprintf(stderr, "cudaemu: %-16s %8ld launches %9.3f s\n", k.first.c_str(), k.second.first,
		        k.second.second);
}

/* SKIPPER_CUDAEMU_ORDER=reverse: blocks, and the threads of each, in
 * descending order (fiber.h): a race between blocks or between threads of a
 * block shows as a result that differs from the default order's. */
bool reverse_order()
{
	static int rev = -1;
	if (rev < 0) {
		const char *v = getenv("SKIPPER_CUDAEMU_ORDER");
		rev = v && !strcmp(v, "reverse");
	}
	return rev;
}

void run_kernel(const std::string &name, dim3 grid, dim3 block, std::function<void()> &body)
{
	static int prof = -1;
	if (prof < 0) {
		const char *v = getenv("SKIPPER_CUDAEMU_PROFILE");
		if ((prof = v && *v == '1'))
			atexit(print_profile);
	}
	double t0 = prof ? now() : 0.0;
	struct cudaemu_block b;
	char why[256];
	unsigned long long n = (unsigned long long)grid.x * grid.y * grid.z;
	b.block_dim = block;
	b.grid_dim = grid;
	b.reverse = reverse_order();
	size_t shared_bytes = (uintptr_t)__stop_cudaemu_shared - (uintptr_t)__start_cudaemu_shared;
	for (unsigned long long k = 0; k < n; k++) {
		unsigned long long i = b.reverse ? n - 1 - k : k;
		b.block_idx.x = (unsigned)(i % grid.x);
		b.block_idx.y = (unsigned)(i / grid.x % grid.y);
		b.block_idx.z = (unsigned)(i / ((unsigned long long)grid.x * grid.y));
		if (shared_bytes)
			memset(__start_cudaemu_shared, 0xff, shared_bytes);
		if (cudaemu_run_block(&b, call_body, &body, why, sizeof why)) {
			fail(cudaErrorLaunchFailure, "kernel %s, block (%u,%u,%u): %s", name.c_str(),
			     b.block_idx.x, b.block_idx.y, b.block_idx.z, why);
			make_sticky(cudaErrorLaunchFailure);
			return;
		}
	}
	if (prof) {
		profile[name].first++;
		profile[name].second += now() - t0;
	}
}

} /* namespace */

void cudaemu_enqueue_kernel(const char *name, const cudaemu_cfg &cfg, const void *const *ptr_args,
                            int n_ptr_args, std::function<void()> body)
{
	if (enter() != cudaSuccess)
		return;
	unsigned threads = cfg.block.x * cfg.block.y * cfg.block.z;
	if (threads == 0 || threads > CUDAEMU_MAX_THREADS || cfg.block.z > 64 || cfg.grid.x == 0 ||
	    cfg.grid.y == 0 || cfg.grid.z == 0 || cfg.grid.x > 0x7fffffffu || cfg.grid.y > 65535 ||
	    cfg.grid.z > 65535) {
		fail(cudaErrorInvalidConfiguration, "kernel %s: launch of (%u,%u,%u) blocks of (%u,%u,%u) threads",
		     name, cfg.grid.x, cfg.grid.y, cfg.grid.z, cfg.block.x, cfg.block.y, cfg.block.z);
		return;
	}
	if (cfg.shared_bytes) {
		fail(cudaErrorNotSupported, "kernel %s: dynamic shared memory is not emulated", name);
		return;
	}
	for (int i = 0; i < n_ptr_args; i++) {
		const void *p = ptr_args[i];
		if (p && p != CUDAEMU_NOT_PTR && !is_device(p, 1) && !is_pinned(p, 1)) {
			/* the device would fault on it: fatal, as there */
			fail(cudaErrorIllegalAddress, "kernel %s: argument %d (%p) is not device memory", name,
			     i + 1, p);
			make_sticky(cudaErrorIllegalAddress);
			return;
		}
	}
	std::string n(name);
	dim3 grid = cfg.grid, block = cfg.block;
	enqueue(cfg.stream, [n, grid, block, body]() mutable { run_kernel(n, grid, block, body); });
}

