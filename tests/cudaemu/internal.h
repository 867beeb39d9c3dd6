/* cudaemu: what runtime.cc shares with launch.cc and cublas.cc. One
 * emulated device per process (see runtime.cc). */
#ifndef SKIPPER_CUDAEMU_INTERNAL_H
#define SKIPPER_CUDAEMU_INTERNAL_H

#include <cuda_runtime_api.h>

#include <functional>

namespace cudaemu {

typedef std::function<void()> op_t;

/* Record e as the last error; with fmt, also say why on stderr. */
cudaError_t fail(cudaError_t e, const char *fmt = nullptr, ...) __attribute__((format(printf, 2, 3)));
/* A fault the device would not survive: every later call returns e. */
void make_sticky(cudaError_t e);
/* The checks every call makes first: a driver, a device, no sticky error. */
cudaError_t enter();
/* [p, p + n) inside one device allocation / one pinned host allocation */
bool is_device(const void *p, size_t n);
bool is_pinned(const void *p, size_t n);
/* Queue op in stream order (or record it while st is being captured). */
cudaError_t enqueue(cudaStream_t st, op_t op);
double now();

} /* namespace cudaemu */

#endif
