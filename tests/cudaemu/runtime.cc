/* cudaemu: the part of the CUDA runtime API the backend module calls, on
 * the CPU, strict where the real runtime would fail or misbehave later.
 *
 * - Device memory is host memory between guard pages, filled with NaN
 *   bytes (0xff) when allocated: reading memory nothing wrote, or past an
 *   allocation, shows up as NaNs or a crash instead of plausible numbers.
 *   Its total is SKIPPER_CUDAEMU_MEM_MIB (default 1024), so "does not fit"
 *   paths can be tested.
 * - Work is queued in stream order and runs when the host synchronises
 *   (stream, event, cudaMemcpy, cudaFree...), as on a device: a host that
 *   reads a pinned result before synchronising, or rewrites a pinned source
 *   before the copy ran, gets stale data. Pageable sources are staged when
 *   enqueued and copies to pageable memory block, as cudaMemcpyAsync does.
 * - Copies check direction and bounds against the allocations; kernels'
 *   pointer arguments must be device (or pinned) memory.
 * - Stream capture records kernels and copies into a graph instead of
 *   running them; calls that are illegal while capturing (synchronising,
 *   allocating, pageable copies, other streams) fail and invalidate it.
 * - SKIPPER_CUDAEMU_DEVICES (default 1) and SKIPPER_CUDAEMU_DRIVER (default
 *   the runtime's version; 0 = no driver) pose as the machine's setup.
 *
 * All streams share one queue (stricter ordering than a device gives).
 * Kernel launches: launch.cc; cuBLAS: cublas.cc. */
#include <cuda_runtime_api.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cudaemu.h"
#include "internal.h"

