#!/bin/sh
# t-engine on the CUDA backend: lossless greedy SSD (chain and tree), KV after
# SSD == AR's, speculative sampling's distribution. Prints
# `1..0 # SKIP no CUDA device` where the CUDA backend cannot be created.
SKIPPER_TEST_BACKEND=cuda exec "${top_builddir:-.}/tests/t-engine" "$@"
