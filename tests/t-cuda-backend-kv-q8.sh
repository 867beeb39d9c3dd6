#!/bin/sh
# t-cuda-backend on the GPU with a q8_0 K/V cache on both backends ([model]
# kv_type): the models with heads of 32 or more. Skips as t-cuda-backend
# does without a CUDA device (t-cudaemu-kv-q8.sh runs it on the emulation).
SKIPPER_TEST_KV=q8_0 exec "${top_builddir:-.}/tests/t-cuda-backend" "$@"