namespace cudaemu {

struct alloc {
	size_t size;
	void *map;
	size_t map_size;
};

struct state {
	bool init = false;
	int devices = 1, driver = CUDART_VERSION;
	size_t mem_limit = (size_t)1024 << 20, mem_used = 0;
	cudaError_t last = cudaSuccess, sticky = cudaSuccess;
	std::map<uintptr_t, alloc> dev;      /* device allocations by address */
	std::map<uintptr_t, size_t> pinned;  /* cudaHostAlloc'ed host memory */
	std::deque<op_t> queue;
	cudaStream_t capturing = nullptr;    /* the stream being captured */
	bool capture_broken = false;
	std::vector<op_t> captured;
};

state S;

void setup()
{
	if (S.init)
		return;
	S.init = true;
	const char *v;
	if ((v = getenv("SKIPPER_CUDAEMU_DEVICES")))
		S.devices = atoi(v);
	if ((v = getenv("SKIPPER_CUDAEMU_DRIVER")))
		S.driver = atoi(v);
	if ((v = getenv("SKIPPER_CUDAEMU_MEM_MIB")))
		S.mem_limit = (size_t)atol(v) << 20;
}

cudaError_t fail(cudaError_t e, const char *fmt, ...)
{
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		fputs("cudaemu: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
	S.last = e;
	return e;
}

/* What every call checks first: a driver, and no earlier fatal error. */
cudaError_t enter()
{
	setup();
	if (S.sticky != cudaSuccess)
		return S.sticky;
	if (S.driver <= 0 || S.driver < CUDART_VERSION)
		return fail(cudaErrorInsufficientDriver);
	if (S.devices <= 0)
		return fail(cudaErrorNoDevice);
	return cudaSuccess;
}

#define ENTER()                                  \
	do {                                     \
		cudaError_t e_ = enter();        \
		if (e_ != cudaSuccess)           \
			return e_;               \
	} while (0)

/* A call that is illegal while a capture is under way: breaks it. */
cudaError_t not_while_capturing(const char *what)
{
	if (!S.capturing)
		return cudaSuccess;
	S.capture_broken = true;
	return fail(cudaErrorStreamCaptureUnsupported, "%s while a stream is being captured", what);
}

const alloc *find(const std::map<uintptr_t, alloc> &m, const void *p, uintptr_t *base)
{
	uintptr_t a = (uintptr_t)p;
	auto it = m.upper_bound(a);
	if (it == m.begin())
		return nullptr;
	--it;
	if (a >= it->first + it->second.size)
		return nullptr;
	*base = it->first;
	return &it->second;
}

bool is_device(const void *p, size_t n)
{
	uintptr_t base;
	const alloc *a = find(S.dev, p, &base);
	return a && (uintptr_t)p + n <= base + a->size;
}

bool is_pinned(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;
	auto it = S.pinned.upper_bound(a);
	if (it == S.pinned.begin())
		return false;
	--it;
	return a >= it->first && a + n <= it->first + it->second;
}

/* Run everything queued; a kernel that fails makes the error sticky. */
void flush()
{
	while (!S.queue.empty() && S.sticky == cudaSuccess) {
		op_t op = std::move(S.queue.front());
		S.queue.pop_front();
		op();
	}
	S.queue.clear();
}

cudaError_t enqueue(cudaStream_t st, op_t op)
{
	if (S.capturing && st != S.capturing) {
		S.capture_broken = true;
		return fail(cudaErrorStreamCaptureImplicit,
		            "work on another stream while a stream is being captured");
	}
	if (S.capturing)
		S.captured.push_back(std::move(op));
	else
		S.queue.push_back(std::move(op));
	return cudaSuccess;
}

double now()
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

const char *kind_name(cudaMemcpyKind k)
{
	switch (k) {
	case cudaMemcpyHostToDevice: return "host to device";
	case cudaMemcpyDeviceToHost: return "device to host";
	case cudaMemcpyDeviceToDevice: return "device to device";
	default: return "other";
	}
}

const char *memory_name(const void *p, size_t n)
{
	return is_device(p, n) ? "device memory" : is_device(p, 1) ? "past a device allocation" : "host memory";
}

/* Checks a copy and queues it (sync: runs it before returning). */
cudaError_t copy(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t st, bool sync,
                 const char *api)
{
	ENTER();
	if (n == 0)
		return cudaSuccess;
	bool to_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
	bool from_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
	if (kind == cudaMemcpyHostToHost || kind == cudaMemcpyDefault)
		return fail(cudaErrorInvalidValue, "%s: kind %d is not emulated", api, (int)kind);
	if (!dst || !src || is_device(dst, 1) != to_dev || is_device(src, 1) != from_dev ||
	    (to_dev && !is_device(dst, n)) || (from_dev && !is_device(src, n)))
		return fail(cudaErrorInvalidValue, "%s %s of %zu bytes: destination %p is %s, source %p is %s",
		            api, kind_name(kind), n, dst, memory_name(dst, n), src, memory_name(src, n));
	bool host_pageable = (!to_dev && !is_pinned(dst, n)) || (!from_dev && !is_pinned(src, n));
	if (sync || (S.capturing && host_pageable)) {
		cudaError_t e = not_while_capturing(sync ? api : "a copy from or to pageable memory");
		if (e != cudaSuccess)
			return e;
	}
	if (sync || (kind == cudaMemcpyDeviceToHost && host_pageable)) {
		/* blocking: everything before it has run, then the copy */
		if (enqueue(st, [=]() { memcpy(dst, src, n); }) != cudaSuccess)
			return S.last;
		flush();
		return S.sticky;
	}
	if (kind == cudaMemcpyHostToDevice && host_pageable) {
		/* staged now: the caller may reuse its buffer on return */
		auto staged = std::make_shared<std::vector<unsigned char>>((const unsigned char *)src,
		                                                            (const unsigned char *)src + n);
		return enqueue(st, [=]() { memcpy(dst, staged->data(), n); });
	}
	return enqueue(st, [=]() { memcpy(dst, src, n); });
}

cudaError_t set(void *p, int value, size_t n, cudaStream_t st, bool sync, const char *api)
{
	ENTER();
	if (n && !is_device(p, n))
		return fail(cudaErrorInvalidValue, "%s of %zu bytes at %p: not device memory", api, n, p);
	if (sync) {
		cudaError_t e = not_while_capturing(api);
		if (e != cudaSuccess)
			return e;
	}
	cudaError_t e = enqueue(st, [=]() { memset(p, value, n); });
	if (e == cudaSuccess && sync)
		flush();
	return e != cudaSuccess ? e : S.sticky;
}

void make_sticky(cudaError_t e)
{
	S.sticky = e;
}

} /* namespace cudaemu */

using namespace cudaemu;

/* ------------------------------------------------------------- streams */

struct CUstream_st {
	int flags;
};

struct CUevent_st {
	double t;
	bool recorded;
};

struct CUgraph_st {
	std::vector<op_t> nodes;
};

struct CUgraphExec_st {
	std::vector<op_t> nodes;
};

/* ------------------------------------------------------- the runtime API */

cudaError_t cudaGetDeviceCount(int *count)
{
	*count = 0;
	setup();
	if (S.driver <= 0 || S.driver < CUDART_VERSION)
		return fail(cudaErrorInsufficientDriver);
	if (S.devices <= 0)
		return fail(cudaErrorNoDevice);
	*count = S.devices;
	return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
	setup();
	*v = S.driver > 0 ? S.driver : 0;
	return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
	*v = CUDART_VERSION;
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
	ENTER();
	if (d < 0 || d >= S.devices)
		return fail(cudaErrorInvalidDevice);
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d)
{
	ENTER();
	if (d < 0 || d >= S.devices)
		return fail(cudaErrorInvalidDevice);
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "cudaemu (CUDA on the CPU, for tests)");
	p->major = 9;
	p->minor = 0;
	p->totalGlobalMem = S.mem_limit;
	p->multiProcessorCount = 1;
	p->warpSize = 32;
	p->maxThreadsPerBlock = CUDAEMU_MAX_THREADS;
	return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
	ENTER();
	*free_b = S.mem_limit - S.mem_used;
	*total = S.mem_limit;
	return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = S.sticky != cudaSuccess ? S.sticky : S.last;
	S.last = cudaSuccess;
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	return S.sticky != cudaSuccess ? S.sticky : S.last;
}

