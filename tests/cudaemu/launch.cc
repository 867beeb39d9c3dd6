/* cudaemu: kernel launches: the configuration and pointer checks, then
 * every block run as fibers (fiber.c) when the stream reaches the launch. */
#include <stdio.h>
#include <stdlib.h>

#include <map>
#include <string>

#include "cudaemu.h"
#include "internal.h"

using namespace cudaemu;

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
	b.block_dim = block;
	b.grid_dim = grid;
	for (unsigned z = 0; z < grid.z; z++)
		for (unsigned y = 0; y < grid.y; y++)
			for (unsigned x = 0; x < grid.x; x++) {
				b.block_idx.x = x;
				b.block_idx.y = y;
				b.block_idx.z = z;
				if (cudaemu_run_block(&b, call_body, &body, why, sizeof why)) {
					fail(cudaErrorLaunchFailure, "kernel %s, block (%u,%u,%u): %s", name.c_str(),
					     x, y, z, why);
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

