#!/bin/sh
# t-backend-check against the CUDA backend's own code, run on the CPU by
# cudaemu (tests/cudaemu/README): the core refuses the same bad requests
# with the same messages on the CUDA module as on the CPU backend.
: "${top_builddir:=.}"
unset SKIPPER_CUDAEMU_DEVICES SKIPPER_CUDAEMU_DRIVER SKIPPER_CUDAEMU_MEM_MIB SKIPPER_TEST_CUDA_STANDIN
SKIPPER_PLUGIN_PATH="$top_builddir/tests/cudaemu/.libs:$top_builddir/.libs" SKIPPER_TEST_REQUIRE_CUDA=1 \
	exec "$top_builddir/tests/t-backend-check" "$@"
