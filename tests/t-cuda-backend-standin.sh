#!/bin/sh
# t-cuda-backend with a second CPU backend standing in for CUDA: checks the
# GPU test's own logic (its comparisons and bookkeeping must all pass when
# both sides are exact) on machines without a GPU.
SKIPPER_TEST_CUDA_STANDIN=cpu exec "${top_builddir:-.}/tests/t-cuda-backend" "$@"
