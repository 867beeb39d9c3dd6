#!/bin/sh
# t-cuda-backend with a q8_0 K/V cache on both backends ([model] kv_type),
# against the CUDA backend's own code run on the CPU by cudaemu
# (tests/cudaemu/README): the models with heads of 32 or more, parity with
# the CPU's q8_0 cache, bitwise batch invariance, trees, KV moves.
: "${top_builddir:=.}"
unset SKIPPER_CUDAEMU_DEVICES SKIPPER_CUDAEMU_DRIVER SKIPPER_CUDAEMU_MEM_MIB SKIPPER_TEST_CUDA_STANDIN
SKIPPER_PLUGIN_PATH="$top_builddir/tests/cudaemu/.libs:$top_builddir/.libs" SKIPPER_TEST_REQUIRE_CUDA=1 \
	SKIPPER_TEST_KV=q8_0 exec "$top_builddir/tests/t-cuda-backend" "$@"