const char *cudaGetErrorString(cudaError_t e)
{
	switch (e) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
	case cudaErrorNoDevice: return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice: return "invalid device ordinal";
	case cudaErrorInvalidConfiguration: return "invalid configuration argument";
	case cudaErrorNotSupported: return "operation not supported";
	case cudaErrorLaunchFailure: return "unspecified launch failure";
	case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
	case cudaErrorNotReady: return "device not ready";
	case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
	case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
	case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
	case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
	default: return "unrecognized error code";
	}
}

cudaError_t cudaMalloc(void **p, size_t n)
{
	ENTER();
	*p = nullptr;
	cudaError_t e = not_while_capturing("cudaMalloc");
	if (e != cudaSuccess)
		return e;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), sz = (n + 255) / 256 * 256;
	if (sz == 0 || S.mem_used + sz > S.mem_limit)
		return fail(cudaErrorMemoryAllocation);
	/* [guard][... data ends at the page end][guard]; 256-byte aligned start */
	size_t body = (sz + page - 1) / page * page, total = body + 2 * page;
	void *m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return fail(cudaErrorMemoryAllocation);
	mprotect(m, page, PROT_NONE);
	mprotect((char *)m + page + body, page, PROT_NONE);
	char *data = (char *)m + page + body - sz;
	memset(data, 0xff, sz);
	S.dev[(uintptr_t)data] = alloc{ sz, m, total };
	S.mem_used += sz;
	*p = data;
	return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
	ENTER();
	if (!p)
		return cudaSuccess;
	cudaError_t e = not_while_capturing("cudaFree");
	if (e != cudaSuccess)
		return e;
	auto it = S.dev.find((uintptr_t)p);
	if (it == S.dev.end())
		return fail(cudaErrorInvalidValue, "cudaFree(%p): not a device allocation", p);
	flush(); /* cudaFree waits for the device */
	S.mem_used -= it->second.size;
	munmap(it->second.map, it->second.map_size);
	S.dev.erase(it);
	return S.sticky;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
	ENTER();
	*p = malloc(n ? n : 1);
	if (!*p)
		return fail(cudaErrorMemoryAllocation);
	memset(*p, 0xff, n);
	S.pinned[(uintptr_t)*p] = n ? n : 1;
	return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
	ENTER();
	if (!p)
		return cudaSuccess;
	auto it = S.pinned.find((uintptr_t)p);
	if (it == S.pinned.end())
		return fail(cudaErrorInvalidValue, "cudaFreeHost(%p): not pinned memory", p);
	flush();
	S.pinned.erase(it);
	free(p);
	return S.sticky;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind)
{
	return copy(dst, src, n, kind, nullptr, true, "cudaMemcpy");
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t st)
{
	return copy(dst, src, n, kind, st, false, "cudaMemcpyAsync");
}

