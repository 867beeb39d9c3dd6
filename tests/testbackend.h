/* Which backend a test runs on, and the GPU tests' SKIP rule.
 *
 * SKIPPER_TEST_BACKEND=cpu|cuda picks the kind (default cpu), so one test
 * program serves both backends (t-engine runs again as t-engine-cuda.sh).
 * A CUDA backend that cannot be created with SKIPPER_ERR_UNSUPPORTED (no
 * module, no device, driver too old: backend.h) skips the whole test file
 * with TAP's `1..0 # SKIP no CUDA device`, its reason as a comment; that is
 * how `make check` stays green on machines without a GPU. Where a GPU is
 * known to be there (scripts/device-check.sh), SKIPPER_TEST_REQUIRE_CUDA=1
 * turns that skip into a failure, so a module that did not build or load
 * cannot pass as "skipped". Any other error is a failure too.
 *
 * SKIPPER_TEST_CUDA_STANDIN=cpu makes "CUDA" a second CPU backend: the GPU
 * tests' own logic then runs (and must pass) on any machine, so it is
 * checked by every `make check` rather than only where a GPU is.
 * SKIPPER_TEST_KV=q8_0 gives test_backend_open's backends a q8_0 K/V cache. */
#ifndef SKIPPER_TESTBACKEND_H
#define SKIPPER_TESTBACKEND_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/error.h"
#include "tap.h"

static inline int test_backend_kind(void)
{
	const char *k = getenv("SKIPPER_TEST_BACKEND");
	return k && !strcmp(k, "cuda") ? SKIPPER_BACKEND_CUDA : SKIPPER_BACKEND_CPU;
}

static inline const char *test_backend_name(int kind)
{
	return kind == SKIPPER_BACKEND_CUDA ? "cuda" : "cpu";
}

/* Is "CUDA" a second CPU backend (SKIPPER_TEST_CUDA_STANDIN=cpu)? */
static inline int test_cuda_standin(void)
{
	const char *standin = getenv("SKIPPER_TEST_CUDA_STANDIN");
	return standin && !strcmp(standin, "cpu");
}

static inline int test_kv_type(void)
{
	const char *e = getenv("SKIPPER_TEST_KV");
	return e && !strcmp(e, "q8_0") ? SKIPPER_KV_Q8_0 : SKIPPER_KV_F16;
}

/* Create a backend of the given kind or end the test file: SKIP (CUDA
 * unsupported, nothing reported yet) or Bail out (anything else). */
static inline struct skipper_backend *test_backend_open(const struct skipper_model_view *m, int kind, int n_ctx,
                                                        int n_threads)
{
	if (kind == SKIPPER_BACKEND_CUDA && test_cuda_standin())
		kind = SKIPPER_BACKEND_CPU;
	struct skipper_backend_opts o = { .n_ctx = n_ctx, .n_threads = n_threads, .kind = kind,
	                                  .kv_type = test_kv_type() };
	struct skipper_backend *be = NULL;
	struct skipper_error err = { 0 };
	int rc = skipper_backend_create(m, &o, &be, &err);
	if (rc == 0)
		return be;
	const char *req = getenv("SKIPPER_TEST_REQUIRE_CUDA");
	if (kind == SKIPPER_BACKEND_CUDA && rc == SKIPPER_ERR_UNSUPPORTED && tap_n == 0 && !(req && *req == '1')) {
		printf("# %s\n", err.msg);
		tap_skip_all("no CUDA device");
	}
	printf("# %s backend: %s\n", test_backend_name(kind), err.msg);
	BAIL("cannot create the backend");
}

#endif
