#!/bin/sh
# t-cudaemu-backend.sh with every kernel's blocks, and the threads of each
# block, run in descending order (SKIPPER_CUDAEMU_ORDER, tests/cudaemu/
# README): two threads or blocks that race (no barrier between one's write
# and the other's access) get the intended result in at most one of the two
# orders, so a race the ascending order happens to resolve fails here.
SKIPPER_CUDAEMU_ORDER=reverse exec "${top_srcdir:-.}/tests/t-cudaemu-backend.sh" "$@"