cudaError_t cudaMemset(void *p, int value, size_t n)
{
	return set(p, value, n, nullptr, true, "cudaMemset");
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t st)
{
	return set(p, value, n, st, false, "cudaMemsetAsync");
}

cudaError_t cudaStreamCreate(cudaStream_t *st)
{
	return cudaStreamCreateWithFlags(st, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *st, unsigned int flags)
{
	ENTER();
	*st = new CUstream_st{ (int)flags };
	return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t st)
{
	ENTER();
	flush();
	delete st;
	return S.sticky;
}

/* Wait for everything queued (all streams share the queue). */
static cudaError_t synchronize(const char *api)
{
	ENTER();
	cudaError_t e = not_while_capturing(api);
	if (e != cudaSuccess)
		return e;
	flush();
	return S.sticky;
}

cudaError_t cudaStreamSynchronize(cudaStream_t st)
{
	return synchronize("cudaStreamSynchronize");
}

cudaError_t cudaDeviceSynchronize(void)
{
	return synchronize("cudaDeviceSynchronize");
}

cudaError_t cudaEventCreate(cudaEvent_t *ev)
{
	ENTER();
	*ev = new CUevent_st{ 0.0, false };
	return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
	ENTER();
	flush(); /* a queued record may still point at it */
	delete ev;
	return S.sticky;
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t st)
{
	ENTER();
	if (!ev)
		return fail(cudaErrorInvalidValue);
	return enqueue(st, [ev]() {
		ev->t = now();
		ev->recorded = true;
	});
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
	return synchronize("cudaEventSynchronize");
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	ENTER();
	if (!a || !b || !a->recorded || !b->recorded)
		return fail(cudaErrorNotReady);
	*ms = (float)((b->t - a->t) * 1e3);
	return cudaSuccess;
}

/* ---------------------------------------------------------------- graphs */

cudaError_t cudaStreamBeginCapture(cudaStream_t st, cudaStreamCaptureMode mode)
{
	ENTER();
	if (!st || S.capturing)
		return fail(cudaErrorIllegalState, "cudaStreamBeginCapture on %s",
		            st ? "a second stream" : "the legacy stream");
	S.capturing = st;
	S.capture_broken = false;
	S.captured.clear();
	return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t st, cudaGraph_t *g)
{
	*g = nullptr;
	if (st != S.capturing || !st)
		return fail(cudaErrorIllegalState, "cudaStreamEndCapture without a capture on that stream");
	S.capturing = nullptr;
	if (S.capture_broken) {
		S.captured.clear();
		return fail(cudaErrorStreamCaptureInvalidated);
	}
	*g = new CUgraph_st{ std::move(S.captured) };
	S.captured.clear();
	return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags)
{
	ENTER();
	if (!g)
		return fail(cudaErrorInvalidValue);
	*exec = new CUgraphExec_st{ g->nodes };
	return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
	delete g;
	return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e)
{
	delete e;
	return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t st)
{
	ENTER();
	if (!exec)
		return fail(cudaErrorInvalidValue);
	for (const op_t &op : exec->nodes) {
		cudaError_t e = enqueue(st, op);
		if (e != cudaSuccess)
			return e;
	}
	return cudaSuccess;
}

