#!/bin/sh
# t-backend again with a q8_0 K/V cache ([model] kv_type): batch == one
# token at a time bit for bit, trees, skip masks, kv_move, threads, every
# weight type (tests/t-kernels checks the q8_0 attention kernels of every
# instruction set).
SKIPPER_TEST_KV=q8_0 exec "${top_builddir:-.}/tests/t-backend" "$@"
