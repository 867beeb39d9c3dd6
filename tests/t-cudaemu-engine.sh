#!/bin/sh
# t-engine on the CUDA backend's own code, run on the CPU by cudaemu
# (tests/cudaemu/README): lossless greedy SSD (chain and tree, CUDA graphs
# on the one-token steps), KV after SSD == AR's, captures, and speculative
# sampling's distribution. SKIPPER_TEST_QUICK trims the grid of masks and
# draft lengths: emulated kernels are ~10^3 times slower than the CPU
# backend (scripts/device-check.sh runs the whole grid on a GPU).
: "${top_builddir:=.}"
unset SKIPPER_CUDAEMU_DEVICES SKIPPER_CUDAEMU_DRIVER SKIPPER_CUDAEMU_MEM_MIB SKIPPER_TEST_CUDA_STANDIN
SKIPPER_PLUGIN_PATH="$top_builddir/tests/cudaemu/.libs:$top_builddir/.libs" SKIPPER_TEST_REQUIRE_CUDA=1 \
	SKIPPER_TEST_BACKEND=cuda SKIPPER_TEST_QUICK=1 exec "$top_builddir/tests/t-engine" "$@"
